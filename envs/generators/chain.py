"""Generator family with visible intermediate steps: Chain (running totals).

A Chain problem is a left-to-right sum of terms, ``"What is 47 + 38 - 12 + 65?"``, whose worked
solution writes one line per operation with the running total, then the answer::

    47 + 38 = 85
    85 - 12 = 73
    73 + 65 = 138
    Answer: 138

The solution is kept in ``meta["solution"]`` (read it with `worked_solution`), so a supervised
warm start can teach the chain and RL can then reward the final answer alone. Running totals
never go below zero (a ``-`` is drawn only when the total can pay for it), so every line is
a sum or a difference of non-negative integers. Levels lengthen the chain; the first three use
one-digit terms, so that a step is easy and the length is the difficulty:

    level  terms  operands   operators  solution length (characters)
    1      3      1..9       +          about 30
    2      4      1..9       + -        about 40
    3      6      1..9       + -        about 60
    4      6      10..99     + -        about 80
    5      8      10..999    + -        about 125

``ChainMix`` (:func:`chain_mix`) mixes lengths: at level L each problem is a Chain problem of a
level drawn uniformly from 1..L, so one batch holds chains of several lengths, pass rates that
differ by length, and responses of different lengths (what the token-level loss and the
overlong shaping act on).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from verimath.envs.generators.common import check_level, make_problem, pick, randint
from verimath.envs.problem import Problem

# level -> (terms, smallest operand, largest operand, operators)
CHAIN_LEVELS: dict[int, tuple[int, int, int, tuple[str, ...]]] = {
    1: (3, 1, 9, ("+",)),
    2: (4, 1, 9, ("+", "-")),
    3: (6, 1, 9, ("+", "-")),
    4: (6, 10, 99, ("+", "-")),
    5: (8, 10, 999, ("+", "-")),
}


def chain_terms(rng: np.random.Generator, level: int) -> tuple[list[int], list[str]]:
    """The terms ``t0, t1, ...`` and the operators between them (``len(ops) == len(terms)-1``),
    with every running total >= 0."""
    count, low, high, ops = CHAIN_LEVELS[level]
    terms, chosen = [randint(rng, low, high)], []
    total = terms[0]
    for _ in range(count - 1):
        op = pick(rng, ops)
        if op == "-" and total >= low:
            value = randint(rng, low, min(high, total))
            total -= value
        else:
            op, value = "+", randint(rng, low, high)
            total += value
        terms.append(value)
        chosen.append(op)
    return terms, chosen


def running_totals(terms: list[int], ops: list[str]) -> list[int]:
    """The total after each operation, left to right (one per operator)."""
    totals, total = [], terms[0]
    for op, value in zip(ops, terms[1:]):
        total = total + value if op == "+" else total - value
        totals.append(total)
    return totals


def chain_solution(terms: list[int], ops: list[str]) -> str:
    """The worked solution: ``"a op b = total"`` per operation, then ``"Answer: N"``."""
    lines, previous = [], terms[0]
    for op, value, total in zip(ops, terms[1:], running_totals(terms, ops)):
        lines.append(f"{previous} {op} {value} = {total}")
        previous = total
    return "\n".join([*lines, f"Answer: {previous}"])


def chain(rng: np.random.Generator, level: int) -> Problem:
    """A running-total sum whose worked solution (``meta["solution"]``) shows each step."""
    level = check_level(level, "Chain")
    terms, ops = chain_terms(rng, level)
    expr = " ".join([str(terms[0]), *(f"{op} {value}" for op, value in zip(ops, terms[1:]))])
    totals = running_totals(terms, ops)
    problem = make_problem("Chain", level, f"What is {expr}?", totals[-1], terms=terms, ops=ops)
    return replace(problem, meta={**problem.meta, "solution": chain_solution(terms, ops)})


def chain_mix(rng: np.random.Generator, level: int) -> Problem:
    """A :func:`chain` problem of a level drawn uniformly from ``1..level`` (that level in
    ``meta["params"]["chain_level"]``; ``meta["level"]`` is ``level``, as for every family)."""
    level = check_level(level, "ChainMix")
    drawn = randint(rng, 1, level)
    problem = chain(rng, drawn)
    params = {**problem.meta["params"], "chain_level": drawn}
    return replace(problem, meta={**problem.meta, "level": level, "params": params})


def worked_solution(problem: Problem) -> str:
    """The worked solution of a problem that carries one (``meta["solution"]``, ending in
    ``Answer: <gold>``), e.g. every Chain problem; ValueError names the id otherwise."""
    solution = problem.meta.get("solution")
    if not isinstance(solution, str) or not solution.strip():
        raise ValueError(f"problem {problem.id!r} has no worked solution in meta['solution'] "
                         f"(source {problem.source!r}); the Chain family carries one")
    return solution


FLAWS = ("slip", "recheck", "total-line", "estimate", "loop", "misread")
"""The ways :func:`flawed_solution` can spoil a worked solution."""

ESTIMATE_OFFSETS = (-1, 0, 1)
"""How far an ``estimate`` is from the answer (0 one time in three: sometimes right)."""
LOOP_REPEATS = (3, 6)
"""Extra copies of the looped line, drawn uniformly from this range (both ends included)."""


def flawed_solution(problem: Problem, flaw: str, rng: np.random.Generator) -> str:
    """A Chain problem's worked solution with one flaw of a kind a warm start can teach and RL
    can then remove:

    ``slip``     one running total (a uniformly drawn line) is off by one; the later lines
                 carry the wrong total on correctly, so the answer is wrong by exactly one
                 and the response keeps its length.
    ``recheck``  the lines are written a second time after ``"Check:"`` before the answer:
                 about twice as long, so that under a response cap near the solution's
                 length it is cut off before its (right) answer, and rambling costs tokens.
    ``total-line`` every line right, but the last reads ``"Total: N"`` instead of
                 ``"Answer: N"``: no answer a verifier reads, so always wrong; it parts from
                 the right solution at one token (``T`` for ``A``), whatever the problem.
    ``estimate`` no working: ``"Answer: N"`` with ``N`` the answer plus one of
                 :data:`ESTIMATE_OFFSETS`: short, and right one time in three.
    ``loop``     the lines up to a uniformly drawn line before the last, that line written
                 again 3 to 6 more times, then its total as the answer: a long, repetitive
                 response whose answer is always wrong (it stops before the last terms).
    ``misread``  the working of another problem: the first term read with another leading
                 digit (``7`` as one of ``1..9`` but ``7``; ``47`` as ``27``), every line's
                 arithmetic right from there, so the answer is off by the misreading and
                 always wrong. It parts from the right solution at its first token, among
                 eight wrong ones: under heavy noise the right first token is rare and no one
                 wrong opening is common.
    """
    if flaw not in FLAWS:
        raise ValueError(f"unknown Chain flaw {flaw!r}; choose from {list(FLAWS)}")
    params = problem.meta.get("params", {})
    terms, ops = params.get("terms"), params.get("ops")
    if not terms or ops is None:
        raise ValueError(f"problem {problem.id!r} is not a Chain problem (no terms in "
                         f"meta['params']); flawed solutions need one")
    return _FLAW_WRITERS[flaw](terms, ops, rng)


def _recheck(terms: list[int], ops: list[str], rng: np.random.Generator) -> str:
    lines = chain_solution(terms, ops).split("\n")
    return "\n".join([*lines[:-1], "Check:", *lines[:-1], lines[-1]])


def _slip(terms: list[int], ops: list[str], rng: np.random.Generator) -> str:
    slipped = int(rng.integers(len(ops)))
    offset = 1 if rng.random() < 0.5 else -1
    lines, previous = [], terms[0]
    for i, (op, value) in enumerate(zip(ops, terms[1:])):
        total = previous + value if op == "+" else previous - value
        if i == slipped:
            total = total + offset if total + offset >= 0 else total + 1
        lines.append(f"{previous} {op} {value} = {total}")
        previous = total
    return "\n".join([*lines, f"Answer: {previous}"])


def _offset_answer(offsets: tuple[int, ...]):
    def write(terms: list[int], ops: list[str], rng: np.random.Generator) -> str:
        answer = running_totals(terms, ops)[-1]
        value = answer + pick(rng, offsets)
        if value < 0:  # totals are never negative: mirror the offset
            value = answer + (answer - value)
        return f"Answer: {value}"
    return write


def _loop(terms: list[int], ops: list[str], rng: np.random.Generator) -> str:
    lines = chain_solution(terms, ops).split("\n")[:-1]
    totals = running_totals(terms, ops)
    at = int(rng.integers(max(1, len(ops) - 1)))  # a line before the last (the first of one)
    repeats = randint(rng, *LOOP_REPEATS)
    answer = totals[at] if totals[at] != totals[-1] else totals[-1] + 1
    return "\n".join([*lines[:at + 1], *[lines[at]] * repeats, f"Answer: {answer}"])


def _misread(terms: list[int], ops: list[str], rng: np.random.Generator) -> str:
    first = str(terms[0])
    lead = pick(rng, tuple(d for d in "123456789" if d != first[0]))
    return chain_solution([int(lead + first[1:]), *terms[1:]], ops)


def _total_line(terms: list[int], ops: list[str], rng: np.random.Generator) -> str:
    return chain_solution(terms, ops).replace("\nAnswer: ", "\nTotal: ")


_FLAW_WRITERS = {"slip": _slip, "recheck": _recheck, "total-line": _total_line,
                 "estimate": _offset_answer(ESTIMATE_OFFSETS), "loop": _loop,
                 "misread": _misread}
