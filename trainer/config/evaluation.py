"""The ``eval`` and ``logging`` sections: held-out evaluation, metrics and checkpoints."""

from __future__ import annotations

from dataclasses import dataclass

from verimath.trainer.settings.checks import require as _require


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


@dataclass(frozen=True)
class LoggingConfig:
    output_dir: str | None = None
    """Run directory; ``None`` makes a new folder ``runs/<preset>-<timestamp>``."""
    save_every: int = 50
    """Checkpoint every N RL steps (and always at the end); 0 saves only at the end."""
    keep_checkpoints: int = 2
    """Periodic checkpoints kept on disk (the newest ones)."""
    progress: bool = True
    """Show a tqdm progress bar."""
    print_every: int = 10
    """Print a metric line (reward, accuracy, kept groups, entropy, response length, clip
    fractions, tokens/s) every N RL steps and at the last one, beside the progress bar or
    without it; 0 prints none."""
    plot: bool = True
    """Write ``learning_curve.png`` at the end (needs matplotlib)."""
    backends: tuple[str, ...] = ("jsonl",)
    """Where step metrics go: ``jsonl`` (``metrics.jsonl``, written even when not listed),
    ``tensorboard`` (event files in ``<run dir>/tensorboard``, needs ``verimath[tensorboard]``)
    and ``wandb`` (a Weights & Biases run stored in ``<run dir>/wandb``, needs
    ``verimath[wandb]``)."""
    wandb_project: str = "verimath"
    """W&B project of the run (with ``wandb`` in ``backends``)."""
    wandb_mode: str | None = None
    """W&B mode: ``online``, ``offline`` (no network; ``wandb sync`` uploads later) or
    ``disabled``; ``None`` leaves it to W&B (``$WANDB_MODE``, else online)."""

    def __post_init__(self) -> None:
        _require(self.save_every >= 0, f"logging.save_every must be >= 0, got {self.save_every}")
        _require(self.print_every >= 0,
                 f"logging.print_every must be >= 0 (0 prints no metric lines), got "
                 f"{self.print_every}")
        _require(self.keep_checkpoints >= 1,
                 f"logging.keep_checkpoints must be >= 1, got {self.keep_checkpoints}")
        from verimath.trainer.run.metrics import check_backends

        check_backends(self.backends)  # ValueError naming logging.backends
        _require(self.wandb_mode in (None, "online", "offline", "disabled"),
                 f"logging.wandb_mode must be online, offline, disabled or null, got "
                 f"{self.wandb_mode!r}")
