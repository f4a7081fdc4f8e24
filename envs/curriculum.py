"""Difficulty that follows the policy: switches that read the scored groups an env already sees.

Two switches of `MathEnv` (both off by default, both deterministic from the stream's seed and
the policy's answers, and both in the env's ``state_dict`` so a resumed run continues
exactly):

``adapt_level`` (procedural envs, `verimath.envs.curriculum_level`): each family's difficulty
    moves to keep its group pass rate (fraction of a group's responses that are correct)
    inside an informative band. The difficulty is a mix of two neighbouring levels in
    ``substeps`` steps per level (with 1, whole levels), each problem's level drawn from its
    own seeded RNG; ``min_groups`` groups at the current difficulty, then ``patience`` checks
    in a row on one side of the band, move it one step; a next level whose groups come back
    all but unsolvable (a cliff) is re-probed after ever longer waits.

    Why a mix: where level ``L + 1`` is a cliff (all wrong) and ``L`` is settled (all
    right), whole levels swing between two regimes that both teach nothing; a mix steps
    back from the next level as soon as its share comes back too hard, and stays at ``L``.

``skip_solved`` (dataset envs): a prompt that every sample solved on each of its last
    ``visits`` visits is settled and skipped when its turn comes; after ``recheck_after``
    skips it is posed again (a re-check): solved by all again, it stays settled and the count
    starts over; missed by any sample, it is unsettled.

Evidence arrives through ``MathEnv.observe(problems, correct)`` with ``correct`` of shape
``(P, G)``; `GroupVectorEnv.step` calls it after scoring (and `MathEnv.step` with ``G = 1``), so
a trainer that steps a group env needs no extra call. ``stats()`` gives metrics
(``curriculum/...`` keys) for logging.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from verimath.envs.curriculum_level import AdaptiveLevel, LevelCurriculum, group_pass_rates
from verimath.envs.problem import Problem


@dataclass(frozen=True)
class SkipSolved:
    """Settings of ``skip_solved``: when a prompt is settled and when it is re-checked."""

    visits: int = 2
    """Consecutive all-correct visits (every sample of the group right) that settle a prompt."""
    recheck_after: int = 4
    """Times a settled prompt is skipped before it is posed again."""

    def __post_init__(self) -> None:
        for name in ("visits", "recheck_after"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"skip_solved.{name} must be an integer >= 1, got {value!r}")


def make_settings(value: Any, kind: type, field: str):
    """`value` (None/False: off, True: defaults, a mapping of fields, or an instance) as
    ``kind`` or None; errors name `field`."""
    if value is None or value is False:
        return None
    if value is True:
        return kind()
    if isinstance(value, kind):
        return value
    if isinstance(value, Mapping):
        try:
            return kind(**value)
        except TypeError as exc:
            raise ValueError(f"{field}: {exc}; known fields: {list(kind.__dataclass_fields__)}"
                             ) from None
    raise TypeError(f"{field} must be a bool, a mapping of settings or a {kind.__name__}, got "
                    f"{type(value).__name__}")


class SolvedFilter:
    """Which prompts of a list are settled, and when a settled one is re-checked."""

    def __init__(self, settings: SkipSolved) -> None:
        self.settings = settings
        self.streak: dict[str, int] = {}
        """Consecutive all-correct visits per problem id."""
        self.skips: dict[str, int] = {}
        """Times each settled problem was skipped since it was last posed."""
        self.skipped = 0
        self.rechecked = 0

    def is_settled(self, problem_id: str) -> bool:
        return self.streak.get(problem_id, 0) >= self.settings.visits

    def admit(self, problem_id: str) -> bool:
        """Whether to pose this problem now: unsettled, or settled and due for a re-check
        (counts the skip otherwise)."""
        if not self.is_settled(problem_id):
            return True
        skips = self.skips.get(problem_id, 0)
        if skips >= self.settings.recheck_after:
            self.skips[problem_id] = 0
            self.rechecked += 1
            return True
        self.skips[problem_id] = skips + 1
        self.skipped += 1
        return False

    def observe(self, problems: Sequence[Problem], correct: Any) -> None:
        """An all-correct group extends its prompt's streak; any miss ends it."""
        for problem, rate in zip(problems, group_pass_rates(correct), strict=True):
            if rate >= 1.0:
                self.streak[problem.id] = self.streak.get(problem.id, 0) + 1
            else:
                self.streak.pop(problem.id, None)
                self.skips.pop(problem.id, None)

    def stats(self) -> dict[str, float]:
        """``curriculum/settled`` (now), ``curriculum/skipped`` and ``curriculum/rechecked``
        (since the start)."""
        settled = sum(1 for k in self.streak if self.is_settled(k))
        return {"curriculum/settled": float(settled), "curriculum/skipped": float(self.skipped),
                "curriculum/rechecked": float(self.rechecked)}

    def state_dict(self) -> dict[str, Any]:
        return {"settings": asdict(self.settings), "streak": dict(self.streak),
                "skips": dict(self.skips), "skipped": self.skipped, "rechecked": self.rechecked}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.streak = {k: int(v) for k, v in state["streak"].items()}
        self.skips = {k: int(v) for k, v in state["skips"].items()}
        self.skipped, self.rechecked = int(state["skipped"]), int(state["rechecked"])


__all__ = ["AdaptiveLevel", "LevelCurriculum", "SkipSolved", "SolvedFilter", "group_pass_rates",
           "make_settings"]
