"""One live process per run directory, and ranks that end with their launcher.

- :class:`RunLock`: an exclusive ``flock`` on the run directory itself, held by the process
  that writes the run (the single process, or rank 0). The kernel releases it when that
  process ends, however it ends, so a dead run never blocks its ``--resume``; a second
  ``verimath train`` on a directory in use is refused before it writes anything.
- :func:`die_with_parent`: the ``preexec_fn`` of the torchrun process that ``verimath train
  --nproc N`` starts (Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)``), so torchrun dies with the
  launcher even when the launcher is killed with ``kill -9``.
- :func:`watch_parent`: a daemon thread in every rank that ends the rank at once (no
  checkpoint, no metrics line) when its parent, torchrun, is gone (the rank is then
  re-parented) or when the launcher named by ``$VERIMATH_LAUNCHER_PID`` has died. torchrun
  starts ranks in sessions of their own, so signals to the launcher's process group do not
  reach them.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

LAUNCHER_ENV = "VERIMATH_LAUNCHER_PID"
"""Set by ``verimath train --nproc N`` for its ranks: the launcher's pid."""

POLL_SECONDS = 0.5


class RunDirInUse(ValueError):
    """Another live process holds the run directory."""


class RunLock:
    """``with RunLock(run_dir):`` holds the directory's lock; :meth:`acquire` raises
    :class:`RunDirInUse` when a live process holds it (no-op where ``fcntl`` is missing)."""

    def __init__(self, run_dir: str | os.PathLike) -> None:
        self.run_dir, self.fd = Path(run_dir), None

    def acquire(self) -> RunLock:
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock
            return self
        fd = os.open(self.run_dir, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunDirInUse(
                f"{self.run_dir} is in use by another live verimath train process (it holds "
                "the run directory's lock); wait for it to end or stop it, then resume, or "
                "choose another --output-dir") from None
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the flock
            self.fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def check_not_in_use(run_dir: str | os.PathLike) -> None:
    """RunDirInUse when a live process holds ``run_dir`` (nothing when it does not exist)."""
    if Path(run_dir).is_dir():
        RunLock(run_dir).acquire().release()


def die_with_parent() -> None:
    """In a child, before exec: SIGKILL when the parent dies (Linux; elsewhere nothing)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL))
    except (OSError, AttributeError):
        pass


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = _stat(pid)
    return fields is None or fields[0] not in ("Z", "X")


def children_of(pid: int) -> list[int]:
    """The live child processes of ``pid`` (from ``/proc``; empty where there is none)."""
    try:
        entries = [int(e) for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []
    return [child for child, fields in ((c, _stat(c)) for c in entries)
            if fields is not None and int(fields[1]) == pid and fields[0] not in ("Z", "X")]


def _stat(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` after the command name (state, parent pid, ...); None if unread."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def watch_parent(launcher_pid: int | None = None, *, interval: float = POLL_SECONDS) -> None:
    """Start a daemon thread that kills this process when its parent changes (the parent
    died) or ``launcher_pid`` (default ``$VERIMATH_LAUNCHER_PID``) is gone."""
    if launcher_pid is None and os.environ.get(LAUNCHER_ENV, "").isdigit():
        launcher_pid = int(os.environ[LAUNCHER_ENV])
    parent = os.getppid()

    def watch() -> None:
        while True:
            if os.getppid() != parent or (launcher_pid and not _alive(launcher_pid)):
                os.kill(os.getpid(), signal.SIGKILL)  # nothing more is written
            threading.Event().wait(interval)

    threading.Thread(target=watch, name="verimath-parent-watch", daemon=True).start()
