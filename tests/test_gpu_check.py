"""scripts/gpu_check.py on a CPU machine: tiny sizes, GPU-only and vLLM rows named as skipped,
one table also written as JSON; its pure parts (table, JSON, budget, async rows, skips)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from script_modules import SCRIPTS, load_script

SCRIPT = SCRIPTS / "gpu_check.py"


table = load_script("gpu_check_table")
cells = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=30)
rows_st = st.lists(st.tuples(cells, cells, cells), max_size=8)


@given(rows_st)
def test_json_file_holds_the_rows_of_the_table(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("j") / "sub" / "rows.json"
    assert table.write_json(path, rows, seconds=1.5, mode="here") == path
    assert table.read_json(path) == rows
    record = json.loads(path.read_text(encoding="utf-8"))
    assert (record["seconds"], record["mode"]) == (1.5, "here")


@given(rows_st)
def test_table_aligns_columns_under_one_header(rows):
    rows = [tuple(c.replace("\n", " ").strip() or "x" for c in r) for r in rows]
    lines = table.format_table(rows).splitlines()
    assert len(lines) == len(rows) + 1 and lines[0].split() == ["check", "result", "detail"]
    start = lines[0].index("result")
    for line, (check, result, _) in zip(lines[1:], rows):
        assert line.startswith(check) and line[start:].startswith(result)


def test_vllm_rows_name_why_they_are_skipped():
    assert table.vllm_skip(has_vllm=False, has_cuda=True) == "vllm not installed"
    assert table.vllm_skip(has_vllm=False, has_cuda=False) == "vllm not installed"
    assert table.vllm_skip(has_vllm=True, has_cuda=False) == "no GPU"
    assert table.vllm_skip(has_vllm=True, has_cuda=True) == ""
    label, result, detail = table.skipped("generation, vLLM", "vllm not installed")
    assert result == "skipped: vllm not installed" and "verimath[vllm]" in detail


def _runs():
    """scripts/gpu_check_runs.py, which imports its sibling gpu_check_table by name."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        return load_script("gpu_check_runs")
    finally:
        sys.path.remove(str(SCRIPTS))


def test_env_var_makes_vllm_absent(monkeypatch):
    runs = _runs()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    monkeypatch.delenv(runs.NO_VLLM, raising=False)
    assert runs.has_vllm()
    monkeypatch.setenv(runs.NO_VLLM, "1")
    assert not runs.has_vllm()


def test_budget_counts_down_on_its_clock():
    now = [100.0]
    budget = table.Budget(60, clock=lambda: now[0])
    assert budget.left() == 60 and not budget.spent(30)
    now[0] = 140.0
    assert budget.left() == 20 and budget.spent(30) and not budget.spent(10)
    now[0] = 200.0
    assert budget.left() == 0 and budget.spent() and "60 s" in budget.reason()


def _metrics(step_seconds: list[float], wait: float = 0.0, stale: list[float] | None = None):
    stale = stale or [0.0] * len(step_seconds)
    rows = [{"step": 0, "eval/acc": 0.5}]  # an evaluation row: no time/step
    for i, (t, s) in enumerate(zip(step_seconds, stale)):
        rows.append({"step": i + 1, "time/step": t, "time/generate": t / 2, "time/score": 0.1,
                     "time/update": t / 4, "async/wait_rollouts": wait,
                     "async/wait_weights": 0.05, "async/staleness_max": s,
                     "async/stale_dropped": 0.0})
    return rows


@given(st.lists(st.floats(0.01, 100), min_size=2, max_size=10),
       st.lists(st.floats(0.01, 100), min_size=2, max_size=10))
def test_async_rows_leave_out_the_first_step_and_divide(sync_steps, lag_steps):
    sync, lag = table.step_means(_metrics(sync_steps)), table.step_means(_metrics(lag_steps))
    mean = sum(lag_steps[1:]) / len(lag_steps[1:])
    assert lag["time/step"] == pytest.approx(mean) and lag["steps"] == len(lag_steps) - 1
    first, second = table.async_rows(sync, lag)
    assert first[0] == "async, hf engine, async_steps=0"
    assert second[0] == "async, hf engine, async_steps=1"
    assert second[1] == f"{mean:.2f} s/step ({sync['time/step'] / mean:.2f}x)"
    assert "async/wait_rollouts" in second[2] and "async/staleness_max" in second[2]


def test_async_means_take_the_largest_staleness():
    means = table.step_means(_metrics([9.0, 1.0, 1.0, 1.0], stale=[5, 0, 2, 1]))
    assert means["async/staleness_max"] == 2  # the first step is left out
    with pytest.raises(ValueError, match="fewer than two RL steps"):
        table.step_means(_metrics([1.0]))


@pytest.mark.slow
def test_gpu_check_runs_every_part_on_tiny_sizes(tmp_path):
    torch = pytest.importorskip("torch")
    out = tmp_path / "rows.json"
    env = {**os.environ, "VERIMATH_GPU_CHECK_NO_VLLM": "1"}
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, check=False, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {check: (result, detail) for check, result, detail in table.read_json(out)}
    assert rows["tiny preset, hf engine"][0].startswith("ran (too short to learn)")
    update = next(key for key in rows if key.startswith("update, small shape"))
    assert "bf16 FSDP2 on 1 rank" in rows[update][1]
    assert rows["generation, HF"][0].endswith("tokens/s")
    for key in ("tiny preset, vllm engine", "generation, vLLM"):
        assert rows[key][0] == "skipped: vllm not installed"
    assert rows["async, hf engine, async_steps=0"][0].endswith("s/step")
    assert rows["async, hf engine, async_steps=1"][0].endswith("x)")
    assert "async/wait_rollouts" in rows["async, hf engine, async_steps=1"][1]
    lines = done.stdout.splitlines()
    assert lines[-1].endswith(f"the table as JSON: {out}")
    assert lines[-len(rows) - 2].split() == ["check", "result", "detail"]
    if not torch.cuda.is_available():
        assert rows[update][0] == "n/a: no GPU"
        assert rows["peak memory, update"][0] == "n/a: no GPU"


def test_gpu_check_names_unknown_parts():
    done = subprocess.run([sys.executable, str(SCRIPT), "--parts", "tiny,nope"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "unknown nope" in done.stderr


def test_parts_past_the_budget_are_named_skipped(tmp_path):
    out = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--budget-s", "0.01",
                           "--parts", "update,async,tiny", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = dict((check, result) for check, result, _ in table.read_json(out))
    reason = "skipped: time budget (0 s, --budget-s) spent"
    assert rows["update"] == rows["async, hf engine, async_steps=0"] == reason
    assert rows["tiny preset, hf engine"] == reason


@pytest.mark.slow
def test_a_run_past_the_budget_is_stopped(tmp_path):
    runs = _runs()
    seconds, result = runs.train(tmp_path / "run", runs.QUICK_TRAIN, True, table.Budget(2))
    assert result == "stopped: time budget (2 s, --budget-s) spent"
    assert seconds < 2 + runs.STOP_SECONDS
