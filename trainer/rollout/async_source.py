"""Asynchronous rollouts (``rollout.async_steps = k >= 1``): the episode source whose rounds
are generated in another process while the trainer updates.

:class:`AsyncEpisodeSource` has the interface of
:class:`~verimath.trainer.rollout.episodes.EpisodeSource` that the dynamic sampler and the step use
(``next_round``, ``pop_stats``, ``state_dict``, ``start_step``, ``after_collection``,
``step_metrics``), so ``rl_step`` is the same function for both. The generator process
(``verimath.trainer.rollout.async_worker``) holds its own copy of the policy, the problem stream and
the scoring; the two processes run with their own torch threads (``model.threads``, 1 when unset),
so on two cores one generates while the other trains.

The schedule:

- a step pulls rounds from a FIFO of requests (``next_round``); when none is waiting it asks
  for one of the size the sampler wants and waits for it (``async/wait_rollouts``);
- once the step's groups are in hand (``after_collection``), requests for full rounds are
  sent until ``k`` times the rounds this step took (dynamic sampling may take several) are
  waiting or in flight, counting only rounds recent enough for the next step to train (one
  left over from a step that took fewer rounds than the step before would only be dropped):
  they are generated during the update, by the policy the trainer holds now (version ``s`` at
  step ``s``);
- when step ``s + 1`` starts (``start_step``), the updated weights go to the generator as
  version ``s + 1``. Weights and requests share one ordered pipe, so every round is sampled by a
  known version and a run is reproducible.

A group sampled by version ``v`` and handed to step ``s`` has staleness ``s - v`` (at most ``k``
while steps take as many rounds as the one before). A round older than ``k`` is never trained on: it
is dropped, counted (``async/stale_dropped``) and replaced by a fresh one. Groups keep the log-probs
of the policy that sampled them (computed in the generator), so the step takes their ratio against
that policy, as for the surplus of dynamic sampling; the surplus itself may then keep a group
``algo.max_staleness`` more steps.

With several ranks (torchrun) each rank has its own source and generator process: the
generator starts from the rank's unsharded policy, samples the rank's problem stream with the
rank's seed, and after each update receives the rank's full weights (a sharded policy's are
gathered one tensor at a time, a collective that every rank runs at the start of the step).
Dynamic sampling decides on the counts of all ranks, as in a synchronous run: every rank
takes the same number of rounds per step, so every rank requests, drops and keeps rounds on
the same schedule, and each rank's rounds come from its own generator.

Checkpoints (``state_dict``) first wait for the rounds in flight, then store the rounds not
yet trained with the generator's problem stream and RNG: a resumed run trains the same
groups, in the same order, as the uninterrupted one (bit-identical on CPU). When the
generator died, the checkpoint holds the stream as of the last round received; rounds lost
in flight are generated again after the resume (same problems and RNG, but by the resumed
policy version): no group is lost or trained twice, the run is no longer bit-identical.
Several ranks store each rank's rounds and stream in the rank's own state file. A generator
found dead when a step starts stops every rank there (they decide together), with a
checkpoint; one found dead within a step stops its rank at once, without a new checkpoint
(saving one takes every rank, and the others wait in a collective), and torchrun ends the job
(:func:`verimath.trainer.run.loop.train`).

The pipes to the generator process, the rounds that come back (:class:`Round`) and the
failures seen on them (:class:`GeneratorFailed`) live in
:mod:`verimath.trainer.rollout.async_link`; both names are re-exported here.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
import time
from collections import deque

import numpy as np
from verimath.trainer.core.groups import Group, RoundStats
from verimath.trainer.rollout.async_link import GeneratorFailed, GeneratorLink, Round
from verimath.trainer.rollout.async_worker import WorkerSpec, start_worker
from verimath.trainer.rollout.factory import async_worker_options
from verimath.trainer.rollout.placement import no_free_core

__all__ = ["AsyncEpisodeSource", "GeneratorFailed", "Round", "check_async", "make_async_source"]


def check_async(config, comm=None) -> None:
    """ValueError naming the setting when ``rollout.async_steps`` cannot run with the rest
    of ``config`` (LoRA); any number of ranks ``comm`` can (a generator per rank)."""
    k = config.rollout.async_steps
    if not k:
        return
    if config.model.lora_rank:
        raise ValueError(f"rollout.async_steps={k} does not support LoRA yet "
                         f"(model.lora_rank={config.model.lora_rank}); use one or the other")


class AsyncEpisodeSource:
    """Scored rounds from a generator process; see the module docstring."""

    def __init__(self, *, model, tokenizer, source: dict, async_steps: int, forward: dict,
                 seed: int, batch_size: int, threads: int = 1, reward_workers: int = 0,
                 echo=print, fail_after: int | None = None, comm=None,
                 worker: dict | None = None) -> None:
        import torch

        buffer = io.BytesIO()
        torch.save(model, buffer)
        spec = WorkerSpec(model=buffer.getvalue(), tokenizer=pickle.dumps(tokenizer),
                          source=source, forward=forward, pad_id=tokenizer.pad_token_id,
                          seed=seed, batch_size=batch_size, threads=threads,
                          reward_workers=reward_workers, fail_after=fail_after,
                          **(worker or {}))  # engine and placement (rollout.factory)
        self.link = GeneratorLink(start_worker())
        self.link.send(spec)
        self.policy, self.async_steps, self.echo = model, int(async_steps), echo
        self.comm = comm  # several ranks: the staleness and drop counts of all of them
        self.full = int(source["num_problems"])
        self.version, self.sent_version, self.next_request = 0, None, 0
        self.waiting: deque[Round] = deque()  # received, not yet handed to a step
        self.in_flight: deque[tuple[int, int]] = deque()  # (request, version) not received
        self.handed: list[Round] = []  # handed to the step being collected
        self.stream: dict | None = None  # problem stream + RNG after the last round received
        self.stats = RoundStats()
        self._last_stream: dict | None = None
        self.received_groups = 0
        self.rounds_per_step = 1
        self.on_cpu = (worker or {}).get("device", "cpu") == "cpu"
        self.generator_work = [0.0, 0.0]  # CPU and wall seconds of the rounds, scoring apart
        self.said_no_free_core = False
        self._reset_step_metrics()
        self._check_free_core()

    # --- the EpisodeSource interface ---------------------------------------------------

    def next_round(self, round_index: int, num_prompts: int | None = None
                   ) -> tuple[list[Group], np.ndarray]:
        """The oldest round waiting or in flight (else a new one of ``num_prompts``); a
        round sampled more than ``async_steps`` versions ago is dropped and replaced."""
        while True:
            if not self.waiting and not self.in_flight:
                self._request(num_prompts or self.full)
            if not self.waiting:
                t0 = time.perf_counter()
                self._receive_round()
                self.metrics["wait_rollouts"] += time.perf_counter() - t0
            rnd = self.waiting.popleft()
            self._account(rnd)
            if self.version - rnd.version <= self.async_steps:
                break
            self.metrics["stale_dropped"] += len(rnd.groups)
            self.echo(f"async rollouts: dropped {len(rnd.groups)} groups of policy version "
                      f"{rnd.version} at version {self.version} (older than "
                      f"rollout.async_steps={self.async_steps})")
        self.handed.append(rnd)
        self.metrics["rounds"] += 1
        return rnd.groups, rnd.correct

    def after_collection(self) -> None:
        """The step's groups are in hand: start the next steps' rounds, sampled by the
        current policy, until ``async_steps`` times the rounds this step took are waiting or
        in flight that the next step may still train (a round left over from an earlier
        step, which the next step would drop as too old, does not count)."""
        self.rounds_per_step = max(1, len(self.handed))
        self.handed = []
        if self.link.failure is not None or not self.process.is_alive():
            return  # next_round reports it
        while self._usable_ahead() < self.async_steps * self.rounds_per_step:
            self._request(self.full)

    def start_step(self, step: int, model) -> None:
        """Step ``step`` begins with ``model``: version ``step`` of the policy, sent to the
        generator for the rounds requested from now on."""
        self.version, self.policy = int(step), model
        if self.comm is not None and self.comm.enabled:
            self._stop_if_any_generator_failed()
        if self.link.failure is None and self.sent_version != self.version:
            self._send_weights()

    def step_metrics(self, trained: list[Group]) -> dict[str, float]:
        """The step's ``async/`` metrics (staleness of the groups ``trained``, versions, waits).
        With several ranks (every rank calls it) the staleness is the largest and the drops
        the sum over ranks; waits and generator times are this rank's."""
        ages = [self.version - g.step for g in trained if not g.padding]
        m = self.metrics
        oldest, dropped = max(ages, default=0), m["stale_dropped"]
        if self.comm is not None and self.comm.enabled:
            world, rank = self.comm.world, self.comm.rank
            totals = self.comm.all_sum([*np.eye(world)[rank] * oldest, dropped])  # (world+1,)
            oldest, dropped = int(totals[:world].max()), float(totals[world])
        out = {"async/version": float(self.version),
               "async/staleness_max": float(oldest),
               "async/oldest_version": float(self.version - oldest),
               "async/stale_dropped": dropped,
               "async/wait_rollouts": m["wait_rollouts"],
               "async/wait_weights": m["idle"], "async/generator_busy": m["busy"],
               "async/generator_cpu_share": m["cpu"] / m["wall"] if m["wall"] else 0.0,
               "async/rounds": m["rounds"],
               "async/lookahead": float(self._usable_ahead())}
        self._reset_step_metrics()
        return out

    def pop_stats(self) -> RoundStats:
        stats, self.stats = self.stats, RoundStats()
        return stats

    def state_dict(self) -> dict:
        """The rounds not yet trained and the generator's stream (see the module
        docstring); the rounds handed to an unfinished step count as not trained."""
        if self.link.failure is None and self.process.is_alive():
            try:
                while self.in_flight:
                    self._receive_round()
                self.link.send(("state",))
                self.stream = self._receive("state")
            except GeneratorFailed:
                pass  # the stream of the last round received
        rounds = [*self.handed, *self.waiting]
        stream = self.stream or {}
        episodes = stream.get("episodes", {})
        return {"started": bool(episodes.get("started")), "env": episodes.get("env"),
                "async": {"version": self.version, "stream": self.stream,
                          "rounds": [r.to_dict() for r in rounds]}}

    def load_state_dict(self, state: dict) -> None:
        """Continue a checkpoint's stream: an asynchronous one (its rounds wait to be
        trained) or a synchronous one (its problem stream; the RNG starts anew)."""
        saved = state.get("async")
        if saved is None:
            self.link.send(("load", state, None))
            return
        self.version = int(saved["version"])
        self.stream = saved["stream"]
        if self.stream is not None:
            self.link.send(("load", self.stream["episodes"], self.stream["rng"]))
        self.waiting = deque(Round.from_message({**r, "seconds": 0.0, "idle": 0.0})
                             for r in saved["rounds"])

    def close(self) -> None:
        """Stop the generator (at once when it does not answer) and its pipes; idempotent."""
        self.link.close()

    @property
    def process(self):
        """The generator process (``pid``, ``is_alive``)."""
        return self.link.process

    def __enter__(self) -> AsyncEpisodeSource:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- internals ---------------------------------------------------------------------

    def _reset_step_metrics(self) -> None:
        self.metrics = dict.fromkeys(("stale_dropped", "wait_rollouts", "idle", "busy",
                                      "rounds", "cpu", "wall"), 0.0)

    def _check_free_core(self) -> None:
        """Say once when a CPU generator has no core of its own (``placement.no_free_core``):
        generating beside the update cannot make the steps faster then."""
        if self.said_no_free_core or not self.on_cpu:
            return
        why = no_free_core(usable_cpus=len(os.sched_getaffinity(0)),
                           cpu_seconds=self.generator_work[0],
                           wall_seconds=self.generator_work[1], load=os.getloadavg()[0])
        if why is not None:
            self.said_no_free_core = True
            self.echo(f"asynchronous rollouts: {why}, so asynchronous generation cannot help "
                      f"here; rollout.async_steps=0 trains the same steps in one process")

    def _stop_if_any_generator_failed(self) -> None:
        """Several ranks: raise GeneratorFailed on every rank when the generator of any rank
        raised or died. The ranks decide together (one all-reduce), so they all leave at the
        same point: a rank that went on alone would run the weight gather of a sharded policy
        (a collective) while another ran the next one, and both would wait forever."""
        comm = self.comm
        failed = self.link.failure is not None or not self.process.is_alive()
        flags = comm.all_sum(np.eye(comm.world)[comm.rank] * failed)
        ranks = [r for r, flag in enumerate(flags) if flag > 0]
        if not ranks:
            return
        if not failed:
            self.link.failure = GeneratorFailed(
                f"the rollout generator process of rank {', '.join(map(str, ranks))} failed "
                "(that rank says why)", at_step_start=True, own=False)
            raise self.link.failure
        try:
            self.link.raise_if_failed()
            while self.in_flight:  # the rounds it sent before it died, or its last words
                self._receive_round()
            self.link.fail_dead()
        except GeneratorFailed as own:
            self.link.failure = GeneratorFailed(str(own), at_step_start=True)
        raise self.link.failure

    def _send_weights(self) -> None:
        import torch
        from verimath.trainer.core.distributed import full_state_dict

        buffer = io.BytesIO()
        torch.save(full_state_dict(self.policy), buffer)
        self.link.send(("weights", self.version, buffer.getvalue()))
        self.sent_version = self.version

    def _usable_ahead(self) -> int:
        """Rounds waiting or in flight sampled recently enough for the next step (version
        ``self.version + 1``) to train them."""
        oldest = self.version + 1 - self.async_steps
        return (sum(r.version >= oldest for r in self.waiting)
                + sum(version >= oldest for _, version in self.in_flight))

    def _request(self, num_prompts: int) -> None:
        self.link.raise_if_failed()
        if self.sent_version != self.version:
            self._send_weights()
        request, self.next_request = self.next_request, self.next_request + 1
        self.link.send(("generate", request, int(num_prompts), self.version))
        self.in_flight.append((request, self.version))

    def _receive_round(self) -> None:
        rnd = Round.from_message(self._receive("round"))
        expected, _ = self.in_flight.popleft()
        if rnd.request != expected:
            raise GeneratorFailed(f"the rollout generator answered request {rnd.request}, "
                                  f"expected {expected}")
        self.stream = self._last_stream
        self.metrics["idle"] += rnd.idle
        self.received_groups += len(rnd.groups)
        self.metrics["busy"] += rnd.seconds
        wall = max(rnd.seconds - rnd.stats.seconds_score, 0.0)  # the pool scores apart
        for i, value in enumerate((rnd.cpu, wall)):
            self.generator_work[i] += value
            self.metrics[("cpu", "wall")[i]] += value
        self.waiting.append(rnd)
        self._check_free_core()

    def _receive(self, kind: str) -> dict:
        """The next message (which must be ``kind``), checking that the generator lives."""
        payload = self.link.receive(kind)
        self._last_stream = payload.get("stream") if kind == "round" else payload
        return payload

    def _account(self, rnd: Round) -> None:
        """Add a round's compute to the step's accounting (dropped rounds too)."""
        s, r = self.stats, rnd.stats
        for f in dataclasses.fields(RoundStats):
            setattr(s, f.name, getattr(s, f.name) + getattr(r, f.name))


def make_async_source(config, model, tokenizer, source: dict, *, echo=print, comm=None
                      ) -> AsyncEpisodeSource:
    """The asynchronous episode source of ``config`` (``rollout.async_steps >= 1``) for the
    unsharded policy ``model`` of rank ``comm`` (default: one process); ``source`` holds
    ``EpisodeSource``'s other keyword arguments (the rank's problem stream)."""
    from verimath.trainer.core.distributed import rank_seed

    rank = 0 if comm is None else comm.rank
    r, algo = config.rollout, config.algo
    forward = {"temperature": r.temperature, "micro_batch_size": algo.micro_batch_size,
               "chunk_size": algo.logprob_chunk_size}
    return AsyncEpisodeSource(
        model=model, tokenizer=tokenizer, source=source, async_steps=r.async_steps,
        forward=forward, seed=rank_seed(config.optim.seed, rank),  # rank 0: the seed itself
        batch_size=r.batch_size or r.gen_prompts * r.group_size,
        threads=config.model.threads or 1, reward_workers=config.reward.workers, echo=echo,
        comm=comm, worker=async_worker_options(config, model))
