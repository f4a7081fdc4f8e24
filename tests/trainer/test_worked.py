"""Worked solutions of arithmetic expressions, and the warm start that trains on them."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from verimath.envs import generate
from verimath.trainer.tiny import make_char_tokenizer, make_tiny_model
from verimath.trainer.warmstart import warmstart
from verimath.trainer.worked import (
    NOISE_OFFSETS,
    parse_expression,
    problem_expression,
    worked_lines,
    worked_targets,
)

LINE = re.compile(r"^(\(-\d+\)|\d+) ([-+*]) (\(-\d+\)|\d+) = (-?\d+)$")


def test_hand_worked_solutions():
    assert worked_lines("10 * (18 - 10)") == (["18 - 10 = 8", "10 * 8 = 80"], 80)
    assert worked_lines("11 * 18 + 20") == (["11 * 18 = 198", "198 + 20 = 218"], 218)
    assert worked_lines("30 - ((-6) - 2 + 7)") == (
        ["(-6) - 2 = -8", "(-8) + 7 = -1", "30 - (-1) = 31"], 31)
    assert worked_lines("20 - 2 - 6")[1] == 12  # left to right
    assert worked_lines("7") == ([], 7)
    assert worked_lines("10 * (18 - 10)", error_step=0, offset=-1) == (
        ["18 - 10 = 7", "10 * 7 = 70"], 70)  # the later line follows the wrong value


@pytest.mark.parametrize("text", ["1 +", "(1 + 2", "1 + 2)", "1 / 2", "x * 2", ""])
def test_malformed_expressions_are_refused(text):
    with pytest.raises(ValueError, match="worked solution"):
        parse_expression(text)


@given(st.integers(1, 5), st.integers(0, 2**20), st.integers(0, 10**6))
def test_generated_problems_solve_to_their_answer_one_line_per_operation(level, seed, index):
    problem = generate("Arithmetic", seed, index, level)
    expression = problem_expression(problem)
    lines, value = worked_lines(expression)
    assert str(value) == problem.answer
    assert len(lines) == len(re.findall(r" [-+*] ", expression))
    assert all(LINE.match(line) for line in lines)
    for line in lines:  # every line is right
        a, op, b, c = LINE.match(line).groups()
        a, b = int(a.strip("()")), int(b.strip("()"))
        assert int(c) == (a + b if op == "+" else a - b if op == "-" else a * b)


@given(st.integers(0, 2**20), st.floats(0, 1))
def test_targets_end_with_the_answer_line_and_noise_puts_one_line_off(seed, noise):
    problems = [generate("Arithmetic", seed, i, 3) for i in range(8)]
    rng = np.random.default_rng(seed)
    targets = worked_targets([problem_expression(p) for p in problems],
                             [p.answer for p in problems], answer_prefix="Answer: ",
                             noise=noise, rng=rng)
    for problem, target in zip(problems, targets):
        *lines, last = target.split("\n")
        off = [i for i, line in enumerate(lines)
               if line != worked_lines(problem_expression(problem))[0][i]]
        assert last.startswith("Answer: ") and len(lines) == 2
        if last == f"Answer: {problem.answer}":
            continue  # right (or an error that a later operation cancelled)
        assert off and (LINE.match(lines[off[0]]).group(4) != worked_lines(
            problem_expression(problem))[0][off[0]].split(" = ")[1])
    exact = worked_targets([problem_expression(p) for p in problems],
                           [p.answer for p in problems], answer_prefix="Answer: ",
                           noise=0.0, rng=rng)
    assert all(t.endswith(f"\nAnswer: {p.answer}") for t, p in zip(exact, problems))


def test_noise_one_changes_one_result_by_a_known_offset():
    problem = generate("Arithmetic", 0, 4, 3)  # "What is 10 * (18 - 10)?"
    right, _ = worked_lines(problem_expression(problem))
    for seed in range(20):
        target = worked_targets([problem_expression(problem)], [problem.answer],
                                answer_prefix="Answer: ", noise=1.0,
                                rng=np.random.default_rng(seed))[0]
        lines = target.split("\n")[:-1]
        first = next(i for i, (a, b) in enumerate(zip(lines, right)) if a != b)
        got, want = (int(x.split(" = ")[1]) for x in (lines[first], right[first]))
        assert got - want in NOISE_OFFSETS


def test_problems_without_an_expression_get_the_answer_line():
    problem = generate("Linear", 0, 0, 1)
    assert problem_expression(problem) is None
    assert worked_targets([None, None], ["5", "x/2"], answer_prefix="Answer: ", noise=0.0,
                          rng=np.random.default_rng(0)) == ["Answer: 5", "Answer: x/2"]
    noisy = worked_targets([None, None], ["5", "x/2"], answer_prefix="Answer: ", noise=1.0,
                           rng=np.random.default_rng(0))
    assert int(noisy[0].removeprefix("Answer: ")) - 5 in NOISE_OFFSETS
    assert noisy[1] == "Answer: x/2"  # not an integer: kept
    with pytest.raises(ValueError, match="noise must be in"):
        worked_targets([None], ["5"], answer_prefix="", noise=2.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="worked_frac must be in"):
        worked_targets([None], ["5"], answer_prefix="", noise=0.0, worked_frac=-0.1,
                       rng=np.random.default_rng(0))


def test_worked_frac_mixes_worked_solutions_and_answer_lines():
    problems = [generate("Arithmetic", 0, i, 3) for i in range(2000)]
    expressions, answers = [problem_expression(p) for p in problems], [p.answer for p in problems]
    targets = worked_targets(expressions, answers, answer_prefix="Answer: ", noise=0.0,
                             worked_frac=0.3, rng=np.random.default_rng(0))
    worked = [t for t in targets if "\n" in t]
    assert abs(len(worked) / len(targets) - 0.3) < 0.03
    for target, problem in zip(targets, problems):
        assert target.endswith(f"Answer: {problem.answer}")
        assert target.count("\n") in (0, 2)  # the answer line alone, or two steps before it
    wrong = worked_targets(expressions, answers, answer_prefix="Answer: ", noise=1.0,
                           worked_frac=0.0, rng=np.random.default_rng(0))
    for target, answer in zip(wrong, answers):
        assert int(target.removeprefix("Answer: ")) - int(answer) in NOISE_OFFSETS


def test_warm_start_on_worked_targets_lowers_the_loss():
    tokenizer = make_char_tokenizer()
    model = make_tiny_model(tokenizer, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    kwargs = {"family": "Arithmetic", "level": 3, "seed": 3, "excluded": set(),
              "batch_size": 8, "lr": 1e-2, "template": "{prompt}\n",
              "use_chat_template": False, "answer_prefix": "Answer: ", "worked_frac": 0.5}
    first = warmstart(model, tokenizer, steps=1, **kwargs)["warmstart/loss"]
    later = warmstart(model, tokenizer, steps=20, **kwargs)["warmstart/loss"]
    assert later < first / 2
