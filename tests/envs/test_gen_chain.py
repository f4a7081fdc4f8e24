"""The Chain family: worked solutions with visible steps, lengths that grow with the level."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from strategies import generator_items
from verimath.envs import FAMILIES, generate, worked_solution
from verimath.envs.gen_chain import CHAIN_LEVELS
from verimath.envs.generators import MIXED_DEFAULT


@settings(max_examples=100, deadline=None)
@given(item=generator_items)
def test_solution_has_one_line_per_operation_and_ends_in_the_answer(item):
    seed, index, level = item
    problem = generate("Chain", seed, index, level)
    solution = worked_solution(problem)
    terms = CHAIN_LEVELS[level][0]
    assert solution.count("\n") == terms - 1  # terms - 1 steps, then the answer line
    assert solution.endswith(f"\nAnswer: {problem.answer}")
    assert problem.meta["params"]["terms"][0] == int(solution.split(" ")[0])


def test_solution_length_grows_with_level_within_thirty_to_one_fifty_characters():
    means = []
    for level in range(1, 6):
        lengths = [len(worked_solution(generate("Chain", 0, i, level))) for i in range(100)]
        assert 25 <= min(lengths) and max(lengths) <= 150, (level, min(lengths), max(lengths))
        means.append(np.mean(lengths))
    assert means == sorted(means) and means[-1] > 3 * means[0], means


def test_worked_solution_names_the_problem_when_there_is_none():
    problem = generate("Arithmetic", 0, 0, 1)
    with pytest.raises(ValueError, match="gen/Arithmetic/L1/0/0"):
        worked_solution(problem)


def test_mixed_default_leaves_chain_out_but_weights_may_name_it():
    assert "Chain" in FAMILIES and "Chain" not in MIXED_DEFAULT
    sources = {generate(FAMILIES["Mixed"], 0, i, 2).source for i in range(200)}
    assert "gen/Chain" not in sources and len(sources) == len(MIXED_DEFAULT)
    from verimath.envs import make_mixed

    assert generate(make_mixed({"Chain": 1.0}), 0, 0, 2).source == "gen/Chain"


@pytest.mark.parametrize("style", ["dapo", "auto"])
def test_worked_solutions_score_correct_and_a_wrong_total_does_not(style):
    from verimath.rewards import score_batch

    problems = [generate("Chain", 5, i, level) for i in range(20) for level in (1, 3, 5)]
    solutions = [worked_solution(p) for p in problems]
    golds = [p.answer for p in problems]
    assert score_batch(solutions, golds, style=style, mode="integer").correct.all()
    wrong = [s.rsplit("Answer: ", 1)[0] + f"Answer: {int(g) + 1}" for s, g in zip(solutions, golds)]
    assert not score_batch(wrong, golds, style=style, mode="integer").correct.any()
