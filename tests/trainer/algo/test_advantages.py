"""Group advantages and the informative-group predicate (numpy, no torch)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from verimath.trainer.algo.advantages import group_advantages, informative_groups

# Rewards of the magnitudes seen in practice (correctness +-1 plus shaping in [-1, 0]),
# on a grid so that (near-)constant groups are common.
reward_values = st.sampled_from([-2.0, -1.0, -0.75, -0.5, 0.0, 0.25, 1.0, 1.5])
reward_matrices = st.tuples(st.integers(1, 6), st.integers(1, 8)).flatmap(
    lambda pg: hnp.arrays(np.float64, pg, elements=reward_values)
)
real_rewards = st.tuples(st.integers(1, 5), st.integers(2, 8)).flatmap(
    lambda pg: hnp.arrays(
        np.float64, pg, elements=st.floats(-10, 10, allow_nan=False, allow_subnormal=False)
    )
)
correct_matrices = st.tuples(st.integers(0, 6), st.integers(1, 8)).flatmap(
    lambda pg: hnp.arrays(np.bool_, pg)
)


def reference_advantages(rewards, eps=1e-6, ddof=0):
    """Plain-loop reference of (r - mean) / (std + eps) per group."""
    out = []
    for row in rewards:
        g = len(row)
        mean = sum(row) / g
        var = sum((x - mean) ** 2 for x in row) / (g - ddof)
        std = math.sqrt(var)
        out.append([0.0 if max(row) == min(row) else (x - mean) / (std + eps) for x in row])
    return np.array(out, dtype=np.float64).reshape(np.shape(rewards))


# --- hand-worked examples -------------------------------------------------------------


def test_half_correct_group_is_plus_minus_one():
    # mean 0, population std 1: advantages are the rewards themselves (up to eps)
    adv = group_advantages([[1.0, -1.0, 1.0, -1.0]], eps=0.0)
    np.testing.assert_array_equal(adv, [[1.0, -1.0, 1.0, -1.0]])


def test_one_correct_of_four_by_hand():
    # rewards (1, -1, -1, -1): mean -1/2, population std sqrt(3)/2
    adv = group_advantages([[1.0, -1.0, -1.0, -1.0]], eps=0.0)
    s = math.sqrt(3) / 2
    np.testing.assert_allclose(adv, [[1.5 / s, -0.5 / s, -0.5 / s, -0.5 / s]], rtol=1e-15)


def test_sample_std_matches_trl_convention():
    # ddof=1 (torch.std default): squared deviations 2.25 + 3 * 0.25 = 3, / (4 - 1) -> std 1
    adv = group_advantages([[1.0, -1.0, -1.0, -1.0]], eps=0.0, ddof=1)
    np.testing.assert_allclose(adv, [[1.5, -0.5, -0.5, -0.5]], rtol=1e-15)


def test_eps_is_added_to_std():
    adv = group_advantages([[1.0, -1.0]], eps=0.5)  # std 1 -> divide by 1.5
    np.testing.assert_allclose(adv, [[1 / 1.5, -1 / 1.5]], rtol=1e-15)


def test_no_scale_is_centring_only():
    np.testing.assert_allclose(
        group_advantages([[3.0, 1.0, 2.0]], scale=False), [[1.0, -1.0, 0.0]], atol=1e-15
    )


def test_constant_group_with_zero_eps_is_zero_not_nan():
    adv = group_advantages([[0.1, 0.1, 0.1], [1.0, 0.0, 0.0]], eps=0.0)
    assert np.isfinite(adv).all()
    np.testing.assert_array_equal(adv[0], [0.0, 0.0, 0.0])


def test_single_response_group_is_zero():
    np.testing.assert_array_equal(group_advantages([[0.7], [-1.0]]), [[0.0], [0.0]])


def test_informative_by_hand():
    correct = [[True, False, False], [True, True, True], [False, False, False], [0, 1, 1]]
    assert informative_groups(correct).tolist() == [True, False, False, True]


# --- validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad, match",
    [
        ([1.0, 2.0], r"2-D"),
        (np.zeros((2, 0)), r"G = 0"),
        ([[1.0, float("nan")]], r"rewards\[0, 1\]"),
        ([[0.0, 1.0], [float("inf"), 1.0]], r"rewards\[1, 0\]"),
    ],
)
def test_bad_rewards_are_named(bad, match):
    with pytest.raises(ValueError, match=match):
        group_advantages(bad)


def test_bad_options():
    with pytest.raises(ValueError, match="eps"):
        group_advantages([[1.0, 0.0]], eps=-1.0)
    with pytest.raises(ValueError, match="ddof"):
        group_advantages([[1.0, 0.0]], ddof=2)
    with pytest.raises(ValueError, match="G >= 2"):
        group_advantages([[1.0]], ddof=1)


def test_bad_correct():
    with pytest.raises(ValueError, match="booleans"):
        informative_groups([[0, 2]])
    with pytest.raises(ValueError, match="2-D"):
        informative_groups([True, False])


def test_module_imports_without_torch():
    code = (
        "import sys; import verimath.trainer.algo.advantages; "
        "sys.exit(1 if 'torch' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# --- properties ---------------------------------------------------------------------


@settings(deadline=None)
@given(reward_matrices)
def test_matches_plain_loop_reference(rewards):
    for ddof in (0, 1) if rewards.shape[1] > 1 else (0,):
        np.testing.assert_allclose(
            group_advantages(rewards, ddof=ddof),
            reference_advantages(rewards, ddof=ddof),
            rtol=1e-12,
            atol=1e-12,
        )


@settings(deadline=None)
@given(real_rewards)
def test_zero_group_mean(rewards):
    adv = group_advantages(rewards)
    np.testing.assert_allclose(adv.mean(axis=1), 0.0, atol=1e-9)


@settings(deadline=None)
@given(real_rewards)
def test_unit_mean_square_for_nonconstant_groups(rewards):
    eps = 1e-6
    adv = group_advantages(rewards, eps=eps)
    std = rewards.std(axis=1)
    nonconst = std > 1e-3
    expected = 1.0 / (1.0 + eps / std[nonconst]) ** 2
    np.testing.assert_allclose((adv[nonconst] ** 2).mean(axis=1), expected, rtol=1e-9)


@settings(deadline=None)
@given(reward_matrices, st.data())
def test_invariant_to_constant_per_group(rewards, data):
    shift = data.draw(
        hnp.arrays(np.float64, (rewards.shape[0], 1), elements=st.sampled_from([-3.0, 0.5, 8.0]))
    )
    np.testing.assert_allclose(
        group_advantages(rewards + shift), group_advantages(rewards), atol=1e-9
    )


@settings(deadline=None)
@given(reward_matrices, st.randoms(use_true_random=False))
def test_equivariant_to_permutation_within_group(rewards, rnd):
    perms = [rnd.sample(range(rewards.shape[1]), rewards.shape[1]) for _ in rewards]
    permuted = np.stack([row[p] for row, p in zip(rewards, perms)])
    expected = np.stack([row[p] for row, p in zip(group_advantages(rewards), perms)])
    np.testing.assert_allclose(group_advantages(permuted), expected, atol=1e-12)


@settings(deadline=None)
@given(st.integers(1, 6), st.integers(1, 8), reward_values)
def test_constant_groups_are_exactly_zero(p, g, value):
    for eps in (0.0, 1e-6):
        adv = group_advantages(np.full((p, g), value), eps=eps)
        assert (adv == 0.0).all()


@settings(deadline=None)
@given(correct_matrices)
def test_informative_is_the_zero_variance_complement(correct):
    expected = correct.astype(np.float64).var(axis=1) > 0 if correct.size else np.zeros(0, bool)
    assert informative_groups(correct).tolist() == expected.tolist()
    # and it matches the groups whose +-1 advantages are not all zero
    if correct.size:
        adv = group_advantages(np.where(correct, 1.0, -1.0))
        assert informative_groups(correct).tolist() == (adv != 0).any(axis=1).tolist()


@settings(max_examples=50, deadline=None)
@given(correct_matrices)
def test_informative_accepts_integers(correct):
    assert (informative_groups(correct.astype(np.int64)) == informative_groups(correct)).all()


def test_docstring_examples():
    import doctest

    import verimath.trainer.algo.advantages as module

    assert doctest.testmod(module).failed == 0
