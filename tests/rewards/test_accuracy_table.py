"""The labelled accuracy table (benchmarks/data/accuracy_cases.jsonl) and verimath on it.

The benchmark (``benchmarks/bench_accuracy.py``) also runs math-verify; this test runs
verimath only, and holds it to the table: high agreement in the flexible style, no reward
hack accepted in any style, the strict styles right on the standard formats.
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_accuracy.py"
_spec = importlib.util.spec_from_file_location("bench_accuracy", BENCH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)
ROWS = bench.load_cases()


def test_table_is_large_varied_and_well_formed():
    assert len(ROWS) >= 400
    assert len({r["id"] for r in ROWS}) == len(ROWS)
    assert len({(r["input"], r["text"], r["gold"]) for r in ROWS}) == len(ROWS)
    labels = Counter(r["label"] for r in ROWS)
    assert labels[True] > 100 and labels[False] > 100
    groups = Counter(bench.group_of(r["kind"]) for r in ROWS)
    assert all(count >= 15 for count in groups.values()), groups
    assert {r["input"] for r in ROWS} == {"response", "pred"}
    assert all(r["source"].strip() for r in ROWS)
    assert not any(r["label"] for r in ROWS if r["kind"] == "reward_hack")


def test_load_cases_names_the_bad_line(tmp_path):
    bad = tmp_path / "cases.jsonl"
    bad.write_text('{"id": "a", "kind": "k", "source": "s", "input": "pred", "text": "1", '
                   '"gold": "1", "label": "yes"}\n')
    with pytest.raises(ValueError, match="line 1: field 'label'"):
        bench.load_cases(bad)


@pytest.mark.slow
def test_verimath_agrees_with_the_labels_and_accepts_no_hack():
    verdicts = bench.verimath_verdicts(ROWS)
    agree = {style: sum(v == r["label"] for v, r in zip(got, ROWS)) / len(ROWS)
             for style, got in verdicts.items()}
    assert agree["flexible"] >= 0.97, agree
    for style, got in verdicts.items():
        hacks = [r["id"] for v, r in zip(got, ROWS) if v and r["kind"] == "reward_hack"]
        assert hacks == [], f"{style} accepted {hacks}"
    standard = [(v, r["label"]) for v, r in zip(verdicts["auto"], ROWS)
                if r["kind"] == "standard_format"]
    assert all(v == label for v, label in standard)


NEW_ROWS = bench.load_cases(bench.NEW_TABLE)
# Digests of the sorted held-out ids, fixed when the split was committed (before the code
# it measures): a change to the split rule or to the tables' ids shows here.
HELD_OUT = {"accuracy_cases.jsonl": "a847ffdbb17167d0", "new_cases.jsonl": "5e8c3dfcc7ae3c7c"}


@pytest.mark.parametrize(
    "rows, name", [(ROWS, "accuracy_cases.jsonl"), (NEW_ROWS, "new_cases.jsonl")]
)
def test_the_split_is_fixed_and_balanced_by_kind(rows, name):
    import hashlib

    parts = bench.split_of(rows)
    for kind in {r["kind"] for r in rows}:
        counts = Counter(p for p, r in zip(parts, rows) if r["kind"] == kind)
        assert counts["dev"] - counts["heldout"] in (0, 1), (kind, counts)
    held = sorted(r["id"] for r in bench.select_split(rows, "heldout"))
    assert hashlib.sha256("\n".join(held).encode()).hexdigest()[:16] == HELD_OUT[name]
    assert len(bench.select_split(rows, "dev")) + len(held) == len(rows)
    with pytest.raises(ValueError, match="unknown split"):
        bench.select_split(rows, "test")


def test_the_new_table_is_well_formed():
    assert len(NEW_ROWS) >= 150 and len({r["id"] for r in NEW_ROWS}) == len(NEW_ROWS)
    assert not any(r["label"] for r in NEW_ROWS if r["kind"].startswith("reward_hack"))
    assert all(count >= 9 for count in Counter(r["kind"] for r in NEW_ROWS).values())


@pytest.mark.slow
def test_no_style_accepts_a_hack_of_the_new_table():
    verdicts = bench.verimath_verdicts(NEW_ROWS)
    for style, got in verdicts.items():
        hacks = [r["id"] for v, r in zip(got, NEW_ROWS)
                 if v and r["kind"].startswith("reward_hack")]
        assert hacks == [], f"{style} accepted {hacks}"


GRADER_ROWS = bench.load_cases(bench.GRADER_TABLE)


def test_the_grader_table_is_held_out_whole_and_well_formed():
    assert len(GRADER_ROWS) >= 200 and len({r["id"] for r in GRADER_ROWS}) == len(GRADER_ROWS)
    assert set(bench.split_of(GRADER_ROWS)) == {"heldout"}
    assert bench.select_split(GRADER_ROWS, "dev") == []
    kinds = Counter(r["kind"] for r in GRADER_ROWS)
    assert len(kinds) >= 8 and min(kinds.values()) >= 10, kinds
    assert all(r["source"].strip() for r in GRADER_ROWS)


def test_a_split_field_overrides_the_id_rule_and_is_checked(tmp_path):
    rows = [{"id": "a", "kind": "k"}, {"id": "b", "kind": "k", "split": "heldout"}]
    assert bench.split_of(rows) == ["dev", "heldout"]
    bad = tmp_path / "cases.jsonl"
    bad.write_text('{"id": "a", "kind": "k", "source": "s", "input": "pred", "text": "1", '
                   '"gold": "1", "label": true, "split": "test"}\n')
    with pytest.raises(ValueError, match="line 1: field 'split'"):
        bench.load_cases(bad)


def test_the_golden_table_joins_the_benchmark_as_symbolic_dev_rows():
    rows = bench.golden_cases()
    assert rows and {r["split"] for r in rows} == {"dev"}
    assert {r["input"] for r in rows} == {"response"}


def test_the_real_text_notes_say_skipped_or_where_the_data_was_looked_for(tmp_path, monkeypatch):
    quick = bench.real_text_notes(quick=True)
    assert len(quick) == 1 and "skipped by --quick" in quick[0] and "not found" not in quick[0]
    monkeypatch.setattr(bench, "DATA_DIR", tmp_path)
    missing = bench.real_text_notes(quick=False)
    assert [note.split(" not found at ")[0] for note in missing] == ["MATH-500", "GSM8K"]
    assert all(str(tmp_path) in note and "VERIMATH_DATA_DIR" in note for note in missing)
    (tmp_path / "math500").mkdir()
    (tmp_path / "math500" / "test.jsonl").write_text("")
    assert [note.split(" not found")[0] for note in bench.real_text_notes(quick=False)] == ["GSM8K"]
