"""bench_async's table: means over seeds per mode, and the measured speed-up beside the ideal
``(generate + update) / max(generate, update)`` of the synchronous run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_async", ROOT / "benchmarks/bench_async.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _row(k, seed, step, gen, upd, steps=5, acc=0.5):
    return {"async_steps": k, "seed": seed, "steps": steps, "train_seconds": steps * step,
            "step_seconds": step,
            "cpu_seconds": 10.0, "generate_seconds": gen, "update_seconds": upd,
            "waited_seconds": gen, "staleness_max": k, "avg_at_k": acc, "greedy": 0.75}


@given(gen=st.floats(0.1, 10), upd=st.floats(0.1, 10), speedup=st.floats(0.5, 3))
def test_the_speed_up_and_its_ideal(gen, upd, speedup):
    sync = gen + upd
    rows = [_row(0, s, sync, gen, upd) for s in (0, 1)] + [_row(1, 0, sync / speedup, gen, upd)]
    text = bench.table(rows)
    ideal = (gen + upd) / max(gen, upd)
    assert f"async=1: {speedup:.2f}x the synchronous wall time per step; ideal on 2 cores " \
           f"{ideal:.2f}x" in text
    assert "| sync | " in text and "| async=2 |" not in text


def test_means_are_over_seeds():
    rows = [_row(0, 0, 2.0, 1.0, 1.0), _row(0, 1, 4.0, 1.0, 1.0)]
    assert "| sync | 5 | 15 | 3.00 |" in bench.table(rows)


def test_a_longer_asynchronous_run_is_set_beside_the_synchronous_one_at_its_time():
    rows = [_row(0, 0, 2.0, 1.5, 0.5, steps=100, acc=0.7),
            _row(1, 0, 1.4, 1.5, 0.5, steps=145, acc=0.72)]
    text = bench.table(rows)
    assert "| async=1 | 145 | 203 | 1.40 |" in text
    assert "async=1: 1.43x the synchronous wall time per step; ideal on 2 cores 1.33x. 145 " \
           "steps in 203 s of training (100 synchronous: 200 s): held-out avg@k 72.0% " \
           "(synchronous 70.0%)" in text
