"""Training configuration: frozen dataclasses, YAML presets and dotted overrides.

A run is described by one :class:`TrainConfig` made of sections, one module each, named as
the section: ``model``, ``data``, ``rollout``, ``reward``, ``algo``, ``optim``, ``warmstart``,
``eval`` (``evaluation.py``) and ``logging``. Every field has a docstring right under it.
``choices`` holds the names a setting may take (so checking a name imports no
implementation) and ``checks`` the one check they all use. Presets live in ``presets/*.yaml``
and list only what differs from the defaults; ``files.load_config("tiny",
["algo.eps_high=0.2"])`` reads a preset or a YAML path and applies command-line overrides,
each ``section.field=value`` with the value parsed as YAML and checked against the field's
type (``files`` also writes configs, documented field by field).

DAPO's four techniques are switched independently in :class:`AlgoConfig`:
``clip_higher`` (decoupled ``eps_low``/``eps_high``), ``dynamic_sampling``,
``token_level_loss``, and overlong shaping (``overlong_filtering`` here,
``RewardConfig.overlong_punishment`` for the soft length penalty). Naive GRPO is all four off
(preset ``grpo``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from verimath.trainer.config.algo import AlgoConfig
from verimath.trainer.config.checks import require as _require
from verimath.trainer.config.data import DataConfig
from verimath.trainer.config.evaluation import EvalConfig
from verimath.trainer.config.logging import LoggingConfig
from verimath.trainer.config.model import ModelConfig
from verimath.trainer.config.optim import OptimConfig
from verimath.trainer.config.reward import RewardConfig
from verimath.trainer.config.rollout import RolloutConfig
from verimath.trainer.config.warmstart import WarmstartConfig

__all__ = ["AlgoConfig", "DataConfig", "EvalConfig", "LoggingConfig", "ModelConfig",
           "OptimConfig", "RewardConfig", "RolloutConfig", "TrainConfig", "WarmstartConfig"]


@dataclass(frozen=True)
class TrainConfig:
    """A complete training run; see each section's fields."""

    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    warmstart: WarmstartConfig = field(default_factory=WarmstartConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)

    def __post_init__(self) -> None:
        r, a = self.rollout, self.reward
        _require(not a.overlong_punishment or a.overlong_buffer <= r.max_new_tokens,
                 f"reward.overlong_buffer ({a.overlong_buffer}) must be <= "
                 f"rollout.max_new_tokens ({r.max_new_tokens}), or set "
                 "reward.overlong_punishment=false")
        _require(self.algo.dynamic_sampling or self.algo.train_prompts <= r.gen_prompts,
                 f"without dynamic sampling a step trains on one generation round: "
                 f"algo.train_prompts ({self.algo.train_prompts}) must be <= "
                 f"rollout.gen_prompts ({r.gen_prompts})")
        reachable = r.gen_prompts * self.algo.max_gen_rounds
        _require(self.algo.train_prompts <= reachable,
                 f"algo.train_prompts ({self.algo.train_prompts}) can never be collected: "
                 f"rollout.gen_prompts ({r.gen_prompts}) x algo.max_gen_rounds "
                 f"({self.algo.max_gen_rounds}) = {reachable} groups at most per step; raise "
                 "one of them or lower algo.train_prompts")

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (tuples as lists), the form written to YAML and checkpoints."""
        return _plain(dataclasses.asdict(self))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
