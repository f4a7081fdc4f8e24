"""The child side of ``ScoringPool``: the zygote process and the workers it forks.

The pool (``verimath.rewards.pool.scoring_pool``) starts the zygote as ``python -c`` running
``zygote_main``; nothing here runs in the caller's process. Protocol on the control socket
(pool -> zygote): 9-byte messages, ``b"s"`` + 8 zero bytes to fork a worker (the zygote
answers with the worker's pid and, as passed descriptor, the pool's end of a socket pair to
it), ``b"k"`` + pid to kill and reap a worker. EOF on control means the pool is closing:
the zygote kills and reaps every worker it still has, then exits. Workers answer
``(task_id, pred, gold, setting)`` with ``(task_id, verdict)`` until their socket closes;
``setting`` is None for the default conventions, else ``Conventions.key()``, passed on to
the verdict function as its third argument.
"""

from __future__ import annotations

import os
import signal
import socket
from multiprocessing.connection import Connection

from verimath.rewards.equality.conventions import Conventions

SPAWN, KILL = b"s", b"k"
# One pair of each common answer shape: sympy's first call on a shape imports modules and
# fills caches (tens to hundreds of ms); done in the zygote, every forked worker inherits it.
WARM_UP = (
    ("1/2", "0.5"), ("x^2+1", "1+x^2"), ("\\frac{\\sqrt{2}}{2}", "1"),
    ("(x-3)^2", "x^2+6x+9"), ("(x+3)^2", "x^2+6x+9"), ("2\\sqrt{3}", "\\sqrt{12}"),
    ("\\pi \\cdot 4", "4\\pi"), ("3\\pi", "4\\pi"), ("(1, 2]", "[1, 2)"), ("(1, 2)", "(1, 3)"),
    ("\\{1, 2\\}", "\\{2, 1\\}"), ("x = 2", "2"), ("0.333333", "\\frac{1}{3}"),
    ("y = 2x + 1", "2x+1"), ("x^2 - 4 = 0", "x = 2"), ("\\frac{\\pi}{3}", "60^\\circ"),
    ("[0, \\infty)", "x \\geq 0"), ("\\sin x", "\\cos x"), ("e^{2}", "e^2"),
    ("\\frac{4}{2x+2}", "\\frac{2}{x+1}"), ("\\frac{3}{x-1}", "\\frac{3}{1+x}"),
)


def resolve_verdict(path: str = ""):
    """The verdict function named ``"module:qualname"``; "" means the default verifier."""
    if path:
        import importlib

        module_name, _, qualname = path.partition(":")
        target = importlib.import_module(module_name)
        for part in qualname.split("."):
            target = getattr(target, part)
        return target
    from verimath.rewards.equality.equivalence import symbolic_verdict

    return symbolic_verdict


def zygote_main(control_fd: int, memory_limit_mb: int, verdict_path: str) -> None:
    """Body of the zygote process: warm up, then serve spawn and kill requests on control.

    Requests are served as soon as the imports are done, between warm-up pairs too, so that
    the first worker of a fresh pool does not wait for the whole warm-up (it is forked from
    a partly warm zygote); workers forked after the warm-up share its heap copy-on-write. The
    zygote reaps its own children (the container's PID 1 may not) and, when the pool closes,
    kills and reaps every worker it still has before exiting.
    """
    import gc
    import logging

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.getLogger("math_verify").setLevel(logging.ERROR)  # we bound time ourselves
    control = socket.socket(fileno=control_fd)
    verdict = resolve_verdict(verdict_path)
    children: set[int] = set()
    open_ = True
    for pred, gold in WARM_UP:
        open_ = _serve_pending(control, children, verdict, memory_limit_mb)
        if not open_:
            break
        try:  # first calls build parser tables and caches; do it once, before most forks
            verdict(pred, gold)
        except Exception:  # noqa: S110 - warm-up only
            pass
    if open_:
        gc.collect()
        gc.freeze()  # keep the warmed-up heap shared copy-on-write with the workers
    while open_:
        open_ = _serve_one(control, children, verdict, memory_limit_mb)
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    _reap(children, block=True)
    os._exit(0)


def _serve_pending(
    control: socket.socket, children: set[int], verdict, memory_limit_mb: int
) -> bool:
    """Serve the requests already waiting on control; False once the pool has closed."""
    import select

    while select.select([control], [], [], 0)[0]:
        if not _serve_one(control, children, verdict, memory_limit_mb):
            return False
    return True


def _serve_one(control: socket.socket, children: set[int], verdict, memory_limit_mb: int) -> bool:
    """Wait for one request and serve it; False on EOF (the pool closed or its process died)."""
    message = _recv_exact(control, 9)
    command, pid = message[:1], int.from_bytes(message[1:], "little")
    if command == KILL:  # unreaped, so a pid in children is surely still ours
        if pid in children:
            os.kill(pid, signal.SIGKILL)
            _reap({pid}, block=True)
            children.discard(pid)
        return True
    if command != SPAWN:
        return False
    _reap(children, block=False)
    children.add(_fork_worker(control, verdict, memory_limit_mb))
    return True


def _fork_worker(control: socket.socket, verdict, memory_limit_mb: int) -> int:
    """Fork one worker; send its pid and its end of a fresh socket pair back to the pool."""
    parent_end, child_end = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        control.close()
        parent_end.close()
        _worker_main(child_end, verdict, memory_limit_mb)
        os._exit(0)
    child_end.close()
    socket.send_fds(control, [pid.to_bytes(8, "little")], [parent_end.fileno()])
    parent_end.close()
    return pid


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


def _reap(children: set[int], *, block: bool) -> None:
    """Wait for the children that have exited (all of them when block) and forget them."""
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            children.discard(pid)


def _worker_main(sock: socket.socket, verdict, memory_limit_mb: int) -> None:
    """Body of a worker: answer ``(task_id, pred, gold, setting)`` with ``(task_id, verdict)``
    forever."""
    _die_with_parent()
    if memory_limit_mb > 0:
        try:
            import resource

            limit = memory_limit_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ImportError, ValueError, OSError):
            pass
    conn = Connection(sock.detach())
    while True:
        try:
            task_id, pred, gold, setting = conn.recv()
        except (EOFError, OSError):
            return
        try:
            if setting is None:
                ok = bool(verdict(pred, gold))
            else:
                ok = bool(verdict(pred, gold, Conventions.from_key(setting)))
        except BaseException:  # RecursionError, MemoryError, sympy errors: all mean "no"
            ok = False
        try:
            conn.send((task_id, ok))
        except OSError:
            return


def _die_with_parent() -> None:
    """Linux: ask for SIGKILL when the zygote dies (best effort elsewhere)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
