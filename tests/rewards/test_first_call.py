"""The first verdict of a fresh process: light imports, and no wait for the pool when the
calling process decides the pair (timings are measured in benchmarks/bench_rewards.py; the
bound here is generous, so that a loaded machine does not make it flaky)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from verimath.rewards import ScoringPool

_FIRST = (
    "import json, sys, time; t0 = time.perf_counter(); "
    "from verimath.rewards import is_equivalent; t1 = time.perf_counter(); "
    "heavy = sorted(m for m in ('numpy', 'sympy', 'math_verify', 'numba') if m in sys.modules); "
    "v = [is_equivalent('$1$', '$k=1$'), is_equivalent('\\\\sin^2 x + \\\\cos^2 x', '1')]; "
    "t2 = time.perf_counter(); print(json.dumps([t1 - t0, t2 - t1, v, heavy]))"
)


def test_a_fresh_process_decides_in_process_pairs_without_waiting_for_the_pool():
    done = subprocess.run([sys.executable, "-c", _FIRST], capture_output=True, text=True,
                          timeout=60, check=True)
    imported, verdicts, values, heavy = json.loads(done.stdout.strip().splitlines()[-1])
    assert values == [True, True]
    assert heavy == [], f"importing is_equivalent loaded {heavy}"
    assert verdicts < 2.0, f"two in-process verdicts took {verdicts:.2f} s: waited for the pool?"


def test_start_launches_the_zygote_without_waiting_for_it():
    with ScoringPool(1) as pool:
        t0 = time.perf_counter()
        pool.start()
        assert time.perf_counter() - t0 < 1.0
        pids = pool.worker_pids()
        assert len(pids) == 1  # the zygote, no worker yet
        pool.start()
        assert pool.worker_pids() == pids
        assert pool.verify([("x+1", "1+x")], timeout=30) == [(True, False)]
    pool.start()  # closed: nothing to start, no error
