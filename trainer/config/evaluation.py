"""The ``eval`` section: held-out evaluation during and after training."""

from __future__ import annotations

from dataclasses import dataclass

from verimath.trainer.config.checks import require as _require


@dataclass(frozen=True)
class EvalConfig:
    num_problems: int = 200
    """Held-out problems (never used in training)."""
    k: int = 4
    """Samples per problem for avg@k at the training temperature."""
    every: int = 0
    """Evaluate every N RL steps as well (0: only before and after RL)."""
    seed: int = 12345
    """Seed of the held-out problem stream (distinct from ``data.seed``)."""
    batch_size: int = 256
    """Prompts per generation batch during evaluation."""

    def __post_init__(self) -> None:
        _require(self.num_problems >= 0, f"eval.num_problems must be >= 0, got {self.num_problems}")
        _require(self.k >= 1, f"eval.k must be >= 1, got {self.k}")
        _require(self.every >= 0, f"eval.every must be >= 0, got {self.every}")
        _require(self.batch_size >= 1, f"eval.batch_size must be >= 1, got {self.batch_size}")
