"""Procedural problem generators: infinite, verified problems with no download.

A generator is a pure function ``(rng: numpy.random.Generator, level: int) -> Problem`` with
levels 1..5 of rising difficulty and exact answers (integers, or reduced fractions ``"a/b"``).
`FAMILIES` maps each family name (CamelCase, as in the env ids ``verimath/<Family>-v0``) to its
generator::

    Arithmetic     integer arithmetic with precedence and parentheses (L1: "What is 7 + 5?")
    Fractions      fraction arithmetic
    Linear         one linear equation in x
    LinearSystem   2x2 linear systems
    Quadratic      quadratics with distinct integer roots
    GcdLcm         gcd / lcm of two or three numbers
    Modular        remainders, modular exponentiation, modular inverses
    Combinatorics  n!, nCk, nPk, word arrangements, committees
    Sequence       next term / n-th term of arithmetic, geometric, quadratic, Fibonacci-like
    BaseConversion conversions between bases 2..10
    Percent        percent word problems
    Chain          multi-term sums with the running totals written out (``meta["solution"]``)
    ChainMix       Chain problems of a level drawn from 1..level (chains of mixed lengths)
    Mixed          one of the families above but Chain(Mix), uniformly (`make_mixed` for other
                   weights, Chain included)

Item ``index`` of seed ``seed`` is drawn from ``numpy.random.SeedSequence([seed, index])``, so
items have random access, and two seeds never share a stream (unlike ``seed + index``)::

    >>> from verimath.envs import generate
    >>> generate("Arithmetic", seed=0, index=3, level=1).prompt   # doctest: +SKIP
    'What is 7 + 5?'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from itertools import count

import numpy as np
from verimath.envs.generators.algebra import linear, linear_system, quadratic, sequence
from verimath.envs.generators.arith import arithmetic, fractions, percent
from verimath.envs.generators.chain import chain, chain_mix
from verimath.envs.generators.common import LEVELS, check_level
from verimath.envs.generators.number import base_conversion, combinatorics, gcd_lcm, modular
from verimath.envs.problem import Problem

Generator = Callable[[np.random.Generator, int], Problem]

BASE_FAMILIES: dict[str, Generator] = {
    "Arithmetic": arithmetic,
    "Fractions": fractions,
    "Linear": linear,
    "LinearSystem": linear_system,
    "Quadratic": quadratic,
    "GcdLcm": gcd_lcm,
    "Modular": modular,
    "Combinatorics": combinatorics,
    "Sequence": sequence,
    "BaseConversion": base_conversion,
    "Percent": percent,
    "Chain": chain,
    "ChainMix": chain_mix,
}
# Mixed's default draws from the families it had before Chain and ChainMix, so Mixed-v0
# poses what it did.
MIXED_DEFAULT = tuple(name for name in BASE_FAMILIES if not name.startswith("Chain"))


class _Mixed:
    """A generator that picks a family with fixed weights, then delegates (picklable)."""

    __name__ = "Mixed"

    def __init__(self, weights: Mapping[str, float]) -> None:
        if not weights:
            raise ValueError("Mixed: weights is empty; give at least one family")
        unknown = sorted(set(weights) - set(BASE_FAMILIES))
        if unknown:
            raise ValueError(f"Mixed: unknown families {unknown}; known: {sorted(BASE_FAMILIES)}")
        values = np.array([float(w) for w in weights.values()])
        if not np.all(np.isfinite(values)) or np.any(values < 0) or values.sum() <= 0:
            raise ValueError(f"Mixed: weights must be finite, >= 0 and not all 0, got {weights}")
        self.names = list(weights)
        self.probs = values / values.sum()

    def family_of(self, rng: np.random.Generator) -> str:
        """The family an item RNG picks (its first draw), before any problem is built."""
        return self.names[int(rng.choice(len(self.names), p=self.probs))]

    def __call__(self, rng: np.random.Generator, level: int) -> Problem:
        level = check_level(level, "Mixed")
        return BASE_FAMILIES[self.family_of(rng)](rng, level)

    def __repr__(self) -> str:
        return f"make_mixed({dict(zip(self.names, self.probs.round(4).tolist()))})"


def make_mixed(weights: Mapping[str, float] | None = None) -> Generator:
    """A generator drawing family ``f`` with probability ``weights[f] / sum(weights)``
    (uniform over `MIXED_DEFAULT` when None); the problem keeps its own family's source."""
    return _Mixed(weights or dict.fromkeys(MIXED_DEFAULT, 1.0))


FAMILIES: dict[str, Generator] = {**BASE_FAMILIES, "Mixed": make_mixed()}


def get_generator(family: str | Generator) -> Generator:
    """The generator for a family name, or `family` itself when it is already callable."""
    if callable(family):
        return family
    try:
        return FAMILIES[family]
    except KeyError:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}") from None


def item_rng(seed: int, index: int) -> np.random.Generator:
    """The RNG of item `index` of stream `seed`: ``default_rng(SeedSequence([seed, index]))``."""
    if seed < 0 or index < 0:
        raise ValueError(f"seed and index must be >= 0, got seed={seed}, index={index}")
    return np.random.default_rng(np.random.SeedSequence([int(seed), int(index)]))


def generate(family: str | Generator, seed: int, index: int, level: int = 1, *,
             name: str | None = None) -> Problem:
    """Item `index` of stream `seed` of a family at `level`.

    The id is ``"gen/<name>/L<level>/<seed>/<index>"`` (`name` defaults to the family name, or
    the callable's ``__name__``), and ``meta`` gains ``seed`` and ``index``, so any problem can
    be regenerated from its id.
    """
    generator = get_generator(family)
    label = name or (family if isinstance(family, str) else getattr(family, "__name__", "custom"))
    level = check_level(level, label)
    problem = generator(item_rng(seed, index), level)
    meta = {**problem.meta, "seed": int(seed), "index": int(index)}
    return replace(problem, id=f"gen/{label}/L{level}/{seed}/{index}", meta=meta)


def problem_stream(family: str | Generator, seed: int, level: int = 1, start: int = 0,
                   stop: int | None = None) -> Iterator[Problem]:
    """Items ``start, start+1, ...`` (up to `stop`, exclusive; endless when None) of a stream:
    the problems the trainer draws when it needs no gym env."""
    indices = count(start) if stop is None else range(start, stop)
    for index in indices:
        yield generate(family, seed, index, level)


__all__ = ["FAMILIES", "LEVELS", "BASE_FAMILIES", "MIXED_DEFAULT", "Generator", "generate",
           "get_generator", "item_rng", "make_mixed", "problem_stream"]
