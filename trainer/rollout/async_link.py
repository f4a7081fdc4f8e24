"""The trainer's end of the pipes to one rollout generator process (asynchronous rollouts).

:class:`GeneratorLink` sends messages to a started generator process
(:class:`~verimath.trainer.rollout.async_worker.WorkerProcess`), receives the next one of an
expected kind while checking that the process lives, turns an exception raised there or the
death of the process into :class:`GeneratorFailed` (kept as ``failure``), and stops the
process. :class:`Round` is a scored round as it comes back. Which rounds to request, and
which weights version samples them, is :mod:`verimath.trainer.rollout.async_source`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from verimath.trainer.core.groups import Group, RoundStats
from verimath.trainer.rollout.async_worker import Sender

POLL_SECONDS = 0.2
STOP_SECONDS = 5.0


class GeneratorFailed(RuntimeError):
    """The rollout generator process raised an exception or died. ``at_step_start``: raised
    by ``start_step`` on every rank at once (the ranks agreed; none has begun the step);
    ``own``: this rank's generator failed (False: another rank's did)."""

    def __init__(self, message: str, *, at_step_start: bool = False, own: bool = True) -> None:
        super().__init__(message)
        self.at_step_start, self.own = at_step_start, own


@dataclass
class Round:
    """One scored generation round from the generator, with the version that sampled it."""

    request: int
    version: int
    groups: list[Group]
    correct: np.ndarray
    """``(P, G)`` bool."""
    stats: RoundStats
    seconds: float = 0.0
    """Generator seconds spent on it (sampling, scoring, log-probs)."""
    idle: float = 0.0
    """Generator seconds spent waiting for a message before it (for weights or work)."""
    cpu: float = 0.0
    """CPU seconds of the generator process on it (its own threads; scoring workers apart)."""

    @classmethod
    def from_message(cls, d: dict) -> Round:
        groups = [Group.from_dict(g) for g in d["groups"]]
        for g in groups:
            g.step = int(d["version"])
        correct = np.asarray(d["correct"], dtype=bool).reshape(len(groups), -1)
        return cls(request=int(d["request"]), version=int(d["version"]), groups=groups,
                   correct=correct, stats=RoundStats(**d["stats"]),
                   seconds=float(d.get("seconds", 0.0)), idle=float(d.get("idle", 0.0)),
                   cpu=float(d.get("cpu", 0.0)))

    def to_dict(self) -> dict:
        return {"request": self.request, "version": self.version,
                "groups": [g.to_dict() for g in self.groups],
                "correct": self.correct.tolist(), "stats": dataclasses.asdict(self.stats)}


class GeneratorLink:
    """The pipes to a started generator process and its failure, once one is seen."""

    def __init__(self, process) -> None:
        self.process = process
        self.inbox = process.inbox
        self.sender = Sender(process.outbox)
        self.failure: GeneratorFailed | None = None
        self.closed = False

    def send(self, message) -> None:
        self.sender.send(message)

    def receive(self, kind: str) -> dict:
        """The next message's payload (the message must be ``kind``), checking that the
        generator lives."""
        while True:
            self.raise_if_failed()
            if self.inbox.poll(POLL_SECONDS):
                try:
                    message = self.inbox.recv()
                except (EOFError, OSError):  # the process ended: name how
                    self.process.join(STOP_SECONDS)
                    self.fail_dead()
                if message[0] == "error":
                    self.fail(f"the rollout generator process raised an exception:\n"
                              f"{message[1].rstrip()}")
                if message[0] != kind:
                    self.fail(f"the rollout generator sent {message[0]!r}, expected {kind!r}")
                return message[1]
            if not self.process.is_alive():
                self.fail_dead()

    def fail_dead(self) -> None:
        code = self.process.exitcode
        how = (f"was killed by signal {-code}" if code and code < 0 else
               f"exited with code {code}" if code is not None else "closed its pipe")
        self.fail(f"the rollout generator process (pid {self.process.pid}) {how}")

    def fail(self, message: str) -> None:
        self.failure = GeneratorFailed(message)
        raise self.failure

    def raise_if_failed(self) -> None:
        if self.failure is not None:
            raise GeneratorFailed(str(self.failure))

    def close(self) -> None:
        """Stop the generator (at once when it does not answer) and its pipes; idempotent."""
        if self.closed:
            return
        self.closed = True
        if self.process.is_alive():
            self.sender.send(("stop",))
        self.sender.close(timeout=1.0)
        self.process.join(STOP_SECONDS)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(STOP_SECONDS)
        self.inbox.close()
