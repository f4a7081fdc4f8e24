"""The ``optim`` section: the RL optimizer, its schedule and the run's length."""

from __future__ import annotations

from dataclasses import dataclass

from verimath.trainer.config.checks import require as _require
from verimath.trainer.config.choices import SCHEDULES


@dataclass(frozen=True)
class OptimConfig:
    steps: int = 100
    """RL steps (one step = rollouts, then ``ppo_epochs`` of updates); with ``token_budget``,
    the most steps the run may take."""
    token_budget: int = 0
    """Generated tokens the run may spend (discarded groups included; 0: no budget). The run
    ends after the step that reaches it, and the decaying schedules decay over the budget
    (the fraction generated so far) instead of over ``steps``: runs that spend tokens at
    different rates (dynamic sampling on or off) then finish their schedules at the same
    generation cost."""
    lr: float = 1e-6
    """Peak AdamW learning rate."""
    warmup_steps: int = 20
    """Linear warm-up, in optimizer updates."""
    schedule: str = "constant"
    """After warm-up: ``constant``, ``linear`` or ``cosine`` decay to 0 at the last update."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    betas: tuple[float, float] = (0.9, 0.999)
    """AdamW betas."""
    grad_clip: float = 1.0
    """Max global gradient norm; 0 disables clipping."""
    seed: int = 0
    """Seed of torch, sampling and the problem streams."""
    max_skipped_updates: int = 5
    """An update whose gradient is NaN or inf is skipped (and logged as ``optim/skipped``);
    this many in a row stop the run with a checkpoint."""

    def __post_init__(self) -> None:
        _require(self.steps >= 0, f"optim.steps must be >= 0, got {self.steps}")
        _require(self.token_budget >= 0,
                 f"optim.token_budget must be >= 0 (0: no budget), got {self.token_budget}")
        _require(self.max_skipped_updates >= 1,
                 f"optim.max_skipped_updates must be >= 1, got {self.max_skipped_updates}")
        _require(self.lr > 0, f"optim.lr must be > 0, got {self.lr}")
        _require(self.warmup_steps >= 0,
                 f"optim.warmup_steps must be >= 0, got {self.warmup_steps}")
        _require(self.schedule in SCHEDULES, f"optim.schedule must be one of "
                                             f"{', '.join(SCHEDULES)}, got {self.schedule!r}")
        _require(len(self.betas) == 2 and all(0 <= b < 1 for b in self.betas),
                 f"optim.betas must be two numbers in [0, 1), got {self.betas}")
        _require(self.grad_clip >= 0, f"optim.grad_clip must be >= 0, got {self.grad_clip}")
