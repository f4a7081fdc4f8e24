"""Evaluation estimators: hand-computed cases, a plain-loop reference, and properties."""

from __future__ import annotations

import itertools
import math
from math import comb

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from verimath.trainer.evaluation.metrics import (
    avg_at_n,
    k_ladder,
    maj_at_k,
    majority_vote,
    mean_interval,
    pass_at_k,
    pass_at_k_unbiased,
    t_quantile_975,
)


def exact_equal(a: str, b: str) -> bool:
    return a == b


def test_pass_at_k_hand_computed():
    assert pass_at_k_unbiased(4, 2, 1) == pytest.approx(0.5)
    assert pass_at_k_unbiased(4, 2, 2) == pytest.approx(1 - 1 / 6)  # C(2,2)/C(4,2)
    assert pass_at_k_unbiased(4, 2, 3) == 1.0  # every 3 of 4 include a correct one
    assert pass_at_k_unbiased(5, 0, 3) == 0.0
    assert pass_at_k_unbiased(32, 1, 1) == pytest.approx(1 / 32)
    assert pass_at_k_unbiased(10, 3, 4) == pytest.approx(1 - comb(7, 4) / comb(10, 4))


def test_pass_at_k_is_stable_for_large_n():
    """1 - C(n-c,k)/C(n,k) with n = 10,000 would overflow floats if formed directly."""
    value = pass_at_k_unbiased(10_000, 3, 5000)
    expected = 1 - (comb(9997, 5000) / comb(10_000, 5000))  # exact integers in Python
    assert value == pytest.approx(expected, rel=1e-9)


def test_pass_at_k_equals_the_mean_over_all_k_subsets():
    """Plain-loop reference: the fraction of k-subsets of the samples holding a correct one."""
    row = [True, False, False, True, False]
    for k in range(1, 6):
        subsets = list(itertools.combinations(row, k))
        expected = sum(any(s) for s in subsets) / len(subsets)
        assert pass_at_k(np.array([row]), k) == pytest.approx(expected)


def test_pass_at_k_averages_over_problems():
    correct = np.array([[1, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]], dtype=bool)
    assert pass_at_k(correct, 2) == pytest.approx((0.5 + 1 + 0) / 3)


@given(st.integers(1, 40).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_properties(nc):
    n, c = nc
    values = [pass_at_k_unbiased(n, c, k) for k in range(1, n + 1)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert values[0] == pytest.approx(c / n)  # pass@1 = avg@n
    assert all(b >= a - 1e-12 for a, b in zip(values, values[1:]))  # monotone in k
    assert values[-1] == (1.0 if c else 0.0)


@given(st.lists(st.lists(st.booleans(), min_size=3, max_size=3), min_size=1, max_size=12))
def test_pass_at_1_equals_avg(rows):
    correct = np.array(rows)
    assert pass_at_k(correct, 1) == pytest.approx(avg_at_n(correct)[0])


def test_pass_at_k_rejects_bad_arguments():
    for n, c, k in ((4, 5, 1), (4, 2, 0), (4, 2, 5), (4, -1, 1)):
        with pytest.raises(ValueError):
            pass_at_k_unbiased(n, c, k)
    with pytest.raises(ValueError, match="problems, samples"):
        pass_at_k(np.zeros(4, dtype=bool), 1)


def test_k_ladder():
    assert k_ladder(1) == [1]
    assert k_ladder(4) == [1, 2, 4]
    assert k_ladder(32) == [1, 2, 4, 8, 16, 32]
    assert k_ladder(12) == [1, 2, 4, 8, 12]


def test_t_quantiles():
    assert t_quantile_975(1) == pytest.approx(12.706, abs=1e-3)
    assert t_quantile_975(29) == pytest.approx(2.045, abs=1e-3)  # 30 AIME problems
    for df, expected in ((31, 2.0395), (60, 2.0003), (120, 1.9799), (10_000, 1.9602)):
        assert t_quantile_975(df) == pytest.approx(expected, abs=2e-4)
    with pytest.raises(ValueError):
        t_quantile_975(0)


def test_mean_interval_hand_computed():
    mean, low, high = mean_interval([0.25, 0.5, 0.75, 0.5])
    half = 3.1824 * math.sqrt(0.125 / 3) / 2  # sd = sqrt(0.125 / 3), t_{0.975, 3}
    assert mean == 0.5 and low == pytest.approx(0.5 - half) and high == pytest.approx(0.5 + half)
    assert mean_interval([0.25])[0] == 0.25 and math.isnan(mean_interval([0.25])[1])
    assert mean_interval([1.0, 1.0, 0.0])[2] == 1.0  # clipped to [0, 1]


def test_avg_at_n_is_the_mean_over_all_samples():
    correct = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], dtype=bool)
    mean, low, high = avg_at_n(correct)
    assert mean == pytest.approx(0.75) and low < mean < high


def test_majority_vote_hand_computed():
    # "5" x2 wrong, "7" x3 correct (one spelled differently but verified correct)
    answers = ["5", "7", "5", "07", "7", None, None, None]
    correct = [False, True, False, True, True, False, False, False]
    assert majority_vote(answers, correct, exact_equal) == 1
    # the wrong answer wins by count; missing answers never vote
    assert majority_vote(["5", "5", "7", None, None], [False, False, True, False, False],
                         exact_equal) == 0
    assert majority_vote([None, None], [False, False], exact_equal) is None


def test_majority_ties_go_to_the_earliest_cluster():
    assert majority_vote(["3", "4", "4", "3"], [False, True, True, False], exact_equal) == 0
    assert majority_vote(["4", "3", "3", "4"], [True, False, False, True], exact_equal) == 0
    assert majority_vote(["1", "2", "3"], [False, False, True], exact_equal) == 0


@given(st.lists(st.tuples(st.sampled_from(["1", "2", "3", None]), st.booleans()),
                min_size=1, max_size=10), st.randoms())
def test_majority_is_deterministic_and_picks_a_largest_cluster(samples, rnd):
    answers = [a for a, _ in samples]
    correct = [ok and a is not None for a, ok in samples]
    first = majority_vote(answers, correct, exact_equal)
    assert first == majority_vote(list(answers), list(correct), exact_equal)
    if first is None:
        assert all(a is None for a in answers)
        return

    def size(i):
        if correct[i]:
            return sum(correct)
        return sum(1 for a, ok in zip(answers, correct) if a == answers[i] and not ok)

    assert size(first) == max(size(i) for i, a in enumerate(answers) if a is not None)


def test_maj_at_k_uses_the_first_k_samples():
    answers = [["5", "7", "7", "5"], ["1", "1", "2", "2"]]
    correct = np.array([[0, 1, 1, 0], [0, 0, 1, 1]], dtype=bool)
    assert maj_at_k(answers, correct, 1, exact_equal) == 0.0
    assert maj_at_k(answers, correct, 3, exact_equal) == 0.5  # 7,7 beat 5; 1,1 beat 2
    assert maj_at_k(answers, correct, 4, exact_equal) == 0.0  # ties: earliest cluster wins
    with pytest.raises(ValueError, match="k must be"):
        maj_at_k(answers, correct, 5, exact_equal)
