"""Gymnasium math environments. Imports without torch.

Public API:
    Problem, ProblemFileError, read_problems, write_problems   the problem record and files
    FAMILIES, generate, problem_stream, make_mixed             procedural generators
    worked_solution                                            a problem's worked solution
    flawed_solution, FLAWS                                     one with a flaw (Chain)
    format_prompt, TEMPLATES                                   prompt templates
    MathEnv, Response, RewardSpec                              the environment
    make_group_env, GroupVectorEnv                             P x G episode groups
    AdaptiveLevel, SkipSolved                                  curriculum switches' settings
    check_math_env, MathEnvCheckError                          contract checks
    ENV_IDS                                                    registered Gymnasium ids
Importing this package registers ``verimath/<Family>-v0`` and ``verimath/Dataset-v0``.
"""

from verimath.envs.checks import MathEnvCheckError, check_math_env
from verimath.envs.curriculum import AdaptiveLevel, SkipSolved
from verimath.envs.generators import FAMILIES, generate, make_mixed, problem_stream
from verimath.envs.generators.chain import FLAWS, flawed_solution, worked_solution
from verimath.envs.group import GroupVectorEnv, make_group_env
from verimath.envs.math_env import MathEnv
from verimath.envs.problem import Problem, ProblemFileError, read_problems, write_problems
from verimath.envs.registration import ENV_IDS, register_envs
from verimath.envs.scoring import Response, RewardSpec
from verimath.envs.templates import TEMPLATES, format_prompt
from verimath.rewards.moved_modules import alias_moved_modules

register_envs()

__all__ = [
    "AdaptiveLevel",
    "ENV_IDS",
    "FAMILIES",
    "GroupVectorEnv",
    "MathEnv",
    "MathEnvCheckError",
    "Problem",
    "ProblemFileError",
    "Response",
    "RewardSpec",
    "FLAWS",
    "SkipSolved",
    "TEMPLATES",
    "check_math_env",
    "flawed_solution",
    "format_prompt",
    "generate",
    "make_group_env",
    "make_mixed",
    "problem_stream",
    "read_problems",
    "worked_solution",
    "write_problems",
]

# Module paths before envs/generators/ (0.1): importable, with a DeprecationWarning.
alias_moved_modules({"verimath.envs.curriculum_level": "verimath.envs.curriculum", **{
    f"verimath.envs.gen_{name}": f"verimath.envs.generators.{name}"
    for name in ("common", "arith", "algebra", "number", "chain")}}, removed_in="0.3")
