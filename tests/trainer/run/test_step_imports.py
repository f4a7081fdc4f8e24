"""Importing the RL step loads the algorithm and the state it reads, nothing of a run's
construction: no checkpoints, warm start, rollout engines, metrics writers or config files."""

import json
import subprocess
import sys

# The step, its math, the state it advances and the types that state holds: the algorithm
# (algo), the trainer's floor (core) and the settings (config), nothing of rollout engines.
STEP_MODULES = {
    "verimath.trainer", "verimath.trainer.run", "verimath.trainer.run.step",
    "verimath.trainer.config",
    *(f"verimath.trainer.config.{m}" for m in (
        "algo", "checks", "choices", "data", "evaluation", "logging", "model", "optim", "reward",
        "rollout", "warmstart")),
    "verimath.trainer.algo",
    *(f"verimath.trainer.algo.{m}" for m in (
        "advantages", "aggregation", "batch", "correction", "dynamic_sampling", "loss",
        "update")),
    "verimath.trainer.core",
    *(f"verimath.trainer.core.{m}" for m in (
        "distributed", "groups", "logprobs", "protocols", "state")),
}
CONSTRUCTION = ("verimath.trainer.checkpoint", "verimath.trainer.model",
                "verimath.trainer.rollout", "verimath.trainer.warmstart",
                "verimath.trainer.run.setup", "verimath.trainer.run.metrics",
                "verimath.trainer.run.loop", "verimath.trainer.evaluation",
                "verimath.trainer.config.files")


def loaded_by(module: str) -> set[str]:
    """The ``verimath.trainer`` modules a fresh interpreter holds after importing ``module``."""
    code = (f"import json, sys; import {module}; "
            "print(json.dumps(sorted(m for m in sys.modules "
            "if m.startswith('verimath.trainer'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return set(json.loads(out.stdout))


def test_the_step_loads_the_algorithm_and_nothing_of_construction():
    loaded = loaded_by("verimath.trainer.run.step")
    construction = sorted(m for m in loaded if m.startswith(CONSTRUCTION))
    assert not construction, f"importing the step loads {construction}"
    assert loaded <= STEP_MODULES, f"new modules behind the step: {sorted(loaded - STEP_MODULES)}"


def test_every_dapo_switch_is_read_where_the_step_docstring_says():
    import inspect

    from verimath.trainer.config import AlgoConfig
    from verimath.trainer.run import setup, step

    doc, body = step.__doc__, inspect.getsource(step.rl_step)
    at_call_site = {"dynamic_sampling": "filter=algo.dynamic_sampling",
                    "overlong_filtering": "enabled=algo.overlong_filtering"}
    resolved = {"clip_higher": AlgoConfig.clip_range, "token_level_loss": AlgoConfig.aggregation}
    for name, use in at_call_site.items():
        assert f"algo.{name}" in doc and use in body, name
    for name, prop in resolved.items():
        assert f"algo.{name}" in doc and f"AlgoConfig.{prop.fget.__name__}" in doc, name
        assert f"self.{name}" in inspect.getsource(prop.fget), name
        assert f"algo.{prop.fget.__name__}" in body, name
    assert "reward.overlong_punishment" in doc and "verimath.trainer.run.setup" in doc
    assert "r.overlong_punishment" in inspect.getsource(setup._episodes)


def test_dynamic_sampling_runs_without_torch():
    code = ("import sys; import verimath.trainer.algo.dynamic_sampling; "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('verimath.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "torch" not in out and "verimath.trainer.run" not in out, out
