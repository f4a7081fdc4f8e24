"""The ``data`` section: which problems (a procedural family or a problems file) and the
curriculum switches."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from verimath.trainer.config.checks import require as _require


@dataclass(frozen=True)
class DataConfig:
    family: str = "Arithmetic"
    """Procedural problem family of ``verimath.envs.generators`` (or ``Mixed``)."""
    level: int = 1
    """Difficulty level of the procedural family, 1..5."""
    skip_containing: tuple[str, ...] = ()
    """Skip procedural problems whose prompt contains any of these texts, e.g. ``["*", "-"]``
    keeps only the two-digit additions of Arithmetic level 2."""
    train_file: str | None = None
    """A problems file (``.jsonl``/``.parquet`` from ``verimath prep``) to train on instead of
    the procedural family."""
    heldout_file: str | None = None
    """A problems file for held-out evaluation; ``None`` draws ``eval.num_problems``
    procedural problems that training never sees (their prompts are excluded from training),
    or evaluates nothing when training on ``train_file``."""
    seed: int = 0
    """Seed of the training problem stream."""
    adapt_level: bool = False
    """Difficulty that follows the policy, for the procedural family: each family's
    difficulty (starting at ``level``) moves up while its groups are mostly solved by every
    sample and down while mostly by none (``verimath.envs.curriculum``;
    ``curriculum/difficulty/<family>`` and its pass rate in the metrics). Held-out problems
    stay at ``level``."""
    adapt_band: tuple[float, float] = (0.1, 0.9)
    """``(low, high)``: ``adapt_level`` counts a group below ``low`` (pass rate) as too hard
    and above ``high`` as too easy, and moves the difficulty toward the band."""
    adapt_margin: float = 0.1
    """``adapt_level`` moves when the share of too-hard groups exceeds that of too-easy ones
    (or the other way round) by more than this."""
    adapt_min_groups: int = 16
    """Groups scored at a family's current level before ``adapt_level`` may move it (their
    mean pass rate decides)."""
    adapt_substeps: int = 1
    """Difficulty steps per level for ``adapt_level``: 1 moves whole levels; ``k`` poses a
    share ``j / k`` of the problems one level up and moves it ``1 / k`` at a time
    (``curriculum/difficulty/<family>``), so a level the policy cannot solve yet is mixed in
    and backed off from rather than switched to."""
    adapt_patience: int = 1
    """Checks in a row (one per group once ``adapt_min_groups`` are in) on the same side of
    ``adapt_band`` before ``adapt_level`` moves (hysteresis)."""
    adapt_levels: tuple[int, int] = (1, 5)
    """``(lowest, highest)`` level ``adapt_level`` may reach (with ``skip_containing``, keep
    it below a level whose prompts all contain a skipped text)."""
    skip_solved: bool = False
    """For a ``train_file``: skip prompts that every sample solved on each of their last
    ``skip_solved_visits`` visits, posing them again after ``skip_solved_recheck`` skips
    (``curriculum/settled|skipped|rechecked`` in the metrics)."""
    skip_solved_visits: int = 2
    """All-correct visits in a row that settle a prompt (``skip_solved``)."""
    skip_solved_recheck: int = 4
    """Skips of a settled prompt before it is posed again (``skip_solved``)."""

    def __post_init__(self) -> None:
        _require(1 <= self.level <= 5, f"data.level must be in 1..5, got {self.level}")
        from verimath.envs.generators import FAMILIES

        _require(self.family in FAMILIES,
                 f"data.family must be one of {', '.join(FAMILIES)}, got {self.family!r}")
        _require(not (self.adapt_level and self.train_file),
                 "data.adapt_level moves the level of the procedural family; with "
                 "data.train_file use data.skip_solved instead")
        _require(not (self.skip_solved and not self.train_file),
                 "data.skip_solved skips solved prompts of data.train_file (a procedural "
                 "stream never repeats one); use data.adapt_level instead")
        self.curriculum()  # settings errors name the data.* key

    def curriculum(self) -> dict:
        """The episode source's ``adapt_level`` and ``skip_solved`` settings (None: off)."""
        from verimath.envs.curriculum import AdaptiveLevel, SkipSolved

        try:
            adapt = AdaptiveLevel(low=self.adapt_band[0], high=self.adapt_band[1],
                                  min_groups=self.adapt_min_groups,
                                  min_level=self.adapt_levels[0], max_level=self.adapt_levels[1],
                                  substeps=self.adapt_substeps, patience=self.adapt_patience,
                                  margin=self.adapt_margin)
        except ValueError as exc:
            raise ValueError(f"data.adapt_band / data.adapt_margin / data.adapt_min_groups / "
                             f"data.adapt_levels / data.adapt_substeps / data.adapt_patience: "
                             f"{exc}") from None
        try:
            skip = SkipSolved(visits=self.skip_solved_visits,
                              recheck_after=self.skip_solved_recheck)
        except ValueError as exc:
            raise ValueError(f"data.skip_solved_visits / data.skip_solved_recheck: {exc}"
                             ) from None
        return {"adapt_level": dataclasses.asdict(adapt) if self.adapt_level else None,
                "skip_solved": dataclasses.asdict(skip) if self.skip_solved else None}
