"""The Chain family: worked solutions with visible steps, lengths that grow with the level."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import generator_items
from verimath.envs import FAMILIES, FLAWS, flawed_solution, generate, worked_solution
from verimath.envs.generators import MIXED_DEFAULT
from verimath.envs.generators.chain import CHAIN_LEVELS


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


@settings(max_examples=50, deadline=None)
@given(item=generator_items)
def test_chain_mix_poses_a_chain_of_a_level_up_to_its_own(item):
    seed, index, level = item
    problem = generate("ChainMix", seed, index, level)
    drawn = problem.meta["params"]["chain_level"]
    assert problem.source == "gen/Chain" and 1 <= drawn <= level == problem.meta["level"]
    assert problem.id == f"gen/ChainMix/L{level}/{seed}/{index}"
    terms = CHAIN_LEVELS[drawn][0]
    assert len(problem.meta["params"]["terms"]) == terms
    assert flawed_solution(problem, "recheck", np.random.default_rng(0)).count("Check:") == 1


def test_chain_mix_draws_every_level_up_to_its_own_about_equally():
    counts = np.bincount([generate("ChainMix", 3, i, 3).meta["params"]["chain_level"]
                          for i in range(600)], minlength=6)
    assert counts[0] == 0 and counts[4:].sum() == 0
    assert all(150 <= c <= 250 for c in counts[1:4]), counts  # 200 each expected
    assert {generate("ChainMix", 3, i, 1).meta["params"]["chain_level"] for i in range(50)} == {1}


def test_mixed_default_leaves_chain_out_but_weights_may_name_it():
    assert "Chain" in FAMILIES and "Chain" not in MIXED_DEFAULT
    assert "ChainMix" in FAMILIES and "ChainMix" not in MIXED_DEFAULT
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


def _flawed(item, flaw: str, draw: int):
    """A generated Chain problem (``item`` = seed, index, level) and its ``flaw`` solution."""
    problem = generate("Chain", *item)
    return problem, flawed_solution(problem, flaw, np.random.default_rng(draw))


def _lines(text: str) -> tuple[list[tuple[int, str, int, int]], str]:
    """The ``a op b = c`` lines of a solution (parsed) and its last line."""
    rows = []
    for line in text.split("\n")[:-1]:
        if line == "Check:":
            continue
        a, op, b, _, c = line.split(" ")
        rows.append((int(a), op, int(b), int(c)))
    return rows, text.split("\n")[-1]


@settings(max_examples=100, deadline=None)
@given(item=generator_items, draw=st.integers(0, 2**32 - 1))
def test_a_slip_is_one_wrong_line_carried_on_to_an_answer_off_by_one(item, draw):
    problem, text = _flawed(item, "slip", draw)
    rows, last = _lines(text)
    wrong = [(a + b if op == "+" else a - b) != c for a, op, b, c in rows]
    assert sum(wrong) == 1  # exactly one line's arithmetic is off
    assert all(rows[i][3] == rows[i + 1][0] for i in range(len(rows) - 1))  # carried on
    answer = int(last.removeprefix("Answer: "))
    assert abs(answer - int(problem.answer)) == 1 and answer == rows[-1][3]
    assert len(rows) == len(worked_solution(problem).split("\n")) - 1


@settings(max_examples=50, deadline=None)
@given(item=generator_items)
def test_a_recheck_writes_the_right_lines_twice_then_the_right_answer(item):
    seed, index, level = item
    problem = generate("Chain", seed, index, level)
    solution = worked_solution(problem)
    text = flawed_solution(problem, "recheck", np.random.default_rng(0))
    body = solution.rsplit("\n", 1)[0]
    assert text == f"{body}\nCheck:\n{body}\nAnswer: {problem.answer}"
    assert len(text) > 1.8 * len(solution)


def test_flawed_solution_names_an_unknown_flaw_and_a_problem_without_terms():
    with pytest.raises(ValueError, match="unknown Chain flaw 'typo'.*slip"):
        flawed_solution(generate("Chain", 0, 0, 3), "typo", np.random.default_rng(0))
    with pytest.raises(ValueError, match="gen/Arithmetic/L1/0/0.*not a Chain problem"):
        flawed_solution(generate("Arithmetic", 0, 0, 1), "slip", np.random.default_rng(0))
    assert FLAWS == ("slip", "recheck", "total-line", "estimate", "loop", "misread")


def _score(texts: list[str], problems) -> np.ndarray:
    from verimath.rewards import score_batch

    return score_batch(texts, [p.answer for p in problems], style="dapo", mode="integer").correct


@settings(max_examples=50, deadline=None)
@given(item=generator_items, draw=st.integers(0, 2**32 - 1))
def test_a_total_line_is_the_right_working_with_an_answer_no_verifier_reads(item, draw):
    problem, text = _flawed(item, "total-line", draw)
    solution = worked_solution(problem)
    assert text == solution.replace("\nAnswer: ", "\nTotal: ")
    assert text.split("\n")[:-1] == solution.split("\n")[:-1]
    assert not _score([text], [problem]).any()


def test_an_estimate_answers_at_once_and_is_right_about_one_time_in_three():
    problems = [generate("Chain", 2, i, level) for i in range(300) for level in (1, 2, 3)]
    rng = np.random.default_rng(0)
    texts = [flawed_solution(p, "estimate", rng) for p in problems]
    assert all(t.startswith("Answer: ") and "\n" not in t for t in texts)
    offsets = [int(t.removeprefix("Answer: ")) - int(p.answer) for t, p in zip(texts, problems)]
    assert set(offsets) <= {-1, 0, 1}
    assert 0.28 < _score(texts, problems).mean() < 0.39  # 1/3 expected, 900 draws


@settings(max_examples=50, deadline=None)
@given(item=generator_items, draw=st.integers(0, 2**32 - 1))
def test_a_loop_repeats_a_right_line_and_answers_its_total_which_is_wrong(item, draw):
    problem, text = _flawed(item, "loop", draw)
    rows, last = _lines(text)
    assert all((a + b if op == "+" else a - b) == c for a, op, b, c in rows)  # right lines
    right = worked_solution(problem).split("\n")[:-1]
    distinct = list(dict.fromkeys(text.split("\n")[:-1]))
    assert distinct == right[:len(distinct)]  # the working up to the looped line
    assert 3 <= len(rows) - len(distinct) <= 6  # written again 3 to 6 more times
    assert len(text) > len(worked_solution(problem)) or len(distinct) < len(right)
    assert not _score([text], [problem]).any()


@settings(max_examples=50, deadline=None)
@given(item=generator_items, draw=st.integers(0, 2**32 - 1))
def test_a_misread_works_the_chain_right_from_a_first_term_with_another_leading_digit(item, draw):
    problem, text = _flawed(item, "misread", draw)
    rows, last = _lines(text)
    first, solution = problem.meta["params"]["terms"][0], worked_solution(problem)
    assert str(rows[0][0])[0] != str(first)[0]  # parts at the first token ...
    assert str(rows[0][0])[1:] == str(first)[1:]  # ... and there alone in the first term
    assert text[0] != solution[0] and text[1:].startswith(solution[1:len(str(first))])
    assert all((a + b if op == "+" else a - b) == c for a, op, b, c in rows)  # right lines
    assert [(op, b) for _, op, b, _ in rows] == [(op, b) for _, op, b, _ in
                                                   _lines(solution)[0]]  # the other terms
    assert int(last.removeprefix("Answer: ")) - int(problem.answer) == rows[0][0] - first
    assert not _score([text], [problem]).any()


def test_misread_openings_spread_over_the_eight_other_leading_digits():
    problem = generate("Chain", 0, 0, 1)
    rng = np.random.default_rng(0)
    firsts = [flawed_solution(problem, "misread", rng)[0] for _ in range(1600)]
    counts = {d: firsts.count(d) for d in "123456789"}
    assert counts[worked_solution(problem)[0]] == 0
    assert all(150 < c < 250 for d, c in counts.items()
               if d != worked_solution(problem)[0])  # 200 expected each
