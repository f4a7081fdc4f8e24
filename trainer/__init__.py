"""The DAPO trainer: config, rollouts, dynamic sampling, the DAPO loss, and the loop.

Every public name is imported on first use, so ``import verimath.trainer`` stays light
(no torch) and ``verimath score --help`` stays fast::

    from verimath.trainer import load_config, open_state
    from verimath.trainer.run.loop import train
    config = load_config("tiny", ["optim.steps=20"])
    with open_state(config, "runs/demo") as state:
        summary = train(state)

The folders: ``algo/`` the RL math (read one RL step in ``algo/step.py``, ``rl_step``),
``rollout/`` the engines and episode source, ``model/`` the policy and warm start, ``run/``
the run's state (``run/state.py``, ``TrainState``), its construction (``run/setup.py``,
``open_state``) and loop (``run/loop.py``: evaluation cadence, checkpoints, summary),
``checkpoint/``, ``evaluation/``, ``ablation/`` and ``estimate/``; ``train.py`` is the
``train`` command and the torchrun entry, ``cli.py`` the ``verimath`` dispatcher.

Pure pieces (usable in other trainers): ``group_advantages``, ``informative_groups``,
``dapo_policy_loss`` (policy losses by name: ``POLICY_LOSSES``), ``aggregate_loss``
(aggregations by name: ``AGGREGATIONS``), ``overlong_filter_mask``, ``kl_penalty``,
``logprobs_from_logits``, ``entropy_from_logits``, ``collect_informative``, ``lr_at``.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    # config
    "TrainConfig": "config", "load_config": "config_io", "apply_overrides": "config_io",
    "config_from_dict": "config_io", "save_config": "config_io", "preset_names": "config_io",
    # pure math
    "group_advantages": "algo.advantages", "informative_groups": "algo.advantages",
    "dapo_policy_loss": "algo.loss", "clipped_surrogate": "algo.loss", "cispo_surrogate": "algo.loss",
    "POLICY_LOSSES": "algo.loss", "register_policy_loss": "algo.loss",
    "aggregate_loss": "algo.aggregation", "AGGREGATIONS": "algo.aggregation",
    "register_aggregation": "algo.aggregation",
    "overlong_filter_mask": "algo.loss", "kl_penalty": "algo.loss",
    "entropy_from_logits": "algo.logprobs", "logprobs_from_logits": "algo.logprobs",
    "token_logprobs": "algo.logprobs", "pack_sequences": "algo.logprobs",
    "collect_informative": "algo.dynamic_sampling", "SamplingStats": "algo.dynamic_sampling",
    "lr_at": "algo.schedule", "make_lr_lambda": "algo.schedule",
    # resources
    "save_checkpoint": "checkpoint.files", "load_checkpoint": "checkpoint.files",
    "latest_checkpoint": "checkpoint.files", "resolve_checkpoint": "checkpoint.files",
    "MetricsWriter": "run.metrics", "read_metrics": "run.metrics", "plot_learning_curve": "run.metrics",
    "RolloutEngine": "rollout.engine", "HFRolloutEngine": "rollout.engine", "Rollouts": "rollout.engine",
    "SamplingParams": "rollout.engine", "make_engine": "rollout.factory",
    "make_char_tokenizer": "model.tiny", "make_tiny_model": "model.tiny",
    "TrainState": "run.state", "open_state": "run.setup", "save_state": "checkpoint.run_state",
    "rl_step": "algo.step",
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
