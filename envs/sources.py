"""Where an environment's problems come from: an endless generator stream or a fixed list.

Sources are small stateful cursors owned by one env; every random choice uses the env's own
``np_random`` (never the global RNG).

Stream (a generator family or any ``(rng, level) -> Problem`` callable):
    ``reset(seed=s)`` restarts at item 0 of stream ``s``; each later reset takes the next item,
    so episode ``k`` after ``reset(seed=s)`` is ``generate(family, s, k, level)``. A first
    reset without a seed draws the stream seed from the env's RNG.
List (Problems in memory, or a ``.jsonl`` / ``.parquet`` file read on first use):
    ``shuffle=True`` walks a fresh permutation each epoch (drawn from the env's RNG; a seeded
    reset restarts with a permutation drawn from that seed); ``shuffle=False`` walks the file
    in order and a seeded reset restarts at the first problem.

Both can follow the policy (`verimath.envs.curriculum`): a stream with a `LevelCurriculum`
draws item ``k`` from its family's current mix of levels (and notes the difficulty in
``meta["difficulty"]``); a list with a `SolvedFilter` passes over
settled problems on its walk. ``observe(problems, correct)`` feeds either one the scored groups.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from verimath.envs.curriculum import (
    AdaptiveLevel,
    LevelCurriculum,
    SkipSolved,
    SolvedFilter,
    make_settings,
)
from verimath.envs.generators import generate, get_generator, item_rng, make_mixed
from verimath.envs.generators.common import check_level
from verimath.envs.problem import Problem, read_problems


class StreamSource:
    """Endless problems ``generate(generator, stream_seed, index, level)``, index 0, 1, ...

    With a `LevelCurriculum`, ``level`` is the start level and item ``index`` is drawn from the
    current mix of levels of its family: the source's name, or for a mixing generator (one with a
    ``family_of(rng)`` method, or wrapping one as ``.generator``) the family its item RNG picks.
    """

    is_random = True

    def __init__(self, generator: Callable, level: int, name: str,
                 curriculum: LevelCurriculum | None = None) -> None:
        self.generator, self.level, self.name = generator, check_level(level, name), name
        self.curriculum = curriculum
        inner = getattr(generator, "generator", None)
        self.family_of = getattr(generator, "family_of", None) or getattr(inner, "family_of",
                                                                          None)
        self.stream_seed: int | None = None
        self.index = 0

    def restart(self, seed: int, rng: np.random.Generator) -> None:
        self.stream_seed, self.index = int(seed), 0

    def item_level(self) -> int:
        """The level of the next item: the fixed level, or one drawn from its family's mix of
        levels with a uniform number from its own RNG (``SeedSequence([stream_seed, index,
        1])``, apart from the generator's)."""
        if self.curriculum is None:
            return self.level
        u = np.random.default_rng(np.random.SeedSequence(
            [self.stream_seed, self.index, 1])).random()
        return self.curriculum.draw_level(self.item_family(), float(u))

    def item_family(self) -> str:
        if self.family_of is None:
            return self.name
        return self.family_of(item_rng(self.stream_seed, self.index))

    def next(self, rng: np.random.Generator) -> Problem:
        if self.stream_seed is None:
            self.stream_seed = int(rng.integers(0, 2**63 - 1))
        problem = generate(self.generator, self.stream_seed, self.index, self.item_level(),
                           name=self.name)
        if self.curriculum is not None:  # the difficulty it was posed at: evidence for that one
            difficulty = self.curriculum.difficulty(self.item_family())
            problem = replace(problem, meta={**problem.meta, "difficulty": difficulty})
        self.index += 1
        return problem

    def observe(self, problems: Sequence[Problem], correct: Any) -> None:
        if self.curriculum is None:
            return
        families = [p.meta.get("family", self.name) if self.family_of else self.name
                    for p in problems]
        self.curriculum.observe(families, [p.meta.get("difficulty") for p in problems],
                                [p.meta.get("level") for p in problems], correct)

    def stats(self) -> dict[str, float]:
        return {} if self.curriculum is None else self.curriculum.stats()

    def state_dict(self) -> dict:
        state = {"stream_seed": self.stream_seed, "index": self.index}
        if self.curriculum is not None:
            state["curriculum"] = self.curriculum.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.stream_seed, self.index = state["stream_seed"], int(state["index"])
        if self.curriculum is not None and "curriculum" in state:
            self.curriculum.load_state_dict(state["curriculum"])

    def describe(self) -> str:
        return f"{self.name} level {self.level}" + (" (adaptive)" if self.curriculum else "")


class ListSource:
    """A finite list of problems, walked in (optionally shuffled) epochs; with a
    `SolvedFilter`, settled problems are passed over until they are due for a re-check."""

    def __init__(self, problems: Sequence[Problem] | None = None, path: str | None = None,
                 shuffle: bool = True, skip: SolvedFilter | None = None) -> None:
        self.path = path
        self.problems = None if problems is None else _check_problems(problems)
        self.is_random = bool(shuffle)
        self.skip = skip
        self.order: np.ndarray | None = None
        self.pos = 0

    def _loaded(self) -> list[Problem]:
        if self.problems is None:  # read lazily: no I/O in the env constructor
            self.problems = _check_problems(read_problems(self.path), where=self.path)
        return self.problems

    def restart(self, seed: int | None, rng: np.random.Generator) -> None:
        n = len(self._loaded())
        self.order = rng.permutation(n) if self.is_random else np.arange(n)
        self.pos = 0

    def next(self, rng: np.random.Generator) -> Problem:
        while True:  # ends: each pass over a settled problem brings its re-check nearer
            if self.order is None or self.pos >= len(self.order):
                self.restart(None, rng)
            problem = self._loaded()[int(self.order[self.pos])]
            self.pos += 1
            if self.skip is None or self.skip.admit(problem.id):
                return problem

    def observe(self, problems: Sequence[Problem], correct: Any) -> None:
        if self.skip is not None:
            self.skip.observe(problems, correct)

    def stats(self) -> dict[str, float]:
        return {} if self.skip is None else self.skip.stats()

    def state_dict(self) -> dict:
        order = None if self.order is None else self.order.tolist()
        state = {"order": order, "pos": self.pos}
        if self.skip is not None:
            state["skip_solved"] = self.skip.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        order = state["order"]
        self.order = None if order is None else np.asarray(order, dtype=np.int64)
        self.pos = int(state["pos"])
        if self.skip is not None and "skip_solved" in state:
            self.skip.load_state_dict(state["skip_solved"])

    def describe(self) -> str:
        return (self.path or f"{len(self._loaded())} problems") + \
            (" (skipping solved)" if self.skip else "")


def _check_problems(problems: Sequence[Any], where: str = "problems") -> list[Problem]:
    problems = list(problems)
    if not problems:
        raise ValueError(f"{where}: no problems to serve (the list or file is empty)")
    first: dict[str, int] = {}
    for i, p in enumerate(problems):
        if not isinstance(p, Problem):
            raise TypeError(f"{where}[{i}] must be a verimath.envs.Problem, got "
                            f"{type(p).__name__}")
        j = first.setdefault(p.id, i)
        if j != i:  # ids key episodes, metrics and evaluation results: they must be unique
            raise ValueError(
                f"{where}: problems {j} and {i} (0-based) share the id {p.id!r}; ids must be "
                "unique (when combining files prepared separately, give each its own "
                "`verimath prep --name`)"
            )
    return problems


def make_source(*, family: str | None = None, level: int | None = None,
                weights: dict | None = None, generator: Callable | None = None,
                problems: Sequence[Problem] | None = None,
                path: str | os.PathLike | None = None, shuffle: bool = True,
                adapt_level: Any = None, skip_solved: Any = None):
    """The source for exactly one of `family`, `generator`, `problems` or `path`;
    `adapt_level` applies to the first two, `skip_solved` to the last two (see
    `verimath.envs.curriculum`)."""
    given = [name for name, value in (("family", family), ("generator", generator),
                                      ("problems", problems), ("path", path)) if value is not None]
    if len(given) != 1:
        raise ValueError(
            "give exactly one problem source: family='Arithmetic' (a generator family), "
            "generator=fn (rng, level) -> Problem, problems=[Problem, ...] or "
            f"path='problems.jsonl'; got {given or 'none'}"
        )
    if weights is not None and family != "Mixed":
        raise ValueError(f"weights= only applies to family='Mixed', not {given[0]}={family!r}")
    if level is not None and given[0] in ("problems", "path"):
        raise ValueError(f"level= applies to generated problems, not to {given[0]}=; filter "
                         "the file by level when preparing it instead")
    adaptive = make_settings(adapt_level, AdaptiveLevel, "adapt_level")
    skipping = make_settings(skip_solved, SkipSolved, "skip_solved")
    if adaptive is not None and given[0] in ("problems", "path"):
        raise ValueError(f"adapt_level= applies to generated problems, not to {given[0]}=; "
                         "use skip_solved= to pass over solved dataset problems")
    if skipping is not None and given[0] in ("family", "generator"):
        raise ValueError(f"skip_solved= applies to problem lists and files, not to "
                         f"{given[0]}= (a stream never repeats); use adapt_level= instead")
    level = 1 if level is None else level
    curriculum = None if adaptive is None else LevelCurriculum(adaptive, level)
    if family is not None:
        gen = make_mixed(weights) if weights is not None else get_generator(family)
        return StreamSource(gen, level, family, curriculum)
    if generator is not None:
        if not callable(generator):
            raise TypeError(f"generator must be callable (rng, level) -> Problem, got "
                            f"{type(generator).__name__}")
        return StreamSource(generator, level, getattr(generator, "__name__", "custom"),
                            curriculum)
    skip = None if skipping is None else SolvedFilter(skipping)
    if path is not None:
        path = os.fspath(path)
        if not path.endswith((".jsonl", ".json", ".parquet")):
            raise ValueError(f"path {path!r}: expected a .jsonl or .parquet file written by "
                             "`verimath prep`")
        if not os.path.isfile(path):  # a stat, not a read: the file is read at reset()
            what = "a directory" if os.path.isdir(path) else "no such file"
            raise FileNotFoundError(f"path {path!r}: {what}; pass a problems file written by "
                                    "verimath prep (.jsonl or .parquet)")
        return ListSource(path=path, shuffle=shuffle, skip=skip)
    return ListSource(problems=problems, shuffle=shuffle, skip=skip)
