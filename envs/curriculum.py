"""Difficulty that follows the policy: switches that read the scored groups an env already sees.

Two switches of `MathEnv` (both off by default, both deterministic from the stream's seed and
the policy's answers, and both in the env's ``state_dict`` so a resumed run continues
exactly):

``adapt_level`` (procedural envs, `verimath.envs.curriculum`): each family's difficulty
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

How ``adapt_level`` moves. A family's difficulty is an integer step ``s = level * substeps + j``
(``j = 0..substeps-1``): its problems are posed at ``level``, a share ``j / substeps`` of them one
level up, each problem's level drawn from its own seeded RNG (`draw_level`). With ``substeps = 1``
the difficulty moves whole levels. Each problem carries the difficulty it was posed at
(``meta["difficulty"]``, ``s / substeps``); groups posed at the current difficulty fill a window of
the latest ``min_groups`` (with the level each was posed at), and once it is full every further
group is a check (`mix_side`). A group's pass rate is too low below ``low`` (nearly all wrong) and
too high above ``high`` (nearly all right): either way it teaches little. The check says

* a cliff (`cliff_side`): the groups one level up are all too low while the base level's are
  not (step down), or the base level's pass less often than those one up (step up: the
  lower level is no easier for this policy);
* else too hard (-1) when the window holds more too-low groups than too-high ones, by more
  than ``margin``; too easy (+1) the other way round; otherwise balanced (0).

``patience`` checks in a row on one side move one step that way (within ``min_level..max_level``)
and the evidence starts over: the new mix's window fills before it is judged (a cooldown). A step
away from a cliff is a failed probe: the next step out of an unmixed level (a blind probe, one level
in the window) waits for ``min_groups * 2**failed`` groups (``failed`` capped at `BACKOFF_CAP`). So
a neighbouring level the policy cannot solve (above it, or below it: a policy trained on one level
may fail an easier one whose prompts or solutions look different) is re-probed ever more rarely but
always again, instead of the difficulty swinging between a level that is settled and one that is
hopeless, which both teach nothing. A step from a mix whose two levels were both within reach ends
the backoff.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from verimath.envs.generators.common import LEVELS
from verimath.envs.problem import Problem

BACKOFF_CAP = 5
"""At most ``min_groups * 2**BACKOFF_CAP`` groups between two probes of an unreachable level."""


@dataclass(frozen=True)
class AdaptiveLevel:
    """Settings of ``adapt_level``: the informative band of group pass rates, how much evidence
    a move needs, and how fine the difficulty is."""

    low: float = 0.1
    """A group whose pass rate is below this is too hard (it teaches little)."""
    high: float = 0.9
    """A group whose pass rate is above this is too easy (it teaches little)."""
    min_groups: int = 16
    """Groups scored at the current difficulty before it may move (the evidence needed, and
    a cooldown after each move: the window starts over); the decision reads the latest this
    many."""
    min_level: int = 1
    """Lowest level the family may reach."""
    max_level: int = 5
    """Highest level the family may reach."""
    substeps: int = 1
    """Difficulty steps per level: 1 moves whole levels; ``k`` poses a share ``j / k`` of the
    family's problems one level up (``j = 0..k-1``), so each step changes the mix by ``1/k``
    and a level the policy cannot solve yet is mixed in, not switched to."""
    margin: float = 0.1
    """How much larger the share of too-hard groups (pass rate below ``low``) must be than the
    share of too-easy ones (above ``high``), or the other way round, for a check to call the
    difficulty too hard (too easy)."""
    patience: int = 1
    """Checks in a row (one per group scored once the window is full) on the same side of the
    band before a move: 1 moves at the first; more holds the difficulty through a short
    excursion of the pass rate (hysteresis)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.low < self.high <= 1.0:
            raise ValueError(f"adapt_level: need 0 <= low < high <= 1, got low={self.low}, "
                             f"high={self.high}")
        if not 0.0 <= self.margin < 1.0:
            raise ValueError(f"adapt_level.margin must be in [0, 1), got {self.margin}")
        for name in ("min_groups", "substeps", "patience"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"adapt_level.{name} must be an integer >= 1, got {value!r}")
        if not (self.min_level in LEVELS and self.max_level in LEVELS
                and self.min_level <= self.max_level):
            raise ValueError(f"adapt_level: need 1 <= min_level <= max_level <= 5, got "
                             f"min_level={self.min_level}, max_level={self.max_level}")

    @property
    def lowest(self) -> int:
        """The lowest difficulty step: ``min_level`` unmixed."""
        return self.min_level * self.substeps

    @property
    def highest(self) -> int:
        """The highest difficulty step: ``max_level`` unmixed."""
        return self.max_level * self.substeps


def group_pass_rates(correct: Any) -> np.ndarray:
    """``(P,)`` fraction correct of each group from ``correct`` of shape ``(P, G)``."""
    correct = np.asarray(correct, dtype=bool)
    if correct.ndim != 2:
        raise ValueError(f"correct must have shape (P, G), got {correct.shape}")
    return correct.mean(axis=1)


def band_side(pass_rates: Sequence[float], settings: AdaptiveLevel) -> int:
    """Which side of the band a set of groups leans to: +1 when the share of groups above
    ``high`` (too easy) exceeds the share below ``low`` (too hard) by more than ``margin``,
    -1 the other way round, 0 otherwise or with no groups."""
    if len(pass_rates) == 0:
        return 0
    rates = np.asarray(pass_rates, dtype=float)
    easy, hard = float(np.mean(rates > settings.high)), float(np.mean(rates < settings.low))
    return 1 if easy > hard + settings.margin else -1 if hard > easy + settings.margin else 0


def cliff_side(window: Sequence[tuple[int, float]], settings: AdaptiveLevel) -> int:
    """-1 when the window's groups posed one level up (two at least) are all too hard while
    those at the base level are not: the next level is out of reach. +1 when the base level's
    groups (two at least) pass less often on average than those one up (two at least): the
    lower level is no easier for this policy (one trained on one level may fail an easier
    level whose prompts or solutions look different). Else 0."""
    base = [r for up, r in window if not up]
    upper = [r for up, r in window if up]

    def hopeless(part: list[float]) -> bool:
        return len(part) >= 2 and all(r < settings.low for r in part)

    if hopeless(upper) and not hopeless(base):
        return -1
    if len(base) >= 2 and len(upper) >= 2 and np.mean(base) < np.mean(upper):
        return 1
    return 0


def mix_side(window: Sequence[tuple[int, float]], settings: AdaptiveLevel) -> int:
    """The check of a window of ``(up, pass_rate)`` groups (``up`` 1 for a group posed one
    level above the base, else 0): a cliff's side (`cliff_side`), else `band_side` of all its
    groups; 0 with fewer than ``min_groups`` groups (see the module docstring)."""
    if len(window) < settings.min_groups:
        return 0
    return cliff_side(window, settings) or band_side([r for _, r in window], settings)


def mix_of(step: int, substeps: int) -> tuple[int, float]:
    """``(level, share_up)`` of difficulty step `step`: problems are posed at ``level``, a share
    ``share_up`` of them at ``level + 1``."""
    return step // substeps, (step % substeps) / substeps


def draw_level(step: int, substeps: int, u: float) -> int:
    """The level of one problem at difficulty step `step`, from a uniform draw ``u`` in [0, 1):
    one up when ``u < share_up``."""
    level, share_up = mix_of(step, substeps)
    return level + int(u < share_up)


class LevelCurriculum:
    """Per-family difficulty driven by group pass rates (see the module docstring)."""

    def __init__(self, settings: AdaptiveLevel, start_level: int) -> None:
        self.settings = settings
        start = int(start_level) * settings.substeps
        self.start_step = min(max(start, settings.lowest), settings.highest)
        self.steps: dict[str, int] = {}
        self.window: dict[str, list[tuple[int, float]]] = {}
        """Latest ``(up, pass_rate)`` groups at the current difficulty."""
        self.seen: dict[str, int] = {}
        """Groups seen at the current difficulty since the last move."""
        self.streak: dict[str, int] = {}
        """Signed count of consecutive checks on one side of the band (+ above, - below)."""
        self.failed: dict[str, int] = {}
        """Failed probes of a neighbouring level in a row (each doubles the wait for the next)."""
        self.moves: dict[str, int] = {}

    def step(self, family: str) -> int:
        """The current difficulty step of `family` (the start until evidence moves it)."""
        return self.steps.setdefault(family, self.start_step)

    def difficulty(self, family: str) -> float:
        """The current difficulty of `family` as ``level + share_up``."""
        return self.step(family) / self.settings.substeps

    def level(self, family: str) -> int:
        """The current base level of `family` (a share of its problems may be one above)."""
        return mix_of(self.step(family), self.settings.substeps)[0]

    def draw_level(self, family: str, u: float) -> int:
        """The level of one problem of `family`, from a uniform draw ``u`` in [0, 1)."""
        return draw_level(self.step(family), self.settings.substeps, u)

    def observe(self, families: Sequence[str], difficulties: Sequence[float | None],
                levels: Sequence[int | None], correct: Any) -> None:
        """Record the pass rates of groups posed to `families` at `difficulties` and `levels`
        (one each; a difficulty other than the family's current one, or None, is not
        evidence); a family moves once the checks say so (see the module docstring)."""
        rates = group_pass_rates(correct)
        if not len(families) == len(difficulties) == len(levels) == len(rates):
            raise ValueError(f"observe: {len(families)} families, {len(difficulties)} "
                             f"difficulties, {len(levels)} levels and {len(rates)} groups; "
                             "give one of each per group")
        for family, difficulty, level, rate in zip(families, difficulties, levels, rates):
            if difficulty is None or level is None or difficulty != self.difficulty(family):
                continue  # posed before the last move: not evidence for the current step
            window = self.window.setdefault(family, [])
            window.append((int(level > self.level(family)), float(rate)))
            del window[:-self.settings.min_groups]  # the latest groups only
            self.seen[family] = self.seen.get(family, 0) + 1
            self._check(family, mix_side(window, self.settings))

    def _check(self, family: str, side: int) -> None:
        streak = self.streak.get(family, 0)
        streak = 0 if side == 0 else streak + side if streak * side > 0 else side
        self.streak[family] = streak
        s, failed = self.settings, self.failed.get(family, 0)
        window = self.window[family]
        mixed = len({up for up, _ in window}) == 2
        if abs(streak) < s.patience:
            return
        if not mixed and self.seen[family] < s.min_groups * 2 ** failed:
            return  # a blind probe of a neighbouring level, after the last one failed: wait
        new = min(max(self.steps[family] + side, s.lowest), s.highest)
        if new == self.steps[family]:
            return
        if cliff_side(window, s):
            self.failed[family] = min(failed + 1, BACKOFF_CAP)
        elif mixed:
            self.failed[family] = 0  # both levels of the mix were within reach
        self.steps[family], self.window[family] = new, []
        self.seen[family], self.streak[family] = 0, 0
        self.moves[family] = self.moves.get(family, 0) + 1

    def stats(self) -> dict[str, float]:
        """Per family seen: ``curriculum/level/<family>`` (base level) and
        ``curriculum/difficulty/<family>`` (level plus the share posed one up);
        ``curriculum/pass_rate/<family>`` and ``curriculum/informative/<family>`` (mean pass
        rate, and share of groups neither all right nor all wrong, of the latest
        ``curriculum/groups/<family>`` groups seen at the current difficulty);
        ``curriculum/moves/<family>`` (difficulty changes so far) and
        ``curriculum/failed_probes/<family>`` (failed probes of the next level in a row)."""
        out: dict[str, float] = {}
        for family in sorted(self.steps):
            rates = np.asarray([r for _, r in self.window.get(family, [])])
            out[f"curriculum/level/{family}"] = float(self.level(family))
            out[f"curriculum/difficulty/{family}"] = self.difficulty(family)
            if len(rates):
                out[f"curriculum/pass_rate/{family}"] = float(rates.mean())
                out[f"curriculum/informative/{family}"] = float(np.mean((rates > 0) & (rates < 1)))
            out[f"curriculum/groups/{family}"] = float(len(rates))
            out[f"curriculum/moves/{family}"] = float(self.moves.get(family, 0))
            out[f"curriculum/failed_probes/{family}"] = float(self.failed.get(family, 0))
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"settings": asdict(self.settings), "steps": dict(self.steps),
                "window": {k: [list(x) for x in v] for k, v in self.window.items()},
                "seen": dict(self.seen), "streak": dict(self.streak),
                "failed": dict(self.failed), "moves": dict(self.moves)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if "steps" not in state:
            raise ValueError("the adapt_level state holds no 'steps' entry: it was saved by an "
                             "older verimath; start a new run")
        self.steps = {k: int(v) for k, v in state["steps"].items()}
        self.window = {k: [(int(up), float(r)) for up, r in v]
                       for k, v in state["window"].items()}
        for name in ("seen", "streak", "failed", "moves"):
            setattr(self, name, {k: int(v) for k, v in state[name].items()})


__all__ = ["BACKOFF_CAP", "AdaptiveLevel", "LevelCurriculum", "band_side", "cliff_side",
           "draw_level", "group_pass_rates", "mix_of", "mix_side"]


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
