"""Gymnasium math environments. Imports without torch."""

from verimath.envs.problem import Problem, ProblemFileError, read_problems, write_problems

__all__ = ["Problem", "ProblemFileError", "read_problems", "write_problems"]
