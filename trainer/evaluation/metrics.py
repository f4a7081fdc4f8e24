"""Evaluation estimators over ``P`` problems with ``n`` verified samples each. Pure functions.

``avg@n`` (the DAPO paper's AIME metric, e.g. avg@32) is the mean correctness of all
samples; its 95% interval is Student's t over the ``P`` per-problem accuracies
(``mean +- t_{0.975, P-1} * sd / sqrt(P)``), so it measures how much the score would move
with another draw of problems of the same kind, which is what limits a 30-problem
benchmark.

``pass@k`` is the unbiased estimator of Chen et al. (2021, "Evaluating Large Language
Models Trained on Code"): with ``c`` correct among ``n`` samples,
``pass@k = 1 - C(n - c, k) / C(n, k)``, the probability that ``k`` samples drawn without
replacement from the ``n`` include a correct one, averaged over problems. It is computed as
``1 - prod_{i = n - c + 1}^{n} (1 - k / i)``, which never forms a large binomial. (Taking
the best of the first ``k`` samples, or bootstrap "best@k", is biased low.) ``pass@1``
equals ``avg@n``.

``maj@k`` votes among the extracted answers of the first ``k`` samples: answers are grouped
into clusters of equivalent answers, the largest cluster wins (ties go to the cluster whose
first member came first), and the problem counts as solved when the winning cluster is
correct. Samples without an answer do not vote; a problem where none answered is unsolved.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

# Two-sided 95% quantiles of Student's t, t_{0.975, df}, for df = 1..30.
_T975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
         2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
         2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423)
_Z975 = 1.959963984540054


def t_quantile_975(df: int) -> float:
    """``t_{0.975, df}``: a table up to 30 degrees of freedom, then the Cornish-Fisher
    expansion around the normal quantile (error below 1e-4)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


def mean_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean and its 95% Student-t interval, clipped to [0, 1]
    when the values are fractions. One value has no interval: ``low = high = nan``."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("mean_interval needs at least one value")
    mean = float(x.mean())
    if x.size == 1:
        return mean, math.nan, math.nan
    half = t_quantile_975(x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    low, high = mean - half, mean + half
    if x.min() >= 0 and x.max() <= 1:
        low, high = max(low, 0.0), min(high, 1.0)
    return mean, low, high


def _correct_matrix(correct) -> np.ndarray:
    c = np.asarray(correct, dtype=bool)
    if c.ndim != 2 or c.shape[0] == 0 or c.shape[1] == 0:
        raise ValueError(f"correct must be a (problems, samples) array with both sizes >= 1, "
                         f"got shape {c.shape}")
    return c


def avg_at_n(correct) -> tuple[float, float, float]:
    """``(avg@n, low, high)`` of a ``(P, n)`` correctness matrix (95% interval over problems)."""
    return mean_interval(_correct_matrix(correct).mean(axis=1))


def pass_at_k_unbiased(n: int, c: int, k: int) -> float:
    """``1 - C(n - c, k) / C(n, k)`` for one problem: ``c`` of ``n`` samples correct."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    i = np.arange(n - c + 1, n + 1, dtype=np.float64)
    return float(1.0 - np.prod(1.0 - k / i))


def pass_at_k(correct, k: int) -> float:
    """Mean unbiased pass@k over problems of a ``(P, n)`` correctness matrix."""
    c = _correct_matrix(correct)
    n = c.shape[1]
    return float(np.mean([pass_at_k_unbiased(n, int(row.sum()), k) for row in c]))


def k_ladder(n: int) -> list[int]:
    """``[1, 2, 4, ..., n]``: powers of two below ``n``, then ``n`` itself."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    ladder, k = [], 1
    while k < n:
        ladder.append(k)
        k *= 2
    return ladder + [n]


def majority_vote(answers: Sequence[str | None], correct: Sequence[bool],
                  same: Callable[[str, str], bool]) -> int | None:
    """Index of the sample whose answer wins the vote, or ``None`` when nobody answered.

    Correct samples form one cluster (each is equivalent to the gold answer, so to each
    other); any other answer joins the first cluster of other answers whose first member it
    is ``same`` as, else starts a cluster. The largest cluster wins; among equally large ones,
    the one whose first member has the lowest index. Returns that first member's index.
    """
    if len(answers) != len(correct):
        raise ValueError(f"{len(answers)} answers but {len(correct)} verdicts")
    clusters: list[list[int]] = []  # each a list of sample indices, in order
    gold_cluster: list[int] | None = None
    for i, (answer, ok) in enumerate(zip(answers, correct)):
        if answer is None:
            continue
        if ok:
            if gold_cluster is None:
                gold_cluster = []
                clusters.append(gold_cluster)
            gold_cluster.append(i)
            continue
        home = next((c for c in clusters if c is not gold_cluster
                     and same(answers[c[0]], answer)), None)
        if home is None:
            clusters.append([i])
        else:
            home.append(i)
    if not clusters:
        return None
    best = max(clusters, key=lambda c: (len(c), -c[0]))
    return best[0]


def maj_at_k(answers: Sequence[Sequence[str | None]], correct, k: int,
             same: Callable[[str, str], bool]) -> float:
    """Fraction of problems whose majority answer among the first ``k`` samples is correct."""
    c = _correct_matrix(correct)
    if not 1 <= k <= c.shape[1]:
        raise ValueError(f"k must be in 1..{c.shape[1]}, got {k}")
    if len(answers) != c.shape[0]:
        raise ValueError(f"{len(answers)} answer lists for {c.shape[0]} problems")
    wins = 0
    for row_answers, row_correct in zip(answers, c):
        winner = majority_vote(list(row_answers[:k]), list(row_correct[:k]), same)
        wins += winner is not None and bool(row_correct[winner])
    return wins / c.shape[0]
