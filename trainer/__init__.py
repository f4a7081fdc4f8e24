"""The DAPO trainer: config, rollouts, dynamic sampling, the DAPO loss, and the loop.

Every public name is imported on first use, so ``import verimath.trainer`` stays light
(no torch) and ``verimath score --help`` stays fast::

    from verimath.trainer import load_config, Run, train
    config = load_config("tiny", ["optim.steps=20"])
    with Run(config, run_dir="runs/demo") as run:
        summary = train(run)

Pure pieces (usable in other trainers): ``group_advantages``, ``informative_groups``,
``dapo_policy_loss``, ``aggregate_loss``, ``overlong_filter_mask``, ``kl_penalty``,
``entropy_from_logits``, ``collect_informative``, ``lr_at``.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    # config
    "TrainConfig": "config", "load_config": "config_io", "apply_overrides": "config_io",
    "config_from_dict": "config_io", "save_config": "config_io", "preset_names": "config_io",
    # pure math
    "group_advantages": "advantages", "informative_groups": "advantages",
    "dapo_policy_loss": "loss", "aggregate_loss": "loss", "clipped_surrogate": "loss",
    "overlong_filter_mask": "loss", "kl_penalty": "loss", "entropy_from_logits": "loss",
    "collect_informative": "sampling", "SamplingStats": "sampling",
    "lr_at": "schedule", "make_lr_lambda": "schedule",
    # resources
    "save_checkpoint": "checkpoint", "load_checkpoint": "checkpoint",
    "latest_checkpoint": "checkpoint", "resolve_checkpoint": "checkpoint",
    "MetricsWriter": "metrics", "read_metrics": "metrics", "plot_learning_curve": "metrics",
    "RolloutEngine": "rollout", "HFRolloutEngine": "rollout", "Rollouts": "rollout",
    "SamplingParams": "rollout", "token_logprobs": "rollout", "pack_sequences": "rollout",
    "make_char_tokenizer": "tiny", "make_tiny_model": "tiny",
    "Run": "run", "train": "loop",
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
