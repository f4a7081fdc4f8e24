"""The DAPO trainer: config, rollouts, dynamic sampling, the DAPO loss, and the loop.

Every public name is imported on first use, so ``import verimath.trainer`` stays light
(no torch) and ``verimath score --help`` stays fast::

    from verimath.trainer import load_config, open_state
    from verimath.trainer.run.loop import train
    config = load_config("tiny", ["optim.steps=20"])
    with open_state(config, "runs/demo") as state:
        summary = train(state)

The sub-packages, in layers (each imports only those below it; ``tests/test_import_direction.py``
holds the table)::

    ablation, estimate                     ablations of DAPO's controls; memory and GPU estimates
    run                                    the loop's layer: the RL step (``run/step.py``,
                                           ``rl_step``), construction (``setup.open_state``), the
                                           loop, run-state checkpoints, held-out evaluation, the
                                           ``train`` command (``run/cli.py``)
    warmstart                              the supervised warm start before RL
    evaluation                             ``verimath eval``: sampling, avg@k / pass@k / maj@k
    rollout, checkpoint                    engines and episode sources; checkpoint files
    model                                  the policy: tiny models, hub ids, LoRA
    algo                                   the RL math: advantages, losses, dynamic sampling
    core                                   distributed communication, process guards, the
                                           log-prob kernel, groups, contracts, ``TrainState``
    config                                 the settings by section, presets, YAML and overrides

``cli.py`` is the ``verimath`` dispatcher and ``worker.py`` the module every torchrun process
runs.

Pure pieces (usable in other trainers): ``group_advantages``, ``informative_groups``,
``dapo_policy_loss`` (policy losses by name: ``POLICY_LOSSES``), ``aggregate_loss``
(aggregations by name: ``AGGREGATIONS``), ``overlong_filter_mask``, ``kl_penalty``,
``logprobs_from_logits``, ``entropy_from_logits``, ``collect_informative``, ``lr_at``.
"""

from __future__ import annotations

import importlib

from verimath.rewards.moved_modules import alias_moved_modules

_EXPORTS = {
    # config
    "TrainConfig": "config", "load_config": "config.files", "apply_overrides": "config.files",
    "config_from_dict": "config.files", "save_config": "config.files",
    "preset_names": "config.files",
    # pure math
    "group_advantages": "algo.advantages", "informative_groups": "algo.advantages",
    "dapo_policy_loss": "algo.loss", "clipped_surrogate": "algo.loss",
    "cispo_surrogate": "algo.loss",
    "POLICY_LOSSES": "algo.loss", "register_policy_loss": "algo.loss",
    "aggregate_loss": "algo.aggregation", "AGGREGATIONS": "algo.aggregation",
    "register_aggregation": "algo.aggregation",
    "overlong_filter_mask": "algo.loss", "kl_penalty": "algo.loss",
    "entropy_from_logits": "core.logprobs", "logprobs_from_logits": "core.logprobs",
    "token_logprobs": "core.logprobs", "pack_sequences": "core.logprobs",
    "collect_informative": "algo.dynamic_sampling", "SamplingStats": "algo.dynamic_sampling",
    "lr_at": "algo.schedule", "make_lr_lambda": "algo.schedule",
    # resources
    "save_checkpoint": "checkpoint.files", "load_checkpoint": "checkpoint.files",
    "latest_checkpoint": "checkpoint.files", "resolve_checkpoint": "checkpoint.files",
    "MetricsWriter": "run.metrics", "read_metrics": "run.metrics",
    "plot_learning_curve": "run.metrics",
    "RolloutEngine": "core.protocols", "HFRolloutEngine": "rollout.hf_engine",
    "Rollouts": "core.protocols", "SamplingParams": "core.protocols",
    "make_engine": "rollout.factory",
    "make_char_tokenizer": "model.tiny", "make_tiny_model": "model.tiny",
    "TrainState": "core.state", "open_state": "run.setup", "save_state": "run.checkpoints",
    "rl_step": "run.step",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'verimath.trainer' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"verimath.trainer.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


# Module paths before the layers (0.1): importable, with a DeprecationWarning.
alias_moved_modules({f"verimath.trainer.{old}": f"verimath.trainer.{new}" for old, new in (
    ("run.distributed", "core.distributed"), ("algo.logprobs", "core.logprobs"),
    ("run.guard", "core.processes"), ("run.state", "core.state"), ("algo.step", "run.step"),
    ("algo.step_metrics", "run.step"), ("checkpoint.run_state", "run.checkpoints"),
    ("evaluation.heldout", "run.heldout"), ("run.signal_watch", "run.learning_signal"),
    ("plot_cli", "run.plot_cli"), ("model.warmstart", "warmstart.supervised"),
    ("model.warmstart_stop", "warmstart.stopping"), ("model.context", "rollout.context_length"),
    ("rollout.engine", "rollout.hf_engine"), ("config_io", "config.files"),
    ("settings", "config"), ("settings.algo", "config.algo"), ("settings.checks", "config.checks"),
    ("settings.model", "config.model"), ("settings.optim", "config.optim"),
    ("settings.rollout", "config.rollout"), ("settings.run", "config.evaluation"),
    ("configs", "config"))}, removed_in="0.3")
