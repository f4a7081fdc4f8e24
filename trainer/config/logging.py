"""The ``logging`` section: metrics, backends, progress, checkpoints and the run directory."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from verimath.trainer.config.checks import require as _require
from verimath.trainer.config.choices import METRIC_BACKENDS


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
        check_backends(self.backends)  # ValueError naming logging.backends
        _require(self.wandb_mode in (None, "online", "offline", "disabled"),
                 f"logging.wandb_mode must be online, offline, disabled or null, got "
                 f"{self.wandb_mode!r}")


def check_backends(backends: Iterable[str]) -> tuple[str, ...]:
    """``("jsonl", *the others)``: ``metrics.jsonl`` is always written (resume, summaries and
    ``verimath plot`` read it), listed or not. ValueError names ``logging.backends``."""
    backends = tuple(backends)
    if any(b not in METRIC_BACKENDS for b in backends) or len(set(backends)) != len(backends):
        raise ValueError("logging.backends must be distinct names among "
                         f"{', '.join(METRIC_BACKENDS)}, got {list(backends)}")
    return ("jsonl", *[b for b in backends if b != "jsonl"])
