"""ScoringPool: order, hard timeouts, worker replacement, threads, and clean shutdown."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
import strategies
from verimath.rewards.pool.scoring_pool import ScoringPool, default_pool


def _gone(pid: int) -> bool:
    """True when no process (not even a zombie) holds ``pid``."""
    return not os.path.exists(f"/proc/{pid}")


def _dead(pid: int) -> bool:
    """True when ``pid`` has exited (gone, or a zombie awaiting its parent)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return any(line.startswith("State:\tZ") for line in f)
    except FileNotFoundError:
        return True


def _wait_gone(pids, limit=5.0) -> list[int]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and not all(_gone(p) for p in pids):
        time.sleep(0.02)
    return [p for p in pids if not _gone(p)]


@pytest.fixture(scope="module")
def sleepy():
    with ScoringPool(3, verdict=strategies.sleepy_verdict, cache_size=0) as pool:
        yield pool


def test_real_verifier_keeps_order():
    with ScoringPool(2) as pool:
        pairs = [("1/2", "0.5"), ("x^2+1", "1+x^2"), ("3", "4"), ("\\sqrt{4}", "2"), ("7", "-7")]
        assert pool.verify(pairs, timeout=10) == [
            (True, False), (True, False), (False, False), (True, False), (False, False)
        ]


def test_out_of_order_completion_is_returned_in_input_order(sleepy):
    # Later items finish first; tags make any mix-up visible.
    delays = [0.3, 0.0, 0.2, 0.0, 0.1, 0.0]
    pairs = [(f"{d}:t{i}", f"t{i}" if i % 2 == 0 else "other") for i, d in enumerate(delays)]
    got = sleepy.verify(pairs, timeout=5)
    assert got == [(i % 2 == 0, False) for i in range(len(pairs))]


def test_timeout_kills_only_the_slow_item(sleepy):
    pairs = [("0:a", "a"), ("30:b", "b"), ("0:c", "c"), ("0:d", "x")]
    start = time.monotonic()
    got = sleepy.verify(pairs, timeout=0.5)
    elapsed = time.monotonic() - start
    assert got == [(True, False), (False, True), (True, False), (False, False)]
    assert elapsed < 1.0, f"a 0.5 s timeout took {elapsed:.2f} s"


def test_pool_still_works_after_200_timeouts_in_a_row(sleepy):
    got = sleepy.verify([("30:x", "x")] * 200, timeout=0.02)
    assert got == [(False, True)] * 200
    got = sleepy.verify([("0:ok", "ok"), ("0:ok", "no")], timeout=5)
    assert got == [(True, False), (False, False)]
    assert len(sleepy.worker_pids()) <= sleepy.workers + 1  # workers plus the zygote


def test_killed_workers_are_gone_not_zombies(sleepy):
    sleepy.verify([("0:a", "a")] * 3, timeout=5)
    before = set(sleepy.worker_pids())
    sleepy.verify([("30:x", "x")] * 3, timeout=0.05)
    killed = before - set(sleepy.worker_pids())
    assert killed, "timeouts must replace the workers that held the items"
    sleepy.verify([("0:a", "a")], timeout=5)  # the zygote reaps on its next fork
    assert _wait_gone(killed) == []


def test_concurrent_threads_get_their_own_answers(sleepy):
    results: dict[int, list] = {}

    def run(k: int) -> None:
        pairs = [(f"0.0{j % 3}:k{k}j{j}", f"k{k}j{j}" if j % 2 else f"k{k}") for j in range(12)]
        if k == 0:
            pairs[5] = ("30:slow", "slow")  # a timeout in one thread must not disturb others
        results[k] = sleepy.verify(pairs, timeout=0.5)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for k in range(4):
        expected = [(bool(j % 2), False) for j in range(12)]
        if k == 0:
            expected[5] = (False, True)
        assert results[k] == expected, f"thread {k}"


def test_a_crashing_worker_counts_as_incorrect_and_is_replaced(caplog):
    with ScoringPool(2, verdict=strategies.crashing_verdict, cache_size=0) as pool:
        with caplog.at_level("WARNING", logger="verimath.rewards.pool.scoring_pool"):
            got = pool.verify([("a", "a"), ("crash", "crash"), ("b", "b"), ("crash", "x")],
                              timeout=5)
        assert got == [(True, False), (False, False), (True, False), (False, False)]
        assert pool.verify([("c", "c")], timeout=5) == [(True, False)]
    # Each crashing item was tried twice (retried once), then logged once.
    warnings = [r for r in caplog.records if "died twice" in r.getMessage()]
    assert len(warnings) == 2
    assert "'crash'" in warnings[0].getMessage()


def test_an_item_whose_worker_is_killed_is_retried_on_a_fresh_worker():
    with ScoringPool(1, verdict=strategies.sleepy_verdict, cache_size=0) as pool:
        pool.verify([("0:warm", "warm")], timeout=5)
        (worker,) = [p for p in pool.worker_pids() if p != pool._state.zygote.pid]
        results = []
        thread = threading.Thread(target=lambda: results.append(
            pool.verify([("1.0:a", "a"), ("0:b", "c")], timeout=10)))
        thread.start()
        time.sleep(0.3)  # the worker now sleeps on item 0
        os.kill(worker, signal.SIGKILL)
        thread.join(30)
        assert results == [[(True, False), (False, False)]]
        assert worker not in pool.worker_pids()


def test_worker_killed_while_idle_is_replaced(sleepy):
    sleepy.verify([("0:a", "a")] * 3, timeout=5)
    zygote = sleepy._state.zygote.pid
    for pid in sleepy.worker_pids():
        if pid != zygote:
            os.kill(pid, signal.SIGKILL)
            while not _dead(pid):
                time.sleep(0.01)
    assert sleepy.verify([("0:a", "a"), ("0:b", "c")] * 3, timeout=5) == [
        (True, False), (False, False)
    ] * 3


def test_workers_ignore_sigint(sleepy):
    sleepy.verify([("0:a", "a")] * 3, timeout=5)
    pids = sleepy.worker_pids()
    for pid in pids:
        os.kill(pid, signal.SIGINT)
    time.sleep(0.1)
    assert all(not _gone(p) for p in pids)
    assert sleepy.verify([("0:a", "a")], timeout=5) == [(True, False)]


def test_close_is_idempotent_ends_every_process_and_refuses_more_work():
    pool = ScoringPool(3, verdict=strategies.sleepy_verdict)
    pool.verify([("0:a", "a"), ("30:b", "b"), ("0:c", "c")], timeout=0.2)
    pids = pool.worker_pids()
    assert len(pids) >= 3
    pool.close()
    pool.close()
    assert pool.closed
    assert _wait_gone(pids) == []
    with pytest.raises(RuntimeError, match="closed"):
        pool.verify([("0:a", "a")], timeout=1)


def test_close_from_another_thread_ends_a_stuck_verify():
    errors = []

    def run() -> None:
        try:
            pool.verify([("30:a", "a")], timeout=60)
        except RuntimeError as exc:
            errors.append(exc)

    with ScoringPool(1, verdict=strategies.sleepy_verdict) as pool:
        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.monotonic() + 10
        while len(pool.worker_pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)  # until the zygote and the worker both exist
        pids = pool.worker_pids()
    worker.join(5)
    assert not worker.is_alive()
    assert len(errors) == 1 and "closed" in str(errors[0])
    assert _wait_gone(pids) == []


def test_default_pool_is_shared_and_recreated_after_close():
    pool = default_pool()
    assert default_pool() is pool
    pool.close()
    fresh = default_pool()
    assert fresh is not pool and not fresh.closed


def test_cache_remembers_answers_but_not_timeouts_or_crashes():
    with ScoringPool(2, verdict=strategies.sleepy_verdict, cache_size=3) as pool:
        slow = [("0.4:a", "a"), ("0.4:b", "x")]
        assert pool.verify(slow, timeout=5) == [(True, False), (False, False)]
        start = time.monotonic()
        assert pool.verify(slow[::-1], timeout=5) == [(False, False), (True, False)]
        assert time.monotonic() - start < 0.2, "cached verdicts went to the workers again"
        assert pool.verify([("30:t", "t")], timeout=0.2) == [(False, True)]
        start = time.monotonic()
        assert pool.verify([("30:t", "t")], timeout=0.2) == [(False, True)]  # not remembered
        assert time.monotonic() - start >= 0.2
        # Recency is now b, a (a was looked up last); two new entries evict b, keep a.
        pool.verify([("0:c", "c"), ("0:d", "d")], timeout=5)
        start = time.monotonic()
        assert pool.verify([("0.4:a", "a")], timeout=5) == [(True, False)]
        assert time.monotonic() - start < 0.2
        assert pool.verify([("0.4:b", "x")], timeout=5) == [(False, False)]
        assert time.monotonic() - start >= 0.4
    with ScoringPool(1, verdict=strategies.crashing_verdict) as pool:
        assert pool.verify([("crash", "crash")], timeout=5) == [(False, False)]
        assert len(pool._cache) == 0


def test_default_pool_size_from_the_environment(monkeypatch):
    default_pool().close()
    monkeypatch.setenv("VERIMATH_WORKERS", "3")
    assert default_pool().workers == 3
    default_pool().close()
    monkeypatch.setenv("VERIMATH_WORKERS", "zero")
    with pytest.raises(ValueError, match="VERIMATH_WORKERS"):
        default_pool()
    monkeypatch.delenv("VERIMATH_WORKERS")
    assert default_pool().workers >= 1


@pytest.mark.parametrize(
    "kwargs, match",
    [({"workers": 0}, "workers"), ({"workers": 1.5}, "workers"), ({"workers": True}, "workers"),
     ({"memory_limit_mb": -1}, "memory_limit_mb"), ({"cache_size": -1}, "cache_size"),
     ({"verdict": lambda p, g: True}, "verdict")],
)
def test_bad_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ScoringPool(**kwargs)


def test_bad_timeout_raises(sleepy):
    for bad in (0, -1, float("nan"), "5"):
        with pytest.raises(ValueError, match="timeout"):
            sleepy.verify([("0:a", "a")], timeout=bad)


class _Interrupt(Exception):
    pass


def test_an_interrupted_verify_frees_its_workers():
    """Ctrl-C in a notebook must not leave the pool's only worker busy forever."""

    def interrupt(signum, frame):
        raise _Interrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        with ScoringPool(1, verdict=strategies.sleepy_verdict) as pool:
            pool.verify([("0:a", "a")], timeout=5)
            signal.setitimer(signal.ITIMER_REAL, 0.3)
            with pytest.raises(_Interrupt):
                pool.verify([("30:a", "a"), ("30:b", "b")], timeout=60)
            after = []  # in a thread, so that a leaked worker shows as a failure, not a hang
            thread = threading.Thread(
                target=lambda: after.append(pool.verify([("0:c", "c")], timeout=5))
            )
            thread.start()
            thread.join(10)
            assert after == [[(True, False)]], "the interrupted call leaked its worker"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_configure_default_pool_replaces_the_shared_pool():
    from verimath.rewards.pool.scoring_pool import configure_default_pool, default_pool

    old = default_pool()
    pool = configure_default_pool(1)
    try:
        assert default_pool() is pool and pool.workers == 1 and old.closed
        assert pool.verify([("\\sqrt{4}", "2")], timeout=10.0) == [(True, False)]
    finally:
        configure_default_pool(None)
    assert default_pool() is not pool and pool.closed
