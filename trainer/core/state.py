"""A training run's long-lived objects, in one typed :class:`TrainState`, what the run has
accumulated (:class:`RunRecord`), and how much of a token budget it has spent
(:class:`TokenClock`).

The state is built by ``verimath.trainer.run.setup.open_state``; the RL step
(``verimath.trainer.run.step.rl_step``) reads and advances it; the loop around the step is
``verimath.trainer.run.loop``; saving and restoring it is ``verimath.trainer.run.checkpoints``.
It lives at the bottom of the trainer (``verimath.trainer.core``): its engine and episode
source are typed by their contracts (``core.protocols``), so it imports no implementation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from verimath.envs import Problem
from verimath.trainer.config import TrainConfig
from verimath.trainer.core.distributed import Comm
from verimath.trainer.core.groups import Group
from verimath.trainer.core.protocols import GroupSource, RolloutEngine

if TYPE_CHECKING:  # transformers is imported by whoever builds the tokenizer
    from transformers import PreTrainedTokenizerBase

__all__ = ["RunRecord", "TokenClock", "TrainState"]


@dataclass
class TokenClock:
    """How much of a token budget a run has generated: the schedule's ``progress``."""

    budget: int
    tokens: int = 0

    def __post_init__(self) -> None:
        if self.budget < 1:
            raise ValueError(f"a token budget must be >= 1 token, got {self.budget}")

    @property
    def fraction(self) -> float:
        return min(1.0, self.tokens / self.budget)


@dataclass
class RunRecord:
    """What a run has accumulated; saved (as JSON) in every checkpoint."""

    generated_tokens: int = 0
    trained_tokens: int = 0
    before: dict[str, float] = field(default_factory=dict)
    """Held-out metrics before RL (after the warm start)."""
    after: dict[str, float] | None = None
    """Held-out metrics after the last RL step."""
    warmstart: dict[str, float] = field(default_factory=dict)
    reference: str | None = None
    """Where the KL reference model lives (``model.path``, or ``reference/`` in the run)."""
    seconds_before: float = 0.0
    """Wall seconds of earlier sessions of a resumed run."""


@dataclass
class TrainState:
    """The objects of one run; ``step`` counts finished RL steps. Close it (or use it as a
    context manager) to end the episode source and the engine; ``close()`` is idempotent."""

    config: TrainConfig
    run_dir: Path
    device: torch.device
    model: torch.nn.Module
    """The policy (an FSDP2-sharded module with several ranks)."""
    tokenizer: PreTrainedTokenizerBase
    engine: RolloutEngine
    heldout: list[Problem]
    record: RunRecord
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    """Stepped once per optimizer update."""
    episodes: GroupSource
    token_clock: TokenClock | None = None
    """With ``optim.token_budget``: the share of the budget spent, read by the schedule."""
    ref_model: torch.nn.Module | None = None
    """The frozen KL reference; None when ``algo.kl_coef`` is 0."""
    comm: Comm = field(default_factory=Comm)
    """This process's place among the data-parallel ranks."""
    surplus: list[Group] = field(default_factory=list)
    """Informative groups left over by dynamic sampling, for the next steps."""
    skipped_in_a_row: int = 0
    """Consecutive optimizer updates skipped for a non-finite gradient."""
    step: int = 0
    start_step: int = 0
    """The step this session started at (the checkpoint's step after a resume)."""
    resumed: bool = False
    trained_nothing: bool = False
    """Set by the training loop: steps ran in this session and none had a group to learn
    from (``verimath train`` then exits with code 3)."""
    echo: Callable[[str], None] = print
    t_start: float = field(default_factory=time.perf_counter)
    closed: bool = False

    @property
    def pad_id(self) -> int:
        return self.tokenizer.pad_token_id

    @property
    def finished(self) -> bool:
        """The run has taken ``optim.steps`` steps, or spent ``optim.token_budget``."""
        o = self.config.optim
        return self.step >= o.steps or bool(
            o.token_budget and self.record.generated_tokens >= o.token_budget)

    def elapsed(self) -> float:
        """Wall seconds of this run, earlier sessions of a resumed run included."""
        return self.record.seconds_before + time.perf_counter() - self.t_start

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.episodes.close()
        self.engine.close()

    def __enter__(self) -> TrainState:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
