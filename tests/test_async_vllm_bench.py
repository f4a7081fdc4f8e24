"""bench_async's vLLM rows: each engine's modes on lines of their own, each asynchronous mode
compared with the synchronous run of its own engine."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_async", ROOT / "benchmarks/bench_async.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _row(engine, k, step, gen=1.0, upd=1.0):
    return {"engine": engine, "async_steps": k, "seed": 0, "steps": 5,
            "train_seconds": 5 * step, "step_seconds": step,
            "cpu_seconds": 10.0, "generate_seconds": gen, "update_seconds": upd,
            "waited_seconds": gen, "staleness_max": k, "avg_at_k": 0.5, "greedy": 0.75}


@given(hf=st.floats(0.5, 10), vllm=st.floats(0.5, 10), speedup=st.floats(0.5, 3))
def test_each_engine_is_compared_with_its_own_synchronous_run(hf, vllm, speedup):
    rows = [_row("hf", 0, hf), _row("hf", 1, hf / 2), _row("vllm", 0, vllm),
            _row("vllm", 2, vllm / speedup)]
    text = bench.table(rows)
    assert f"| vllm sync | 5 | {5 * vllm:.0f} | {vllm:.2f} |" in text
    assert f"| sync | 5 | {5 * hf:.0f} | {hf:.2f} |" in text
    assert f"vllm async=2: {speedup:.2f}x the synchronous wall time" in text
    assert "async=1: 2.00x the synchronous wall time" in text
    assert "vllm async=1" not in text


def test_the_vllm_rows_run_the_vllm_engine(monkeypatch, tmp_path):
    seen = []

    class Stop(Exception):
        pass

    def popen(command, **kwargs):
        seen.append(command)
        raise Stop

    monkeypatch.setattr(bench.subprocess, "Popen", popen)
    for engine in ("hf", "vllm"):
        try:
            bench.run(tmp_path, async_steps=1, seed=0, steps=2, extra=[], engine=engine)
        except Stop:
            pass
    assert "rollout.engine=vllm" not in seen[0] and "rollout.engine=vllm" in seen[1]
