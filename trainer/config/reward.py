"""The ``reward`` section: how responses are scored (answer style, equivalence, overlong
punishment)."""

from __future__ import annotations

from dataclasses import dataclass

from verimath.trainer.config.checks import require as _require
from verimath.trainer.config.choices import CONVENTION_NAMES


@dataclass(frozen=True)
class RewardConfig:
    answer_style: str = "auto"
    """How the final answer is found: one of ``verimath.rewards.extraction.final_answer.STYLES``
    (``dapo``: the last ``Answer: x``; ``boxed``; ``auto``; ``flexible``)."""
    mode: str = "symbolic"
    """Equivalence mode passed to ``verimath.rewards.score_batch``."""
    timeout: float = 5.0
    """Seconds allowed to verify one response; a timeout counts as incorrect."""
    overlong_punishment: bool = True
    """DAPO's soft overlong punishment: add ``R_length`` to the +-1 correctness reward."""
    overlong_buffer: int = 256
    """``L_cache``: the penalty ramps from 0 to -1 over the last ``overlong_buffer`` tokens
    before ``rollout.max_new_tokens`` (``L_max``)."""
    conventions: str = "default"
    """Grading conventions, where graders differ (``docs/conventions.md``): ``default`` follows
    the graders RL runs train with (``2`` is right for a gold ``y = 2``, ``0.142857`` for
    ``\\frac17``, a bare list in any order); ``strict`` turns each to its strict reading. Used by
    every verdict of the run: rewards, held-out evaluation, the warm start's probe."""
    workers: int = 0
    """Processes that run math-verify for answers the exact fast path leaves open; 0 keeps
    the shared pool's default size (``$VERIMATH_WORKERS``, else the usable CPUs, at most 8)."""

    def __post_init__(self) -> None:
        from verimath.rewards.equality.equivalence import MODES, check_timeout
        from verimath.rewards.extraction.final_answer import STYLES

        _require(self.answer_style in STYLES, f"reward.answer_style must be one of "
                                              f"{', '.join(STYLES)}, got {self.answer_style!r}")
        _require(self.conventions in CONVENTION_NAMES,
                 f"reward.conventions must be one of {', '.join(CONVENTION_NAMES)}, "
                 f"got {self.conventions!r}")
        _require(self.mode in MODES, f"reward.mode must be one of {', '.join(MODES)}, "
                                     f"got {self.mode!r}")
        try:
            check_timeout(self.timeout)
        except ValueError as e:
            raise ValueError(f"reward.timeout: {e}") from None
        _require(self.overlong_buffer >= 1,
                 f"reward.overlong_buffer must be >= 1, got {self.overlong_buffer}")
        _require(self.workers >= 0, f"reward.workers must be >= 0, got {self.workers}")
