"""Batch scoring. PLACEHOLDER sequential version; the process pool comes with the rewards work."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verimath.rewards.equivalence import is_equivalent
from verimath.rewards.extract import extract_answer
from verimath.rewards.overlong import overlong_penalty


@dataclass(frozen=True)
class BatchScores:
    correct: np.ndarray
    correctness: np.ndarray
    penalty: np.ndarray
    reward: np.ndarray
    timed_out: np.ndarray
    extracted: list


class ScoringPool:
    def __init__(self, workers=None):
        self.workers = workers

    def score_batch(self, responses, golds, *, lengths=None, max_length=None, cache_length=None,
                    style="auto", mode="symbolic", timeout=5.0):
        extracted = [extract_answer(r, style=style) for r in responses]
        correct = np.array([is_equivalent(e, g, mode=mode, timeout=timeout) for e, g in zip(extracted, golds)], dtype=bool)
        correctness = np.where(correct, 1.0, -1.0)
        penalty = np.zeros(len(responses))
        if max_length is not None and lengths is not None:
            penalty = overlong_penalty(np.asarray(lengths), max_length=max_length, cache_length=cache_length)
        return BatchScores(correct, correctness, penalty, correctness + penalty, np.zeros(len(responses), bool), extracted)

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def score_batch(responses, golds, **kwargs):
    workers = kwargs.pop("workers", None)
    with ScoringPool(workers) as pool:
        return pool.score_batch(responses, golds, **kwargs)
