"""Probes of a saved policy: text measures, the first token's mass, seeded samples."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import generator_items
from tiny_models import TEMPLATE, fit_seven_or_eight
from verimath.envs import Problem, flawed_solution, generate, worked_solution
from verimath.trainer.ablation import probes
from verimath.trainer.config.files import load_config


@settings(max_examples=60, deadline=None)
@given(item=generator_items, cut=st.integers(1, 200))
def test_a_right_solution_and_its_beginnings_are_sound_and_work_the_chain(item, cut):
    seed, index, level = item
    problem = generate("Chain", seed, index, level)
    solution = worked_solution(problem)
    assert probes.is_sound_prefix(solution[:cut], problem)
    assert probes.is_worked(solution[:cut], problem)
    assert not probes.is_sound_prefix("", problem) and not probes.is_worked("", problem)


@settings(max_examples=60, deadline=None)
@given(item=generator_items, draw=st.integers(0, 2**32 - 1))
def test_flawed_solutions_read_as_their_flaw(item, draw):
    seed, index, level = item
    problem = generate("Chain", seed, index, level)
    rng = np.random.default_rng(draw)
    loop = flawed_solution(problem, "loop", rng)
    estimate = flawed_solution(problem, "estimate", rng)
    assert probes.has_repeated_line(loop) and probes.is_worked(loop, problem)
    assert not probes.is_worked(estimate, problem) and not probes.has_repeated_line(estimate)
    assert not probes.is_sound_prefix(flawed_solution(problem, "total-line", rng), problem)


def test_right_solutions_of_level_one_never_repeat_a_line():
    for i in range(300):
        assert not probes.has_repeated_line(worked_solution(generate("Chain", 4, i, 1)))
    assert probes.has_repeated_line("1 + 2 = 3\nCheck:\n1 + 2 = 3\nAnswer: 3")
    assert not probes.has_repeated_line("Answer: 3\nAnswer: 3")  # answer lines do not count


def _problem(solution: str, gold: str, index: int) -> Problem:
    return Problem(id=f"p{index}", prompt=f"What is {index} + 0?", answer=gold, source="test",
                   meta={"solution": solution})


@pytest.fixture(scope="module")
def seven_or_eight(tmp_path_factory):
    return fit_seven_or_eight(tmp_path_factory.mktemp("seven") / "model")


def _config(**over):
    config = load_config("tiny", [f"{k.replace('__', '.')}={v}" for k, v in over.items()])
    assert config.model.prompt_template == TEMPLATE  # the model's prompts end in a newline
    return config


def test_first_token_mass_is_the_policys_probability_of_the_solutions_first_token(
        seven_or_eight):
    model, tokenizer = seven_or_eight
    starts_like_it = [_problem("Answer: 7", "7", i) for i in range(3)]
    starts_otherwise = [_problem("7 + 0 = 7\nAnswer: 7", "7", i) for i in range(3)]
    config = _config()
    assert probes.first_token_mass(model, tokenizer, starts_like_it, config) > 0.99
    assert probes.first_token_mass(model, tokenizer, starts_otherwise, config) < 0.01


def test_samples_are_seeded_scored_and_marked_when_cut(seven_or_eight):
    model, tokenizer = seven_or_eight
    problems = [_problem("Answer: 7", "7", i) for i in range(6)]
    config = _config()
    one = probes.sample(model, tokenizer, problems, config, k=8)
    again = probes.sample(model, tokenizer, problems, config, k=8)
    assert one.texts == again.texts and len(one.texts) == 48
    assert set(one.texts) == {"Answer: 7", "Answer: 8"}
    assert np.array_equal(one.correct, [t == "Answer: 7" for t in one.texts])
    assert (one.lengths == 10).all() and not one.truncated.any()  # 9 characters, then EOS
    cut = probes.sample(model, tokenizer, problems, _config(rollout__max_new_tokens=5), k=2)
    assert cut.truncated.all() and (cut.lengths == 5).all() and not cut.correct.any()
