"""Difficulty that follows the policy: switches that read the scored groups an env already sees.

Two switches of `MathEnv` (both off by default, both deterministic: they use no randomness, so
a run is a function of its seed and of the policy's answers, and both live in the env's
``state_dict`` so a resumed run continues exactly):

``adapt_level`` (procedural envs): each family's level moves to keep its group pass rate
    (fraction of a group's responses that are correct) inside an informative band. After at
    least ``min_groups`` groups were scored at the family's current level, their mean pass
    rate decides, by `next_level`: above ``high`` -> one level up, below ``low`` -> one level
    down (within ``min_level..max_level``), otherwise stay; after a move the evidence starts
    over. Groups of problems posed at another level (generated before the move) are not
    evidence, nor are problems without ``meta["level"]`` (every family sets it; a custom
    generator should too).

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

import numpy as np
from verimath.envs.gen_common import LEVELS
from verimath.envs.problem import Problem


@dataclass(frozen=True)
class AdaptiveLevel:
    """Settings of ``adapt_level``: the informative band of the mean group pass rate."""

    low: float = 0.1
    """Below this mean pass rate the family moves one level down."""
    high: float = 0.9
    """Above this mean pass rate the family moves one level up."""
    min_groups: int = 16
    """Groups scored at the current level before it may move (the evidence needed); the
    decision reads the latest this many."""
    min_level: int = 1
    """Lowest level the family may reach."""
    max_level: int = 5
    """Highest level the family may reach."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.low < self.high <= 1.0:
            raise ValueError(f"adapt_level: need 0 <= low < high <= 1, got low={self.low}, "
                             f"high={self.high}")
        if isinstance(self.min_groups, bool) or int(self.min_groups) != self.min_groups \
                or self.min_groups < 1:
            raise ValueError(f"adapt_level.min_groups must be an integer >= 1, got "
                             f"{self.min_groups!r}")
        if not (self.min_level in LEVELS and self.max_level in LEVELS
                and self.min_level <= self.max_level):
            raise ValueError(f"adapt_level: need 1 <= min_level <= max_level <= 5, got "
                             f"min_level={self.min_level}, max_level={self.max_level}")


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


def next_level(level: int, pass_rates: Sequence[float], settings: AdaptiveLevel) -> int:
    """The level after seeing `pass_rates` (one per group, all posed at `level`): one up when
    their mean is above ``high``, one down when below ``low``, clamped to the bounds; unchanged
    with fewer than ``min_groups`` groups."""
    if len(pass_rates) < settings.min_groups:
        return level
    mean = float(np.mean(pass_rates))
    if mean > settings.high:
        level += 1
    elif mean < settings.low:
        level -= 1
    return min(max(level, settings.min_level), settings.max_level)


def group_pass_rates(correct: Any) -> np.ndarray:
    """``(P,)`` fraction correct of each group from ``correct`` of shape ``(P, G)``."""
    correct = np.asarray(correct, dtype=bool)
    if correct.ndim != 2:
        raise ValueError(f"correct must have shape (P, G), got {correct.shape}")
    return correct.mean(axis=1)


class LevelCurriculum:
    """Per-family levels driven by group pass rates (see the module docstring)."""

    def __init__(self, settings: AdaptiveLevel, start_level: int) -> None:
        self.settings = settings
        self.start_level = min(max(int(start_level), settings.min_level), settings.max_level)
        self.levels: dict[str, int] = {}
        self.window: dict[str, list[float]] = {}
        self.moves: dict[str, int] = {}

    def level(self, family: str) -> int:
        """The current level of `family` (the start level until evidence moves it)."""
        return self.levels.setdefault(family, self.start_level)

    def observe(self, families: Sequence[str], levels: Sequence[int | None],
                correct: Any) -> None:
        """Record the pass rates of groups posed to `families` at `levels` (one each; a level
        other than the family's current one, or None, is not evidence); a family moves once
        it has enough evidence."""
        rates = group_pass_rates(correct)
        if not len(families) == len(levels) == len(rates):
            raise ValueError(f"observe: {len(families)} families, {len(levels)} levels and "
                             f"{len(rates)} groups; give one of each per group")
        for family, level, rate in zip(families, levels, rates):
            if level is None or level != self.level(family):
                continue  # posed before the last move: not evidence for the current level
            window = self.window.setdefault(family, [])
            window.append(float(rate))
            del window[:-self.settings.min_groups]  # the latest groups only
            new = next_level(self.levels[family], window, self.settings)
            if new != self.levels[family]:
                self.levels[family], self.window[family] = new, []
                self.moves[family] = self.moves.get(family, 0) + 1

    def stats(self) -> dict[str, float]:
        """Per family seen: ``curriculum/level/<family>``; ``curriculum/pass_rate/<family>`` and
        ``curriculum/informative/<family>`` (mean pass rate, and share of groups neither all
        right nor all wrong, of the latest ``curriculum/groups/<family>`` groups seen at the
        current level); ``curriculum/moves/<family>`` (level changes so far)."""
        out: dict[str, float] = {}
        for family in sorted(self.levels):
            window = self.window.get(family, [])
            out[f"curriculum/level/{family}"] = float(self.levels[family])
            if window:
                rates = np.asarray(window)
                out[f"curriculum/pass_rate/{family}"] = float(rates.mean())
                out[f"curriculum/informative/{family}"] = float(np.mean((rates > 0) & (rates < 1)))
            out[f"curriculum/groups/{family}"] = float(len(window))
            out[f"curriculum/moves/{family}"] = float(self.moves.get(family, 0))
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"settings": asdict(self.settings), "levels": dict(self.levels),
                "window": {k: list(v) for k, v in self.window.items()},
                "moves": dict(self.moves)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.levels = {k: int(v) for k, v in state["levels"].items()}
        self.window = {k: [float(x) for x in v] for k, v in state["window"].items()}
        self.moves = {k: int(v) for k, v in state["moves"].items()}


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
           "make_settings", "next_level"]
