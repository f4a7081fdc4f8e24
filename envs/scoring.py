"""How environments turn responses into rewards (shared by `MathEnv` and the group env).

Reward of one single-turn response (DAPO, Yu et al. 2025, arXiv 2503.14476)::

    reward = (correct_reward if correct else wrong_reward) + penalty

``correct`` comes from `verimath.rewards.score_batch` (answer extraction with ``style``,
equivalence with ``mode`` under the grading ``conventions``; a verification timeout counts as
wrong and sets ``timed_out``), and ``penalty`` is DAPO's soft overlong punishment in [-1, 0]
when ``max_length`` and ``cache_length`` are set (0 otherwise). Token counts come with the
action (`Response`) or from the env's tokenizer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from verimath.rewards import BatchScores, Conventions, score_batch
from verimath.rewards.equality.conventions import as_conventions
from verimath.rewards.equality.equivalence import MODES, check_timeout
from verimath.rewards.extraction.final_answer import STYLES


class Response(str):
    """A response text that carries its token count: ``Response("Answer: 4", num_tokens=7)``.

    It *is* a ``str`` (so it lies in the env's Text action space and works wherever text does);
    ``num_tokens`` feeds the overlong penalty without a tokenizer.
    """

    num_tokens: int | None

    def __new__(cls, text: str, num_tokens: int | None = None) -> Response:
        obj = super().__new__(cls, text)
        if num_tokens is not None and (not _is_int(num_tokens) or num_tokens < 0):
            raise ValueError(f"num_tokens must be a non-negative int, got {num_tokens!r}")
        obj.num_tokens = None if num_tokens is None else int(num_tokens)
        return obj

    def __reduce__(self):
        return (Response, (str(self), self.num_tokens))


@dataclass(frozen=True)
class RewardSpec:
    """Scoring settings of an environment.

    Attributes:
        correct_reward: reward of a correct answer (DAPO: +1).
        wrong_reward: reward of a wrong, missing or timed-out answer (DAPO: -1).
        style: answer extraction, one of ``verimath.rewards.extraction.final_answer.STYLES``: "auto"
            (``Answer:`` line, then ``\\boxed{}``), "dapo", "boxed", "flexible".
        mode: equivalence mode of `verimath.rewards.is_equivalent` ("symbolic", "integer",
            "string").
        max_length: ``L_max`` of the soft overlong punishment, in tokens; None disables it.
        cache_length: ``L_cache``, the punishment interval; required with max_length.
        timeout: seconds allowed for one symbolic verification.
        conventions: the grading conventions (`verimath.rewards.Conventions`): a
            ``Conventions``, ``None`` or ``"default"``, ``"strict"``, or a dict of settings;
            stored as a ``Conventions``.
    """

    correct_reward: float = 1.0
    wrong_reward: float = -1.0
    style: str = "auto"
    mode: str = "symbolic"
    max_length: int | None = None
    cache_length: int | None = None
    timeout: float = 5.0
    conventions: Conventions | str | dict | None = None

    def __post_init__(self) -> None:
        for name in ("correct_reward", "wrong_reward", "timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        if self.correct_reward <= self.wrong_reward:
            raise ValueError(
                f"correct_reward ({self.correct_reward}) must exceed wrong_reward "
                f"({self.wrong_reward}); otherwise the env rewards wrong answers"
            )
        if self.style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {self.style!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        for name in ("max_length", "cache_length"):
            value = getattr(self, name)
            if value is not None and not _is_int(value):
                raise ValueError(f"{name} must be an integer number of tokens (or None), "
                                 f"got {value!r}")
        if (self.max_length is None) != (self.cache_length is None):
            raise ValueError(
                "max_length and cache_length go together (DAPO: max_length=16384, "
                f"cache_length=4096); got max_length={self.max_length}, "
                f"cache_length={self.cache_length}"
            )
        if self.max_length is not None and not 0 < self.cache_length <= self.max_length:
            raise ValueError(
                f"need 0 < cache_length <= max_length, got cache_length={self.cache_length}, "
                f"max_length={self.max_length}"
            )
        check_timeout(self.timeout)
        object.__setattr__(self, "conventions", as_conventions(self.conventions))

    @property
    def shapes_length(self) -> bool:
        return self.max_length is not None


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


Tokenizer = Callable[[str], Any]


def count_tokens(text: str, tokenizer: Any) -> int:
    """Token count of `text`: ``len(tokenizer.encode(text, add_special_tokens=False))`` for a
    Hugging Face tokenizer, ``len(tokenizer.encode(text))`` for other objects with ``encode``,
    else ``tokenizer(text)`` (an int, or a sequence whose length is taken)."""
    encode = getattr(tokenizer, "encode", None)
    if encode is not None:
        try:
            ids = encode(text, add_special_tokens=False)
        except TypeError:
            ids = encode(text)
        return len(ids)
    result = tokenizer(text)
    return int(result) if isinstance(result, (int, np.integer)) else len(result)


def resolve_lengths(responses: Sequence[str], lengths: Sequence[int] | None, tokenizer: Any,
                    spec: RewardSpec) -> np.ndarray | None:
    """Token counts for the overlong penalty, from (in order) `lengths`, `Response.num_tokens`
    or `tokenizer`; None when the spec does not shape lengths."""
    if not spec.shapes_length:
        return None
    if lengths is not None:
        out = np.asarray(lengths, dtype=np.int64)
        if out.shape != (len(responses),):
            raise ValueError(f"lengths has shape {out.shape}; expected ({len(responses)},), "
                             "one token count per response")
        return out
    counts = []
    for i, text in enumerate(responses):
        n = getattr(text, "num_tokens", None)
        if n is None:
            if tokenizer is None:
                raise ValueError(
                    f"response {i} has no token count, but max_length is set: pass "
                    "Response(text, num_tokens=n), lengths=..., or give the env a tokenizer"
                )
            n = count_tokens(text, tokenizer)
        counts.append(n)
    return np.asarray(counts, dtype=np.int64)


def shaped_rewards(correct: np.ndarray, penalty: np.ndarray, spec: RewardSpec) -> np.ndarray:
    """``where(correct, correct_reward, wrong_reward) + penalty``, as float64."""
    base = np.where(np.asarray(correct, dtype=bool), spec.correct_reward, spec.wrong_reward)
    return base.astype(np.float64) + np.asarray(penalty, dtype=np.float64)


def score_responses(responses: Sequence[str], golds: Sequence[str], spec: RewardSpec, *,
                    lengths: Sequence[int] | None = None, tokenizer: Any = None,
                    workers: int | None = None) -> tuple[BatchScores, np.ndarray]:
    """Score a batch with ONE `score_batch` call; returns the scores and the shaped rewards."""
    for i, text in enumerate(responses):
        if not isinstance(text, str):
            raise TypeError(f"response {i} must be a str, got {type(text).__name__}")
    counts = resolve_lengths(responses, lengths, tokenizer, spec)
    scores = score_batch(
        [str(r) for r in responses], list(golds), lengths=counts,
        max_length=spec.max_length, cache_length=spec.cache_length,  # None unless shaping
        style=spec.style, mode=spec.mode, timeout=spec.timeout, workers=workers,
        conventions=spec.conventions,
    )
    return scores, shaped_rewards(scores.correct, scores.penalty, spec)
