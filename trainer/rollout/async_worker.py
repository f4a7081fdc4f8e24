"""The rollout generator process of ``rollout.async_steps >= 1`` (its trainer side is
``verimath.trainer.rollout.async_source``).

The process holds its own copy of the policy, an HF engine on it and the training
:class:`~verimath.trainer.rollout.episodes.EpisodeSource` (problem stream, scoring), and
answers the trainer's messages strictly in the order they were sent:

- ``("weights", version, payload)``: load the policy's weights (``torch.save`` bytes of a
  state dict, or None when the weights did not change) and call them ``version``;
- ``("generate", request, num_prompts, version)``: one scored round with the weights it
  holds, which must be ``version``; the groups carry the log-probs of that policy
  (``old_logprobs``), so the trainer can take their ratio against it later;
- ``("load", episodes_state, rng_state)``: continue a saved problem stream and RNG;
- ``("state",)``: send the problem stream and RNG as they are now;
- ``("stop",)``: end.

Because weights and requests travel in one ordered pipe, the version that samples each
round, and so every round, is determined by the trainer's messages alone: an asynchronous
run is as reproducible as a synchronous one. The process ignores SIGINT and SIGTERM (the
trainer decides when it ends), dies with the trainer (``PR_SET_PDEATHSIG``), and reports an
exception as ``("error", traceback)`` before it exits.
"""

from __future__ import annotations

import dataclasses
import io
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Sender", "WorkerProcess", "WorkerSpec", "rng_from_list", "rng_to_list",
           "start_worker", "worker_main"]


@dataclass
class WorkerSpec:
    """What the generator process is built from (pickled into it at start)."""

    model: bytes
    """``torch.save`` bytes of the policy module (architecture and weights)."""
    tokenizer: bytes
    """``pickle`` bytes of the tokenizer."""
    source: dict
    """Keyword arguments of ``EpisodeSource`` other than ``tokenizer`` and ``engine``."""
    forward: dict
    """``sequence_logprobs`` settings of the trainer (temperature, micro-batch, chunks)."""
    pad_id: int
    seed: int
    """Seeds the process's torch RNG, which draws every sample."""
    batch_size: int
    """Sequences per ``generate`` call."""
    threads: int = 1
    reward_workers: int = 0
    """``reward.workers`` (0: the scoring pool's default)."""
    fail_after: int | None = field(default=None, repr=False)
    """Rounds after which the process raises (tests of the trainer's shutdown)."""


class Sender:
    """Sends on a ``multiprocessing`` connection from a daemon thread, so that a large
    message (weights, a round) never blocks the sender until the other side reads it."""

    def __init__(self, conn) -> None:
        self.conn, self.error = conn, None
        self.queue: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="verimath-async-send",
                                       daemon=True)
        self.thread.start()

    def send(self, message) -> None:
        self.queue.put(message)

    def _run(self) -> None:
        while True:
            message = self.queue.get()
            if message is None:
                return
            try:
                self.conn.send(message)
            except (OSError, EOFError, ValueError) as exc:  # the other side is gone
                self.error = exc
                return

    def close(self, timeout: float = 5.0) -> None:
        """Send what is queued (up to ``timeout`` seconds), then close the connection."""
        self.queue.put(None)
        self.thread.join(timeout)
        self.conn.close()


def rng_to_list(state) -> list[int]:
    """A torch RNG state (a uint8 tensor) as JSON-able ints."""
    return [int(x) for x in state.tolist()]


def rng_from_list(values: list[int]):
    import torch

    return torch.tensor(values, dtype=torch.uint8)


class WorkerProcess:
    """The generator process seen from the trainer: its pipes and its life."""

    def __init__(self, popen: subprocess.Popen, inbox, outbox) -> None:
        self.popen, self.inbox, self.outbox = popen, inbox, outbox

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def exitcode(self) -> int | None:
        return self.popen.poll()

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    def join(self, timeout: float) -> None:
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pass

    def kill(self) -> None:
        self.popen.kill()


def start_worker() -> WorkerProcess:
    """Start ``python -m verimath.trainer.rollout.async_worker`` with two pipes (a fresh
    interpreter: nothing of the trainer's ``__main__`` is imported again, no forked thread
    pools); it dies with this process. Its first message must be the :class:`WorkerSpec`."""
    from multiprocessing.connection import Connection

    from verimath.trainer.run.guard import die_with_parent

    their_in, my_out = os.pipe()
    my_in, their_out = os.pipe()
    popen = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "verimath.trainer.rollout.async_worker", str(their_in),
         str(their_out)], pass_fds=(their_in, their_out),
        preexec_fn=die_with_parent)  # noqa: PLW1509
    os.close(their_in)
    os.close(their_out)
    return WorkerProcess(popen, Connection(my_in, writable=False),
                         Connection(my_out, readable=False))


def worker_main(inbox, outbox, spec: WorkerSpec) -> None:
    """The generator process: see the module docstring."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the trainer saves first, then stops us
    from verimath.trainer.run.guard import die_with_parent

    die_with_parent()
    if os.getppid() == 1:  # the trainer ended before the line above
        os._exit(1)
    sender = Sender(outbox)
    try:
        _serve(inbox, sender, spec)
    except BaseException:  # noqa: BLE001 - every failure is reported to the trainer
        sender.send(("error", traceback.format_exc()))
        sender.close()
        os._exit(1)
    sender.close()


def _build(spec: WorkerSpec):
    import pickle

    import torch
    from verimath.trainer.rollout.engine import HFRolloutEngine
    from verimath.trainer.rollout.episodes import EpisodeSource

    torch.set_num_threads(max(1, spec.threads))
    if spec.reward_workers:
        from verimath.rewards.pool import configure_default_pool

        configure_default_pool(spec.reward_workers)
    model = torch.load(io.BytesIO(spec.model), weights_only=False).eval()
    tokenizer = pickle.loads(spec.tokenizer)
    engine = HFRolloutEngine(model, tokenizer, batch_size=spec.batch_size)
    source = EpisodeSource(tokenizer=tokenizer, engine=engine, **spec.source)
    torch.manual_seed(spec.seed)
    return model, source


def _serve(inbox, sender: Sender, spec: WorkerSpec) -> None:
    import torch
    from verimath.trainer.algo.batch import keep_sampling_policy

    model, source = _build(spec)
    version, rounds, idle = None, 0, 0.0
    while True:
        t0 = time.perf_counter()
        message = inbox.recv()
        idle += time.perf_counter() - t0
        kind = message[0]
        if kind == "stop":
            source.close()
            return
        if kind == "weights":
            _, version, payload = message
            if payload is not None:
                model.load_state_dict(torch.load(io.BytesIO(payload), weights_only=True))
        elif kind == "load":
            _, episodes, rng = message
            source.load_state_dict(episodes)
            if rng is not None:
                torch.set_rng_state(rng_from_list(rng))
        elif kind == "state":
            sender.send(("state", _stream(source)))
        elif kind == "generate":
            _, request, num_prompts, wanted = message
            if wanted != version:
                raise RuntimeError(f"round {request} asks for policy version {wanted}, the "
                                   f"generator holds {version}: the messages are out of order")
            if spec.fail_after is not None and rounds >= spec.fail_after:
                raise RuntimeError(f"test failure after {rounds} rounds (fail_after)")
            t1 = time.perf_counter()
            groups, correct = source.next_round(0, num_prompts)
            keep_sampling_policy(model, groups, pad_id=spec.pad_id, device="cpu",
                                 **spec.forward)
            stats = dataclasses.asdict(source.pop_stats())
            sender.send(("round", {
                "request": request, "version": version,
                "groups": [g.to_dict() for g in groups],
                "correct": np.asarray(correct, dtype=bool).tolist(), "stats": stats,
                "seconds": time.perf_counter() - t1, "idle": idle,
                "stream": _stream(source)}))
            rounds, idle = rounds + 1, 0.0
        else:
            raise RuntimeError(f"unknown message {kind!r}")


def _stream(source) -> dict:
    """Where the problem stream and the sampling RNG are now."""
    import torch

    return {"episodes": source.state_dict(), "rng": rng_to_list(torch.get_rng_state())}


def main(argv: list[str]) -> None:
    """``python -m verimath.trainer.rollout.async_worker IN_FD OUT_FD`` (see
    :func:`start_worker`)."""
    from multiprocessing.connection import Connection

    inbox = Connection(int(argv[0]), writable=False)
    outbox = Connection(int(argv[1]), readable=False)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        spec = inbox.recv()
    except EOFError:  # the trainer ended before it sent the spec
        return
    worker_main(inbox, outbox, spec)


if __name__ == "__main__":
    main(sys.argv[1:])
