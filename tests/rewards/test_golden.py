"""Golden verification cases (tests/golden/verify_cases.jsonl) and real-data answer checks.

Each golden row is a model-like response, a gold answer, the expected verdict, the mode and
a note naming the format it exercises (optionally a ``timeout`` in seconds, and
``conventions``: ``"strict"`` for rows about the strict reading of a grading convention).
Rows go through the public ``correctness_reward`` (fast path, then math-verify in the scoring
pool).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from verimath.rewards.correctness import correctness_reward
from verimath.rewards.equality.equivalence import MODES, fast_verdict
from verimath.rewards.extraction.final_answer import extract_answer

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "verify_cases.jsonl"
FIELDS = {"response": str, "gold": str, "expected": bool, "mode": str, "note": str}


def _load_rows() -> list[dict]:
    rows = []
    with GOLDEN.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            row = json.loads(line)
            for field, kind in FIELDS.items():
                if not isinstance(row.get(field), kind):
                    raise ValueError(
                        f"{GOLDEN.name} line {lineno}: field {field!r} must be {kind.__name__}"
                    )
            if row["mode"] not in MODES:
                raise ValueError(f"{GOLDEN.name} line {lineno}: unknown mode {row['mode']!r}")
            if row.get("conventions", "default") not in ("default", "strict"):
                raise ValueError(f"{GOLDEN.name} line {lineno}: conventions must be 'default' "
                                 f"or 'strict'")
            rows.append({**row, "line": lineno})
    return rows


ROWS = _load_rows()


def test_golden_table_is_broad():
    assert len(ROWS) >= 150
    verdicts = [row["expected"] for row in ROWS]
    assert 0.3 < sum(verdicts) / len(verdicts) < 0.8, "keep both verdicts well represented"
    assert {row["mode"] for row in ROWS} == set(MODES)
    assert len({(row["response"], row["gold"], row["mode"], row.get("conventions"))
                for row in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[f"line{r['line']:03d}" for r in ROWS])
def test_golden_row(row):
    timeout = row.get("timeout", 5.0)  # optional: rows that are meant to time out
    conventions = row.get("conventions")
    reward = correctness_reward(row["response"], row["gold"], mode=row["mode"], timeout=timeout,
                                conventions=conventions)
    expected = 1.0 if row["expected"] else -1.0
    if reward != expected:
        pred = extract_answer(row["response"])
        fast = None if pred is None else fast_verdict(pred, row["gold"], mode=row["mode"],
                                                      conventions=conventions)
        pytest.fail(
            f"{GOLDEN.name} line {row['line']} ({row['note']}): expected {row['expected']}, "
            f"got reward {reward}; extracted {pred!r}, gold {row['gold']!r}, mode {row['mode']}, "
            f"conventions {conventions or 'default'}, fast verdict {fast}"
        )


def _jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["math500/test.jsonl", "aime24/test.jsonl"])
def test_real_solutions_box_their_gold(shared_data, name):
    """The boxed answer of each worked solution is equivalent to the dataset's gold answer."""
    rows = _jsonl(shared_data / name)
    missing, wrong = [], []
    for i, row in enumerate(rows, 1):
        pred = extract_answer(row["solution"], style="boxed")
        if pred is None:
            missing.append(i)
        elif fast_verdict(pred, str(row["answer"])) is not True:
            wrong.append((i, pred, row["answer"]))
    assert wrong == [], f"{name}: rows whose boxed answer does not match the gold: {wrong[:10]}"
    assert len(missing) <= len(rows) // 20, f"{name}: rows without a box: {missing}"


@pytest.mark.shared_data
def test_gsm8k_final_lines_score_as_dapo_answers(shared_data):
    """GSM8K's '#### N' lines, rewritten as DAPO 'Answer: N', score +1 in integer mode."""
    rows = _jsonl(shared_data / "gsm8k" / "test.jsonl")
    failures = []
    for i, row in enumerate(rows, 1):
        reasoning, _, final = row["answer"].rpartition("####")
        response = f"{reasoning}\nAnswer: {final.strip()}"
        gold = final.strip().replace(",", "")
        if correctness_reward(response, gold, mode="integer") != 1.0:
            failures.append((i, final.strip()))
        if correctness_reward(response, str(int(gold) + 1), mode="integer") != -1.0:
            failures.append((i, "off-by-one accepted"))
    assert failures == []


def test_correctness_reward_contract():
    import doctest

    from verimath.rewards import correctness

    assert doctest.testmod(correctness).failed == 0
    assert correctness.score is correctness_reward
    assert correctness_reward("no answer here", "1") == -1.0
    assert correctness_reward("\\boxed{7}", "7", style="dapo") == -1.0
    assert correctness_reward("\\boxed{7}", "7", style="boxed") == 1.0
    assert correctness_reward("Answer: 7.0", "7", mode="integer") == -1.0
    assert correctness_reward("Answer: 7.0", "7") == 1.0
    with pytest.raises(ValueError, match="unknown answer style"):
        correctness_reward("Answer: 7", "7", style="last")
    with pytest.raises(ValueError, match="unknown equivalence mode"):
        correctness_reward("no answer", "7", mode="fuzzy")
