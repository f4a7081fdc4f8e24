"""Generator contracts: purity, seeding, levels, the Mixed family, answer format."""

from __future__ import annotations

import re
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import generator_items
from verimath.envs import FAMILIES, Problem, generate, make_mixed, problem_stream
from verimath.envs.generators import BASE_FAMILIES, MIXED_DEFAULT, item_rng
from verimath.envs.generators.common import format_number, linear_expr

ANSWER = re.compile(r"-?\d+(/\d+)?")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_is_pure_function_of_rng_and_level(family):
    for level in (1, 3, 5):
        a = FAMILIES[family](np.random.default_rng(42), level)
        b = FAMILIES[family](np.random.default_rng(42), level)
        assert isinstance(a, Problem) and a == b and a.meta == b.meta


@settings(max_examples=200, deadline=None)
@given(item=generator_items, family=st.sampled_from(sorted(FAMILIES)))
def test_generate_is_random_access_and_answers_are_exact(item, family):
    seed, index, level = item
    problem = generate(family, seed, index, level)
    assert problem == generate(family, seed, index, level)
    assert problem.id == f"gen/{family}/L{level}/{seed}/{index}"
    assert problem.meta["seed"] == seed and problem.meta["index"] == index
    assert problem.meta["level"] == level
    assert ANSWER.fullmatch(problem.answer), problem.answer
    if "BaseConversion" not in problem.source:
        assert format_number(Fraction(problem.answer)) == problem.answer  # reduced, canonical


def test_seed_sequence_streams_do_not_overlap_like_seed_plus_index():
    # seed + index would make item 1 of seed 0 equal item 0 of seed 1.
    assert generate("Arithmetic", 0, 1, 5).prompt != generate("Arithmetic", 1, 0, 5).prompt
    rng_a, rng_b = item_rng(3, 4), np.random.default_rng(np.random.SeedSequence([3, 4]))
    assert rng_a.integers(1 << 62) == rng_b.integers(1 << 62)


@pytest.mark.parametrize("family", sorted(BASE_FAMILIES))
def test_seeds_give_varied_problems(family):
    prompts = {generate(family, seed, 0, 3).prompt for seed in range(40)}
    assert len(prompts) >= 15, f"{family} level 3 repeats itself: {len(prompts)} distinct of 40"


@pytest.mark.parametrize("family", sorted(BASE_FAMILIES))
def test_level_five_is_longer_than_level_one(family):
    def mean_size(level):
        return np.mean([len(generate(family, 0, i, level).prompt) for i in range(60)])

    assert mean_size(5) > mean_size(1)


def test_arithmetic_level_one_is_tiny():
    for index in range(300):
        p = generate("Arithmetic", 0, index, 1)
        m = re.fullmatch(r"What is (\d) ([+-]) (\d)\?", p.prompt)
        assert m, p.prompt
        assert 0 <= int(p.answer) <= 18 and len(p.prompt) <= 14


def test_arithmetic_levels_grow_in_operands():
    operands = [np.mean([len(re.findall(r"\d+", generate("Arithmetic", 0, i, level).prompt))
                         for i in range(100)]) for level in (1, 2, 3, 4, 5)]
    assert operands == sorted(operands) and operands[-1] > operands[0]


@pytest.mark.parametrize("level", [0, 6, 2.5, "3", True])
def test_bad_level_is_a_clear_error(level):
    with pytest.raises((ValueError, TypeError), match="level|1..5"):
        generate("Linear", 0, 0, level)


def test_unknown_family_and_negative_seed_are_clear_errors():
    with pytest.raises(ValueError, match="unknown family 'Calculus'"):
        generate("Calculus", 0, 0, 1)
    with pytest.raises(ValueError, match="seed and index must be >= 0"):
        generate("Linear", -1, 0, 1)


def test_mixed_follows_its_weights():
    gen = make_mixed({"Arithmetic": 3, "Linear": 1})
    counts = Counter(generate(gen, 0, i, 2).source for i in range(800))
    assert set(counts) == {"gen/Arithmetic", "gen/Linear"}
    share = counts["gen/Arithmetic"] / 800
    assert 0.70 < share < 0.80, share


def test_default_mixed_covers_every_family():
    sources = {generate("Mixed", 0, i, 1).source for i in range(400)}
    assert sources == {f"gen/{f}" for f in MIXED_DEFAULT}


@pytest.mark.parametrize("weights", [{}, {"Algebra": 1}, {"Linear": -1}, {"Linear": 0},
                                     {"Linear": float("nan")}])
def test_bad_mixed_weights_are_rejected(weights):
    from verimath.envs.generators import _Mixed

    with pytest.raises(ValueError, match="Mixed"):
        _Mixed(weights)


def test_problem_stream_matches_generate():
    stream = list(problem_stream("Modular", seed=9, level=4, start=5, stop=9))
    assert stream == [generate("Modular", 9, i, 4) for i in range(5, 9)]


def test_linear_expr_renders_signs_and_units():
    assert linear_expr([(1, "x"), (-1, "y"), (0, ""), (-5, "")]) == "x - y - 5"
    assert linear_expr([(-3, "x^2"), (2, "x"), (Fraction(1, 2), "")]) == "-3x^2 + 2x + 1/2"
    assert linear_expr([(0, "x")]) == "0"


def test_custom_and_weighted_generators_are_named_in_ids():
    weighted = make_mixed({"Linear": 1, "Percent": 1})
    assert generate(weighted, 3, 5, 2).id == "gen/Mixed/L2/3/5"

    def halves(rng, level):
        n = int(rng.integers(1, 100)) * 2
        return Problem(id="?", prompt=f"Half of {n}?", answer=str(n // 2), source="halves")

    problem = generate(halves, 1, 2, 4)
    assert problem.id == "gen/halves/L4/1/2" and problem.meta == {"seed": 1, "index": 2}
