"""The DAPO trainer: config, rollouts, dynamic sampling, the DAPO loss, and the loop.

Every public name is imported on first use, so ``import verimath.trainer`` stays light
(no torch) and ``verimath score --help`` stays fast::

    from verimath.trainer import load_config, open_state
    from verimath.trainer.loop import train
    config = load_config("tiny", ["optim.steps=20"])
    with open_state(config, "runs/demo") as state:
        summary = train(state)

Read one RL step in ``step.py`` (``rl_step``); the objects it uses are a ``TrainState``
(``state.py``); the loop, evaluation cadence, checkpoints and summary are in ``train.py``.

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
    "group_advantages": "advantages", "informative_groups": "advantages",
    "dapo_policy_loss": "loss", "clipped_surrogate": "loss", "cispo_surrogate": "loss",
    "POLICY_LOSSES": "loss", "register_policy_loss": "loss",
    "aggregate_loss": "aggregation", "AGGREGATIONS": "aggregation",
    "register_aggregation": "aggregation",
    "overlong_filter_mask": "loss", "kl_penalty": "loss",
    "entropy_from_logits": "logprobs", "logprobs_from_logits": "logprobs",
    "token_logprobs": "logprobs", "pack_sequences": "logprobs",
    "collect_informative": "dynamic_sampling", "SamplingStats": "dynamic_sampling",
    "lr_at": "schedule", "make_lr_lambda": "schedule",
    # resources
    "save_checkpoint": "checkpoint", "load_checkpoint": "checkpoint",
    "latest_checkpoint": "checkpoint", "resolve_checkpoint": "checkpoint",
    "MetricsWriter": "metrics", "read_metrics": "metrics", "plot_learning_curve": "metrics",
    "RolloutEngine": "rollout", "HFRolloutEngine": "rollout", "Rollouts": "rollout",
    "SamplingParams": "rollout", "make_engine": "engines",
    "make_char_tokenizer": "tiny", "make_tiny_model": "tiny",
    "TrainState": "state", "open_state": "state", "save_state": "checkpointing",
    "rl_step": "step",
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
