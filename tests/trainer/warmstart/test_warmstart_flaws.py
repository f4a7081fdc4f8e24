"""Noisy worked solutions for the warm start: how many are flawed, which flaws, which rng."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.envs import generate, worked_solution
from verimath.trainer.config import WarmstartConfig
from verimath.trainer.warmstart.supervised import noisy_solutions

PROBLEMS = [generate("Chain", 3, i, 3) for i in range(400)]


@settings(max_examples=30, deadline=None)
@given(noise=st.floats(0.0, 1.0), seed=st.integers(0, 2**16))
def test_the_flawed_share_follows_noise_and_the_rest_are_the_worked_solutions(noise, seed):
    texts = noisy_solutions(PROBLEMS, noise=noise, flaws=("slip", "recheck"),
                            rng=np.random.default_rng(seed))
    flawed = [t != worked_solution(p) for t, p in zip(texts, PROBLEMS)]
    # 400 draws: the share is within 5 standard deviations of noise (or 3 draws, at the ends)
    assert abs(np.mean(flawed) - noise) <= 5 * np.sqrt(noise * (1 - noise) / 400) + 3 / 400
    rechecks = sum("Check:" in t for t in texts)
    assert rechecks <= sum(flawed)


def test_flaws_are_drawn_from_the_list_only_and_the_same_rng_gives_the_same_texts():
    only_recheck = noisy_solutions(PROBLEMS, noise=1.0, flaws=("recheck",),
                                   rng=np.random.default_rng(1))
    assert all("Check:" in t for t in only_recheck)
    only_slip = noisy_solutions(PROBLEMS, noise=1.0, flaws=("slip",),
                                rng=np.random.default_rng(1))
    assert not any("Check:" in t for t in only_slip)
    assert all(t.split("Answer: ")[1] != p.answer for t, p in zip(only_slip, PROBLEMS))
    again = noisy_solutions(PROBLEMS, noise=1.0, flaws=("slip",), rng=np.random.default_rng(1))
    assert again == only_slip


def test_noise_zero_is_the_worked_solutions_and_bad_settings_are_named():
    assert noisy_solutions(PROBLEMS[:5], noise=0.0, flaws=("slip",),
                           rng=np.random.default_rng(0)) == [worked_solution(p)
                                                            for p in PROBLEMS[:5]]
    with pytest.raises(ValueError, match="warmstart.flaws.*'typo'"):
        noisy_solutions(PROBLEMS[:5], noise=0.5, flaws=("typo",), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="warmstart.flaws"):
        WarmstartConfig(targets="solution", noise=0.3, flaws=["typo"])
    assert WarmstartConfig(targets="solution", noise=0.3, flaws=["slip", "recheck"]).noise == 0.3
