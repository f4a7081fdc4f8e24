"""A pool of worker processes that runs symbolic verification under a hard wall-clock timeout.

Why processes: sympy can run for hours on hostile model output (``9^{9^{9^{9}}}``) and Python
cannot interrupt a thread stuck in C code; ``signal.alarm`` (math-verify's own timeout) only
works in the main thread. So every symbolic check runs in a worker process, and a worker that
passes its deadline is killed with SIGKILL and replaced. The item then counts as incorrect and
``timed_out``. Nothing is ever evaluated as Python code here; workers only call
``verimath.rewards.equality.equivalence.symbolic_verdict``.

How workers start cheaply: the pool launches one *zygote*, a fresh interpreter
(``python -c ...``, so the caller's ``__main__``, torch and its threads are never imported or
forked) that imports math-verify and sympy once, warms them up, and then forks a worker per
request in about a millisecond. Workers ignore SIGINT (Ctrl-C reaches the caller only), run
with an address-space limit (``memory_limit_mb``) and die with the zygote, which exits when
the pool closes or the calling process dies.

Ordering: ``verify(pairs, timeout=..., conventions=...)`` returns one ``(verdict, timed_out)``
per pair, in order. Each worker holds at most one item; a killed worker's pipe is closed, so a
late answer can never be attributed to a later item.

Crashes: a worker that dies while it holds an item (a segfault, the kernel's OOM killer, a
stray ``kill``) is replaced and its item is sent once more to a fresh worker; if that one dies
too, the item counts as incorrect (``(False, False)``) and a warning is logged on the
``verimath.rewards.pool`` logger. Timeouts are not retried: the same item would time out
again. The pool is thread-safe: any number of threads may call ``verify`` at once, and they
share the ``workers`` processes.

Imports go one way: ``batch -> pool -> pool.worker -> equivalence``; batch scoring on a given
pool is ``score_batch(..., pool=pool)``. This module is the parent side: it launches the
zygote, has it fork and kill workers (:class:`PoolProcesses`), schedules items onto them,
times them out and caches verdicts; the child side (zygote and workers) is
``verimath.rewards.pool.worker``. POSIX only (it needs ``fork`` and descriptor passing over
Unix sockets).
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Sequence
from multiprocessing.connection import Connection, wait

from verimath.rewards.equality.conventions import DEFAULT, Conventions, as_conventions
from verimath.rewards.pool.worker import KILL, SPAWN

_DEFAULT_MEMORY_MB = 4096
_LOG = logging.getLogger("verimath.rewards.pool")


_ZYGOTE_CODE = (
    "import sys; from verimath.rewards.pool.worker import zygote_main; "
    "zygote_main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])"
)


class Worker:
    """A forked worker: its pid and the pool's end of the pipe to it."""

    __slots__ = ("pid", "conn")

    def __init__(self, pid: int, conn: Connection):
        self.pid = pid
        self.conn = conn


class PoolProcesses:
    """Everything the pool owns; separate from ScoringPool so a finalizer can close it."""

    def __init__(self, workers: int, memory_limit_mb: int, verdict_path: str):
        self.workers = workers
        self.memory_limit_mb = memory_limit_mb
        self.verdict_path = verdict_path
        self.cond = threading.Condition()
        self.spawn_lock = threading.Lock()
        self.idle: list[Worker] = []
        self.live: set[Worker] = set()
        self.slots = 0  # live workers plus workers being spawned
        self.zygote: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.closed = False

    def kill(self, worker: Worker) -> None:
        """Have the zygote SIGKILL and reap ``worker`` (only it may: it owns the pid)."""
        worker.conn.close()
        with self.spawn_lock:
            if self.control is not None and self.control.fileno() >= 0:
                try:
                    self.control.sendall(KILL + worker.pid.to_bytes(8, "little"))
                except OSError:
                    pass  # the zygote is gone, and its workers died with it

    def close(self) -> None:
        """Close idle pipes, then the control socket: the zygote kills and reaps every worker."""
        with self.cond:
            if self.closed:
                return
            self.closed = True
            idle = list(self.idle)
            self.idle.clear()
            self.cond.notify_all()
        for worker in idle:
            worker.conn.close()
        with self.spawn_lock:
            if self.control is not None:
                self.control.close()
            if self.zygote is not None:
                try:
                    self.zygote.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.zygote.kill()
                    self.zygote.wait()

    def spawn(self) -> Worker:
        """A fresh worker forked by the zygote (started first if it is not running)."""
        with self.spawn_lock:
            if self.closed:
                raise RuntimeError("this ScoringPool is closed")
            if self.zygote is None or self.zygote.poll() is not None:
                self.start_zygote()
            try:
                self.control.sendall(SPAWN + bytes(8))
                msg, fds, _, _ = socket.recv_fds(self.control, 8, 1)
            except OSError as exc:
                raise RuntimeError(f"the scoring pool's zygote process failed: {exc}") from exc
            if len(msg) != 8 or len(fds) != 1:
                self.zygote.kill()
                self.zygote.wait()
                raise RuntimeError("the scoring pool's zygote process died while starting a worker")
            return Worker(int.from_bytes(msg, "little"), Connection(fds[0]))

    def start_zygote(self) -> None:
        """Launch the zygote process (the caller holds ``spawn_lock``)."""
        if self.control is not None:
            self.control.close()
        ours, theirs = socket.socketpair()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self.zygote = subprocess.Popen(
            [
                sys.executable, "-c", _ZYGOTE_CODE,
                str(theirs.fileno()), str(self.memory_limit_mb), self.verdict_path,
            ],
            pass_fds=(theirs.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self.control = ours


def _verdict_path(verdict) -> str:
    if verdict is None:
        return ""
    module = getattr(verdict, "__module__", None)
    qualname = getattr(verdict, "__qualname__", None)
    if (not callable(verdict) or not module or not qualname or "<" in qualname
            or module == "__main__"):
        raise ValueError(
            f"verdict must be a function importable by name from a module (not __main__, not a "
            f"lambda or a nested function), got {verdict!r}"
        )
    return f"{module}:{qualname}"



class ScoringPool:
    """Worker processes for symbolic verification with a hard timeout per item.

    Args:
        workers: number of worker processes (default: the CPUs this process may use, at most 8).
        verdict: the function ``(pred, gold) -> bool`` that workers run; default
            ``verimath.rewards.equality.equivalence.symbolic_verdict`` (math-verify, gold
            first). A custom one must be importable by name (workers import it; it is never
            pickled).
        memory_limit_mb: address-space limit of each worker (``RLIMIT_AS``); an item that
            needs more fails with MemoryError and counts as incorrect. 0 disables it.
        cache_size: verdicts remembered (least recently used dropped first), so that answers
            seen again, as in later epochs, skip the workers. Timeouts and crashes are never
            remembered, nor pairs longer than 1,000 characters. 0 disables it. Assumes a
            deterministic verdict function.

    Use as a context manager or call ``close()`` (idempotent); both end every process.
    Workers start lazily, on the first item that needs one; ``start()`` launches the zygote
    ahead of that, in the background (the verdict functions do so on their first call).
    """

    def __init__(
        self,
        workers: int | None = None,
        *,
        verdict=None,
        memory_limit_mb: int = _DEFAULT_MEMORY_MB,
        cache_size: int = 65_536,
    ):
        if os.name != "posix":
            raise RuntimeError("ScoringPool needs a POSIX system (fork and Unix sockets)")
        if workers is None:
            workers = min(_usable_cpus(), 8)
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        if (isinstance(memory_limit_mb, bool) or not isinstance(memory_limit_mb, int)
                or memory_limit_mb < 0):
            raise ValueError(f"memory_limit_mb must be >= 0 (0 = no limit), got {memory_limit_mb}")
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise ValueError(f"cache_size must be >= 0 (0 = no cache), got {cache_size!r}")
        self._state = PoolProcesses(workers, memory_limit_mb, _verdict_path(verdict))
        self._cache: OrderedDict[tuple, bool] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()
        self._ids = itertools.count()
        self._pid = os.getpid()
        self._finalizer = weakref.finalize(self, PoolProcesses.close, self._state)

    @property
    def workers(self) -> int:
        return self._state.workers

    @property
    def closed(self) -> bool:
        return self._state.closed

    def worker_pids(self) -> list[int]:
        """Process ids of the live workers, plus the zygote's (for tests and monitoring)."""
        with self._state.cond:
            pids = [w.pid for w in self._state.live]
        zygote = self._state.zygote
        return pids + ([zygote.pid] if zygote is not None and zygote.poll() is None else [])

    def close(self) -> None:
        """Kill every worker and the zygote. Safe to call twice; later calls to verify raise."""
        self._finalizer()

    def start(self) -> None:
        """Start the zygote now, without waiting for it: it imports math-verify and warms up
        in the background (seconds), so that the first item that needs a worker waits less.
        Idempotent; ``verify`` starts it anyway when it was not started."""
        state = self._state
        if state.closed or os.getpid() != self._pid:
            return
        with state.spawn_lock:
            if not state.closed and (state.zygote is None or state.zygote.poll() is not None):
                state.start_zygote()

    def __enter__(self) -> ScoringPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def verify(self, pairs: Sequence[tuple[str, str]], *, timeout: float = 5.0,
               conventions: Conventions | str | None = None) -> list[tuple[bool, bool]]:
        """Symbolic verdicts for ``(pred, gold)`` pairs, in order, as ``(verdict, timed_out)``.

        Each item gets ``timeout`` seconds of wall-clock time from the moment a worker receives
        it; past that its worker is killed and the result is ``(False, True)``. An item whose
        worker dies is retried once on a fresh worker; a second death gives ``(False, False)``
        and a logged warning. Raises RuntimeError once the pool is closed. ``conventions``
        (``Conventions``, ``"default"`` or ``"strict"``) reach the verdict function as its
        third argument when they differ from the defaults (a custom verdict must then accept
        it).
        """
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        conventions = as_conventions(conventions)
        setting = None if conventions == DEFAULT else conventions.key()
        if self._state.closed:
            raise RuntimeError("this ScoringPool is closed")
        if os.getpid() != self._pid:
            raise RuntimeError("a ScoringPool cannot be used from a forked child; create a new one")
        keys = [(str(pred), str(gold), setting) for pred, gold in pairs]
        results = self._recall(keys)
        queue = deque(i for i, got in enumerate(results) if got is None)
        inflight: dict[Connection, tuple[Worker, int, int, float]] = {}
        answered: set[int] = set()  # items a worker really answered (not crashed or timed out)
        retried: set[int] = set()
        try:
            while queue or inflight:
                while queue:
                    worker = self._acquire(block=not inflight)
                    if worker is None:
                        break
                    idx = queue.popleft()
                    task_id = next(self._ids)
                    try:
                        worker.conn.send((task_id, *keys[idx]))
                    except OSError:  # worker died while idle; try again with a new one
                        self._discard(worker)
                        queue.appendleft(idx)
                        continue
                    inflight[worker.conn] = (worker, idx, task_id, time.monotonic() + timeout)
                for idx in self._collect(inflight, results, answered):
                    if idx not in retried:
                        retried.add(idx)
                        queue.append(idx)
                        continue
                    results[idx] = (False, False)
                    _LOG.warning("a scoring worker died twice on one item; counted incorrect: "
                                 "pred %.80r, gold %.80r", *keys[idx][:2])
        finally:  # KeyboardInterrupt or an error: workers still busy for us are killed
            for worker, *_ in inflight.values():
                self._discard(worker)
        self._remember([keys[i] for i in answered], [results[i][0] for i in answered])
        return results  # type: ignore[return-value]

    def _recall(self, keys: list[tuple]) -> list[tuple[bool, bool] | None]:
        """Cached ``(verdict, False)`` per key, None where the workers must decide."""
        out: list[tuple[bool, bool] | None] = [None] * len(keys)
        if self._cache_size:
            with self._cache_lock:
                for i, key in enumerate(keys):
                    if key in self._cache:
                        self._cache.move_to_end(key)
                        out[i] = (self._cache[key], False)
        return out

    def _remember(self, keys: list[tuple], verdicts: list[bool]) -> None:
        if not self._cache_size:
            return
        with self._cache_lock:
            for key, verdict in zip(keys, verdicts):
                if len(key[0]) + len(key[1]) <= 1000:
                    self._cache[key] = verdict
                    self._cache.move_to_end(key)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _collect(self, inflight: dict, results: list, answered: set[int]) -> list[int]:
        """Wait for the first answer or deadline; store answers, kill workers past deadline.

        Returns the items whose worker died (their results are left for the caller)."""
        crashed = []
        next_deadline = min(entry[3] for entry in inflight.values())
        ready = wait(list(inflight), timeout=max(0.0, next_deadline - time.monotonic()))
        for conn in ready:
            worker, idx, task_id, _ = inflight.pop(conn)
            try:
                got_id, ok = conn.recv()
            except (EOFError, OSError):
                got_id, ok = None, False
            if self._state.closed:
                raise RuntimeError("this ScoringPool was closed while verifying")
            if got_id == task_id:
                results[idx] = (bool(ok), False)
                answered.add(idx)
                self._release(worker)
            else:  # crashed (or, impossibly, answered something else): never trust it again
                crashed.append(idx)
                self._discard(worker)
        now = time.monotonic()
        for conn in [c for c, entry in inflight.items() if entry[3] <= now]:
            worker, idx, _, _ = inflight.pop(conn)
            results[idx] = (False, True)
            self._discard(worker)
        return crashed

    def _acquire(self, *, block: bool) -> Worker | None:
        state = self._state
        with state.cond:
            while True:
                if state.closed:
                    raise RuntimeError("this ScoringPool was closed while verifying")
                while state.idle:
                    worker = state.idle.pop()
                    if not worker.conn.poll():  # an idle worker has nothing to say...
                        return worker
                    self._retire(worker)  # ...unless it died (EOF) while idle
                if state.slots < state.workers:
                    state.slots += 1
                    break
                if not block:
                    return None
                state.cond.wait()
        try:
            worker = state.spawn()
        except BaseException:
            with state.cond:
                state.slots -= 1
                state.cond.notify()
            raise
        with state.cond:
            state.live.add(worker)
            if state.closed:
                state.kill(worker)
                raise RuntimeError("this ScoringPool was closed while verifying")
        return worker

    def _release(self, worker: Worker) -> None:
        with self._state.cond:
            if worker in self._state.live:
                self._state.idle.append(worker)
                self._state.cond.notify()

    def _discard(self, worker: Worker) -> None:
        with self._state.cond:
            self._retire(worker)

    def _retire(self, worker: Worker) -> None:
        """Kill ``worker`` and free its slot; the caller holds ``state.cond``."""
        state = self._state
        state.kill(worker)
        if worker in state.live:
            state.live.discard(worker)
            state.slots -= 1
            state.cond.notify()


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # respects taskset and container CPU sets
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_default_pool: ScoringPool | None = None
_default_lock = threading.Lock()


def default_pool() -> ScoringPool:
    """The process-wide pool (created on first use, closed at interpreter exit).

    Its size is ``$VERIMATH_WORKERS`` when set (useful when several trainer processes share
    a machine), else the ``ScoringPool`` default. A forked child gets its own pool.
    """
    global _default_pool
    with _default_lock:
        pool = _default_pool
        if pool is None or pool.closed or pool._pid != os.getpid():
            pool = _default_pool = ScoringPool(_env_workers())
        return pool


def configure_default_pool(workers: int | None) -> ScoringPool:
    """Replace the process-wide pool by one of ``workers`` processes (None: the default size).

    For trainers that size scoring from their own config; the old pool's workers are ended.
    """
    global _default_pool
    with _default_lock:
        old, _default_pool = _default_pool, ScoringPool(workers if workers else _env_workers())
        pool = _default_pool
    if old is not None:
        old.close()
    return pool


def _env_workers() -> int | None:
    value = os.environ.get("VERIMATH_WORKERS", "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"VERIMATH_WORKERS must be a positive integer, got {value!r}")
    return int(value)
