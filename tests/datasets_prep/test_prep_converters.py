"""Per-source converters: hand-worked rows, error naming, and hypothesis properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import aime_integers, gsm8k_integers, latex_answer, problem_text
from verimath.datasets_prep import aime, dapo, generic, gsm8k
from verimath.datasets_prep import hendrycks_math as mathds
from verimath.datasets_prep.rows import RawRow, RowError, answer_text, get_field

DAPO_PREFIX = (
    "Solve the following math problem step by step. The last line of your response should be "
    "of the form Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n"
)
DAPO_SUFFIX = '\n\nRemember to put your answer on its own line after "Answer:".'


def raw(data: dict, index: int = 0) -> RawRow:
    return RawRow(index, f"t.jsonl:{index + 1}", data)


# --- hand-worked examples -------------------------------------------------------------


def test_gsm8k_takes_answer_after_marks_and_drops_thousands_commas():
    row = raw({"question": " How many? ", "answer": "2 + 3 = <<2+3=5>>5\n#### 2,125"}, 17)
    p = gsm8k.convert(row, split="test")
    assert (p.id, p.prompt, p.answer, p.source) == ("gsm8k/test/17", "How many?", "2125", "gsm8k")
    assert p.meta == {"solution": "2 + 3 = <<2+3=5>>5"}


@pytest.mark.parametrize(
    ("text", "gold"),
    [("#### -3", "-3"), ("#### 1,000,000", "1000000"), ("a #### 1\n#### 7", "7"),
     ("####12,5", "12,5")],
)
def test_gsm8k_final_answer(text, gold):
    assert gsm8k.final_answer(text) == gold


def test_gsm8k_without_marker_names_the_field():
    with pytest.raises(RowError, match="'answer'.*####") as err:
        gsm8k.convert(raw({"question": "q", "answer": "42"}))
    assert err.value.field == "answer"


def test_math_prefers_answer_field_then_last_boxed():
    row = {"problem": "P", "solution": "\\boxed{1} then \\boxed{\\frac{1}{2}}", "answer": "3",
           "subject": "Algebra", "level": 2, "unique_id": "test/algebra/1.json"}
    assert mathds.convert(raw(row)).answer == "3"
    del row["answer"]
    p = mathds.convert(raw(row), name="math500")
    assert p.answer == "\\frac{1}{2}" and p.id == "math500/test/0" and p.source == "math500"
    assert p.meta["level"] == 2 and p.meta["subject"] == "Algebra"


def test_math_blank_answer_cell_falls_back_to_the_box():
    row = {"problem": "P", "solution": "so \\boxed{\\frac{1}{2}}.", "answer": "  "}
    assert mathds.convert(raw(row)).answer == "\\frac{1}{2}"
    with pytest.raises(RowError, match="empty, and no 'solution'") as err:
        mathds.convert(raw({"problem": "P", "answer": ""}))
    assert err.value.field == "answer"


def test_math_original_layout_level_and_type():
    row = {"problem": "P", "solution": "so \\boxed{7}.", "type": "Geometry", "level": "Level 4"}
    p = mathds.convert(raw(row))
    assert (p.answer, p.meta["level"], p.meta["subject"]) == ("7", 4, "Geometry")
    assert mathds.parse_level("Level ?") is None


def test_math_without_answer_or_box_is_an_error():
    with pytest.raises(RowError, match="boxed") as err:
        mathds.convert(raw({"problem": "P", "solution": "no box here"}))
    assert err.value.field == "solution"


@pytest.mark.parametrize(("value", "gold"), [("025", "25"), ("000", "0"), (70, "70"), (" 7 ", "7")])
def test_aime_answers_become_canonical_integers(value, gold):
    assert aime.convert(raw({"problem": "P", "answer": value})).answer == gold


def test_aime_rejects_non_integer_and_uses_question_field():
    with pytest.raises(RowError, match="integers"):
        aime.convert(raw({"problem": "P", "answer": "1/2"}))
    assert aime.convert(raw({"question": "Q", "answer": "1"})).prompt == "Q"


def test_dapo_hub_layout_recovers_bare_problem():
    row = {"prompt": [{"role": "user", "content": DAPO_PREFIX + "Find $x$.\n" + DAPO_SUFFIX}],
           "reward_model": {"ground_truth": "34", "style": "rule"},
           "extra_info": {"index": "abc"}, "data_source": "math_dapo"}
    p = dapo.convert(raw(row, 3))
    assert (p.id, p.prompt, p.answer) == ("dapo/train/3", "Find $x$.", "34")
    assert p.meta == {"index": "abc", "data_source": "math_dapo", "template_found": True}


def test_dapo_flat_layout_reads_source_prompt_and_plain_prompt():
    flat = {"prompt": "Find $x$.", "solution": "5",
            "source_prompt": [{"role": "user", "content": DAPO_PREFIX + "Find $x$." + DAPO_SUFFIX}]}
    p = dapo.convert(raw(flat))
    assert (p.prompt, p.answer, p.meta["template_found"]) == ("Find $x$.", "5", True)
    bare = dapo.convert(raw({"prompt": "Find y.", "reward_model": {"ground_truth": 2}}))
    assert (bare.prompt, bare.answer, bare.meta["template_found"]) == ("Find y.", "2", False)


def test_dapo_missing_gold_names_dotted_field():
    with pytest.raises(RowError) as err:
        dapo.convert(raw({"prompt": "P", "reward_model": {"style": "x"}}))
    assert err.value.field == "reward_model.ground_truth"


def test_generic_dotted_fields_id_field_and_meta():
    row = {"q": {"text": "What?"}, "gold": 3.0, "uid": 12, "lvl": 5}
    convert = generic.make_converter("q.text", "gold", id_field="uid", meta_fields=["lvl", "nope"])
    p = convert(raw(row), name="mine", split="dev")
    assert (p.id, p.prompt, p.answer) == ("mine/dev/12", "What?", "3")
    assert p.meta == {"lvl": 5, "nope": None}


@pytest.mark.parametrize(
    ("row", "field", "reason"),
    [
        ({"answer": "1"}, "problem", "missing"),
        ({"problem": None, "answer": "1"}, "problem", "null"),
        ({"problem": 5, "answer": "1"}, "problem", "string"),
        ({"problem": "  ", "answer": "1"}, "problem", "empty"),
        ({"problem": "p", "answer": ""}, "answer", "empty"),
        ({"problem": "p", "answer": True}, "answer", "bool"),
        ({"problem": "p", "answer": [1]}, "answer", "list"),
        ({"problem": "p", "answer": float("nan")}, "answer", "finite"),
    ],
)
def test_generic_bad_rows_name_the_field(row, field, reason):
    with pytest.raises(RowError, match=reason) as err:
        generic.convert(raw(row))
    assert err.value.field == field
    assert repr(field) in str(err.value)


def test_get_field_prefers_literal_dotted_key():
    assert get_field({"a.b": 1, "a": {"b": 2}}, "a.b") == 1
    assert get_field({"a": {"b": 2}}, "a.b") == 2


# --- properties -----------------------------------------------------------------------


@given(st.integers(-(10**15), 10**15))
def test_answer_text_of_integers_and_integral_floats(n):
    assert answer_text(n, "a") == str(n)
    if abs(n) < 2**53:
        assert answer_text(float(n), "a") == str(n)


@given(problem_text, st.text(max_size=200), gsm8k_integers, st.booleans())
def test_gsm8k_never_raises_on_well_formed_rows(question, work, n, commas):
    shown = f"{n:,}" if commas else str(n)
    p = gsm8k.convert(raw({"question": question, "answer": f"{work}\n#### {shown}"}))
    assert p.answer == str(n) and p.prompt == question.strip()


@given(problem_text, latex_answer, st.text(max_size=100), st.booleans())
def test_math_never_raises_and_box_equals_answer_field(problem, gold, before, with_field):
    solution = f"{before} so the answer is $\\boxed{{{gold}}}$."
    row = {"problem": problem, "solution": solution}
    if with_field:
        row["answer"] = gold
    assert mathds.convert(raw(row)).answer == gold.strip()


@given(problem_text, aime_integers, st.integers(0, 3), st.booleans())
def test_aime_zero_padding_never_matters(problem, n, pad, as_int):
    value = n if as_int else str(n).zfill(pad + len(str(n)))
    assert aime.convert(raw({"problem": problem, "answer": value})).answer == str(n)


@given(problem_text, st.sampled_from(["", "\n", "  \n\n"]), st.booleans())
def test_dapo_template_removal_returns_the_problem(problem, pad, hub):
    content = DAPO_PREFIX + pad + problem + pad + DAPO_SUFFIX
    row = {"reward_model": {"ground_truth": "1"}}
    if hub:
        row["prompt"] = [{"role": "user", "content": content}]
    else:
        row.update(prompt=problem, source_prompt=[{"role": "user", "content": content}])
    p = dapo.convert(raw(row))
    assert p.prompt == problem.strip()
    assert "Solve the following math problem" not in p.prompt or "Solve the following" in problem


@given(st.lists(st.tuples(problem_text, latex_answer), min_size=1, max_size=30),
       st.sampled_from(["train", "test"]))
@settings(max_examples=50)
def test_ids_unique_and_stable(rows, split):
    def run():
        return [generic.convert(raw({"problem": q, "answer": a}, i), split=split).id
                for i, (q, a) in enumerate(rows)]

    ids = run()
    assert len(set(ids)) == len(ids)
    assert run() == ids
