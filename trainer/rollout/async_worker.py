"""The rollout generator process of ``rollout.async_steps >= 1`` (its trainer side is
``verimath.trainer.rollout.async_source``).

The process holds a rollout engine of its own and the training
:class:`~verimath.trainer.rollout.episodes.EpisodeSource` (problem stream, scoring): with
``rollout.engine=hf`` a copy of the policy and an HF engine on it, with ``rollout.engine=vllm``
a :class:`~verimath.trainer.rollout.vllm_engine.VLLMRolloutEngine` (no HF copy: vLLM holds the
weights). It answers the trainer's messages strictly in the order they were sent:

- ``("weights", version, payload)``: load the policy's weights (``torch.save`` bytes of a
  state dict, or None when the weights did not change) and call them ``version`` (vLLM: the
  push of the synchronous path, ``sync_weights``, one parameter at a time);
- ``("generate", request, num_prompts, version)``: one scored round with the weights it
  holds, which must be ``version`` (with its wall and CPU seconds: how much of a core the
  process got while it worked); the groups carry the log-probs of that policy
  (``old_logprobs``), so the trainer can take their ratio against it later: the HF copy's
  forward pass, or vLLM's own sampling log-probs (``processed_logprobs``, the distribution it
  sampled from);
- ``("load", episodes_state, rng_state)``: continue a saved problem stream and RNG;
- ``("state",)``: send the problem stream and RNG as they are now;
- ``("stop",)``: end.

Because weights and requests travel in one ordered pipe, the version that samples each
round, and so every round, is determined by the trainer's messages alone: an asynchronous
run is as reproducible as a synchronous one (vLLM draws each call's request seeds from this
process's torch RNG, which the checkpoints keep). The process ignores SIGINT and SIGTERM (the
trainer decides when it ends), dies with the trainer (``PR_SET_PDEATHSIG``), and reports an
exception as ``("error", traceback)`` before it exits. Its GPU, if any, is set by the spec's
``visible_devices`` before torch is imported (``verimath.trainer.rollout.placement``).
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
    engine: dict | None = None
    """``VLLMRolloutEngine`` options (``model_dir`` None: built from ``model``) for vLLM;
    None for the HF engine on the policy copy."""
    device: str = "cpu"
    """The generator's torch device in its own process."""
    visible_devices: str | None = None
    """``CUDA_VISIBLE_DEVICES`` of the process (None: inherited)."""
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

    from verimath.trainer.core.processes import die_with_parent

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
    from verimath.trainer.core.processes import die_with_parent

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


class _HFGenerator:
    """The HF engine on the process's own copy of the policy."""

    def __init__(self, spec: WorkerSpec, tokenizer) -> None:
        import torch
        from verimath.trainer.rollout.hf_engine import HFRolloutEngine

        self.spec = spec
        self.model = torch.load(io.BytesIO(spec.model), weights_only=False,
                                map_location=spec.device).eval()
        self.engine = HFRolloutEngine(self.model, tokenizer, batch_size=spec.batch_size)

    def load_weights(self, state: dict) -> None:
        self.model.load_state_dict(state)

    def keep_policy(self, groups) -> None:
        """The sampling policy's log-probs, by a forward pass of the copy."""
        from verimath.trainer.algo.batch import keep_sampling_policy

        keep_sampling_policy(self.model, groups, pad_id=self.spec.pad_id,
                             device=self.spec.device, **self.spec.forward)

    def idle(self) -> None:
        pass

    def close(self) -> None:
        pass


class _VLLMGenerator:
    """A vLLM engine built from ``model_dir`` (or from the policy's bytes, saved to a
    temporary directory that is removed once vLLM has loaded it); only the names of the
    policy's parameters are kept, to push a state dict as ``sync_weights`` wants it."""

    def __init__(self, spec: WorkerSpec, tokenizer) -> None:
        import tempfile

        import torch
        from verimath.trainer.rollout.vllm_engine import VLLMRolloutEngine

        options = dict(spec.engine)
        model_dir = options.pop("model_dir", None)
        model = torch.load(io.BytesIO(spec.model), weights_only=False, map_location="cpu")
        with tempfile.TemporaryDirectory(prefix="verimath_engine_") as tmp:
            if model_dir is None:  # the built tiny model: vLLM loads from a directory
                model_dir = tmp
                model.save_pretrained(tmp)
                tokenizer.save_pretrained(tmp)
            self.engine = VLLMRolloutEngine(model_dir, tokenizer, **options)
        self.engine.sync_weights(model)  # the policy may differ from the directory's weights
        self.names = [name for name, _ in model.named_parameters()]  # tied weights once
        self.sleep, self.awake = bool(options.get("enable_sleep_mode")), True
        del model

    def load_weights(self, state: dict) -> None:
        self.engine.sync_weights((name, state[name]) for name in self.names)
        self.awake = True

    def keep_policy(self, groups) -> None:
        """vLLM's sampling log-probs are the sampling policy's: they become the groups'
        old log-probs (there is no trainer-side copy of that version to compare them with)."""
        for g in groups:
            g.old_logprobs, g.logprobs = g.logprobs, None
        self.awake = True

    def idle(self) -> None:
        """Nothing to generate: with sleep mode, free the GPU memory for the update."""
        if self.sleep and self.awake:
            self.engine.sleep(level=1)
            self.awake = False

    def close(self) -> None:
        self.engine.close()


def _build(spec: WorkerSpec):
    import pickle

    import torch
    from verimath.trainer.rollout.episodes import EpisodeSource

    torch.set_num_threads(max(1, spec.threads))
    if spec.reward_workers:
        from verimath.rewards.pool.scoring_pool import configure_default_pool

        configure_default_pool(spec.reward_workers)
    tokenizer = pickle.loads(spec.tokenizer)
    generator = (_VLLMGenerator if spec.engine is not None else _HFGenerator)(spec, tokenizer)
    source = EpisodeSource(tokenizer=tokenizer, engine=generator.engine, **spec.source)
    torch.manual_seed(spec.seed)
    return generator, source


def _serve(inbox, sender: Sender, spec: WorkerSpec) -> None:
    generator, source = _build(spec)
    _answer(inbox, sender, spec, generator, source)  # an exception ends the process as it is
    source.close()
    generator.close()


def _answer(inbox, sender: Sender, spec: WorkerSpec, generator, source) -> None:
    """Answer the trainer's messages until ``stop`` (see the module docstring)."""
    import torch

    version, rounds, idle = None, 0, 0.0
    while True:
        if not inbox.poll(0):
            generator.idle()
        t0 = time.perf_counter()
        message = inbox.recv()
        idle += time.perf_counter() - t0
        kind = message[0]
        if kind == "stop":
            return
        if kind == "weights":
            _, version, payload = message
            if payload is not None:
                generator.load_weights(torch.load(io.BytesIO(payload), weights_only=True))
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
            t1, c1 = time.perf_counter(), time.process_time()
            groups, correct = source.next_round(0, num_prompts)
            generator.keep_policy(groups)
            stats = dataclasses.asdict(source.pop_stats())
            sender.send(("round", {
                "request": request, "version": version,
                "groups": [g.to_dict() for g in groups],
                "correct": np.asarray(correct, dtype=bool).tolist(), "stats": stats,
                "seconds": time.perf_counter() - t1, "cpu": time.process_time() - c1,
                "idle": idle, "stream": _stream(source)}))
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
    if spec.visible_devices is not None:  # before torch is imported: its GPU is cuda:0
        os.environ["CUDA_VISIBLE_DEVICES"] = spec.visible_devices
    worker_main(inbox, outbox, spec)


if __name__ == "__main__":
    main(sys.argv[1:])
