"""The parent side of ``ScoringPool``'s processes: the zygote it launches, the workers the
zygote forks for it, and killing them.

:class:`PoolProcesses` holds everything the pool owns (the zygote, its control socket, the
idle and live workers and the lock and condition that guard them), apart from the pool
object so that a finalizer can close it. The child side is ``pool_worker.py``; the scheduling
of items onto workers is ``pool.py``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection

from verimath.rewards.pool_worker import KILL, SPAWN

_ZYGOTE_CODE = (
    "import sys; from verimath.rewards.pool_worker import zygote_main; "
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
                self._start_zygote()
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

    def _start_zygote(self) -> None:
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
