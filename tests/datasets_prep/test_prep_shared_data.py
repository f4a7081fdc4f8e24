"""The converters on the real files in shared/data: counts, spot checks, round trips."""

from __future__ import annotations

import json
import time

import pytest
from verimath.datasets_prep import decontaminate, prepare
from verimath.envs.problem import Problem, read_problems, write_problems
from verimath.rewards import score_batch

pytestmark = pytest.mark.shared_data

FILES = {
    "gsm8k": ("gsm8k", "gsm8k/test.jsonl", 1319),
    "gsm8k_train": ("gsm8k", "gsm8k/train.jsonl", 7473),
    "math500": ("math", "math500/test.jsonl", 500),
    "aime24": ("aime", "aime24/test.jsonl", 30),
    "aime25": ("aime", "aime25/test.jsonl", 30),
    "dapo": ("dapo", "dapo_math_17k/sample_first27.jsonl", 27),
}


@pytest.fixture(scope="module")
def converted(shared_data):
    """Each dataset prepared once (gold self-check on), with its raw rows."""
    out = {}
    for key, (source, rel, _) in FILES.items():
        path = shared_data / rel
        raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        out[key] = (prepare(source, str(path), name=key), raw)
    return out


@pytest.mark.parametrize("key", list(FILES))
def test_exact_counts_and_nothing_rejected(converted, key):
    result, raw = converted[key]
    expected = FILES[key][2]
    assert len(raw) == expected
    assert result.counts["read"] == result.counts["kept"] == expected
    assert result.rejected == [] and result.duplicates == []
    assert len({p.id for p in result.problems}) == expected
    assert [p.id for p in result.problems[:2]] == [f"{key}/{result.split}/{i}" for i in (0, 1)]


def test_spot_checks_against_raw_rows(converted):
    gsm, raw = converted["gsm8k"][0].problems, converted["gsm8k"][1]
    assert (gsm[0].answer, gsm[0].prompt) == ("18", raw[0]["question"])
    commas = [i for i, r in enumerate(raw) if "," in r["answer"].rsplit("####", 1)[1]]
    assert len(commas) == 14  # SOURCES.md: 14 test answers use thousands separators
    for i in commas:
        assert gsm[i].answer == raw[i]["answer"].rsplit("####", 1)[1].strip().replace(",", "")
    math500, raw = converted["math500"]
    assert math500.problems[0].answer == "\\left( 3, \\frac{\\pi}{2} \\right)"
    assert all(p.answer == r["answer"] for p, r in zip(math500.problems, raw))
    assert math500.problems[0].meta["unique_id"] == "test/precalculus/807.json"
    aime24, raw = converted["aime24"]
    padded = [(p, r) for p, r in zip(aime24.problems, raw) if r["answer"].startswith("0")]
    assert padded and all(p.answer == str(int(r["answer"])) for p, r in padded)
    assert all(not p.answer.startswith("0") or p.answer == "0" for p in aime24.problems)
    aime25, raw = converted["aime25"]
    assert aime25.problems[0].answer == "70" and isinstance(raw[0]["answer"], int)


def test_dapo_sample_recovers_the_bare_problem(converted):
    dapo, raw = converted["dapo"]
    for p, r in zip(dapo.problems, raw):
        assert "Solve the following math problem" not in p.prompt
        assert "Remember to put your answer" not in p.prompt
        assert p.meta["template_found"] is True
        assert p.prompt == r["prompt"].strip()  # the flattened layout's own bare problem
        assert p.answer == r["reward_model"]["ground_truth"]
    assert dapo.problems[0].meta["index"] == "9a9b6eb4-a1cb-49d1-8c1e-62eaf2f74079"
    assert dapo.counts["template_missing"] == 0


def test_every_gold_verifies_against_itself(converted):
    golds = [p.answer for result, _ in converted.values() for p in result.problems]
    for style, wrap in (("boxed", "\\boxed{{{}}}"), ("dapo", "Answer: {}")):
        scores = score_batch([wrap.format(g) for g in golds], golds, style=style)
        assert scores.correct.all()


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_round_trip(converted, tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    for key, (result, _) in converted.items():
        path = tmp_path / f"{key}{suffix}"
        assert write_problems(result.problems, path) == len(result.problems)
        back = read_problems(path)
        assert back == result.problems
        assert [p.meta for p in back] == [p.meta for p in result.problems]


def test_dapo_boilerplate_overlap_with_aime24(converted):
    # Rows 4 and 22 of the DAPO sample share only "can be expressed as m/n where m and n are
    # relatively prime..." with AIME 2024 problem 13: flagged by the classic rule, spared
    # once a copy must cover half of the eval problem.
    dapo, aime24 = converted["dapo"][0].problems, converted["aime24"][0].problems
    _, dropped = decontaminate(dapo, aime24)
    assert [d.problem.id for d in dropped] == ["dapo/sample_first27/4", "dapo/sample_first27/22"]
    assert all(d.eval_id == "aime24/test/13" and d.coverage < 0.5 for d in dropped)
    assert decontaminate(dapo, aime24, min_coverage=0.5)[1] == []
    copies = [Problem(f"copy/{p.id}", p.prompt, p.answer, "x") for p in aime24]
    assert len(decontaminate(copies, aime24, min_coverage=1.0)[1]) == 30


@pytest.mark.slow
def test_decontamination_17k_by_600_is_fast_and_finds_planted_copies(converted):
    train = converted["gsm8k_train"][0].problems
    evals = [p for k in ("math500", "aime24", "aime25") for p in converted[k][0].problems]
    evals += converted["gsm8k"][0].problems[:40]
    assert len(evals) == 600
    synthetic = [Problem(f"syn/{k}/{i}", f"Variant {k}. {p.prompt}", p.answer, "syn")
                 for k in range(3) for i, p in enumerate(train)][:17_000]
    planted = [Problem(f"plant/{i}", "Consider this. " + e.prompt, e.answer, "syn")
               for i, e in enumerate(evals[::60])]
    start = time.perf_counter()
    kept, dropped = decontaminate(synthetic + planted, evals)
    seconds = time.perf_counter() - start
    assert {d.problem.id for d in dropped} >= {p.id for p in planted}
    assert len(kept) + len(dropped) == 17_000 + len(planted)
    assert seconds < 15, f"decontamination took {seconds:.1f}s"


def test_dapo_hub_layout_with_repeats_dedups_to_the_sample(shared_data, tmp_path):
    # The hub's DAPO-Math-17k repeats each problem many times, with the chat-list prompt.
    raw = [json.loads(line) for line in (shared_data / FILES["dapo"][1]).read_text().splitlines()]
    hub = [{"prompt": r["source_prompt"], "reward_model": r["reward_model"],
            "extra_info": r["extra_info"], "data_source": r["data_source"]} for r in raw]
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in hub * 4))
    result = prepare("dapo", str(path), integer_answers=True)
    assert result.counts["read"] == 108 and result.counts["deduplicated"] == 81
    assert [p.prompt for p in result.problems] == [r["prompt"].strip() for r in raw]
    assert [p.id for p in result.problems] == [f"dapo/train/{i}" for i in range(27)]
    assert result.counts["non_integer"] == 0 and result.counts["template_missing"] == 0
