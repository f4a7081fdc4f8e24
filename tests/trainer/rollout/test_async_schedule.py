"""The asynchronous episode source's schedule, against a generator served from a thread (the
same messages as the generator process, synthetic groups): no group older than the bound is
handed to a step, none twice, none lost, and versions never go back."""

from __future__ import annotations

import dataclasses
import os
import threading
from multiprocessing.connection import Connection

import numpy as np
import pytest
import torch
import verimath.trainer.rollout.async_source as async_source
from hypothesis import given
from hypothesis import strategies as st
from verimath.trainer.core.groups import RoundStats
from verimath.trainer.rollout.async_source import AsyncEpisodeSource, GeneratorFailed

G = 4


class ThreadWorker:
    """A generator in a thread: answers ``generate`` with ``n`` groups named after the
    request, tagged with the weights version it holds; records every version it sampled."""

    def __init__(self, fail_at: int | None = None, work: tuple[float, float] = (0.0, 0.0)
                 ) -> None:
        their_in, my_out = os.pipe()
        my_in, their_out = os.pipe()
        self.inbox, self.outbox = Connection(my_in, writable=False), Connection(my_out,
                                                                                readable=False)
        self.theirs = Connection(their_in, writable=False), Connection(their_out,
                                                                        readable=False)
        self.sampled: list[int] = []
        self.fail_at, self.alive = fail_at, True
        self.work = work  # (CPU, wall) seconds each round reports
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.pid, self.exitcode = os.getpid(), None

    def is_alive(self) -> bool:
        return self.alive

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)

    def kill(self) -> None:
        self.alive = False

    def _serve(self) -> None:
        inbox, outbox = self.theirs
        inbox.recv()  # the spec
        version = None
        while True:
            message = inbox.recv()
            if message[0] == "stop":
                break
            if message[0] == "weights":
                version = message[1]
            elif message[0] == "state":
                outbox.send(("state", {"episodes": {"started": True, "env": {}}, "rng": None}))
            elif message[0] == "generate":
                _, request, n, wanted = message
                if request == self.fail_at:
                    outbox.send(("error", "Traceback ...\nValueError: a broken reward"))
                    break
                assert wanted == version
                self.sampled.append(version)
                cpu, wall = self.work
                outbox.send(("round", {**_round(request, n, version), "cpu": cpu,
                                       "seconds": wall}))
        self.alive = False


def _round(request: int, n: int, version: int) -> dict:
    correct = (np.arange(G)[None, :] < 1 + np.arange(n)[:, None] % (G - 1)).tolist()
    groups = [{"problem_id": f"r{request}-{i}", "prompt_ids": [1], "response_ids": [[2]] * G,
               "rewards": [0.0] * G, "correct": correct[i], "truncated": [False] * G,
               "logprobs": None, "step": None, "old_logprobs": [[0.0]] * G} for i in range(n)]
    return {"request": request, "version": version, "groups": groups, "correct": correct,
            "stats": dataclasses.asdict(RoundStats()), "seconds": 0.0, "idle": 0.0,
            "stream": {"episodes": {"started": True, "env": {"at": request}}, "rng": None}}


class Tokenizer:
    pad_token_id = 0


def _source(monkeypatch, k: int, worker: ThreadWorker, echo=lambda _: None
            ) -> AsyncEpisodeSource:
    monkeypatch.setattr(async_source, "start_worker", lambda: worker)
    monkeypatch.setattr(async_source, "WorkerSpec", lambda **kw: "spec")
    monkeypatch.setattr(torch, "save", lambda obj, f: f.write(b"x"))
    return AsyncEpisodeSource(model=torch.nn.Linear(1, 1), tokenizer=Tokenizer(),
                              source={"num_problems": 3}, async_steps=k, forward={}, seed=0,
                              batch_size=1, echo=echo)


@given(k=st.integers(1, 3), rounds=st.lists(st.integers(0, 3), min_size=1, max_size=8))
def test_groups_are_fresh_enough_trained_once_and_versions_only_grow(k, rounds):
    with pytest.MonkeyPatch.context() as monkeypatch:
        worker = ThreadWorker()
        src = _source(monkeypatch, k, worker)
        handed, dropped, versions = [], 0, []
        for step, count in enumerate(rounds):
            src.start_step(step, torch.nn.Linear(1, 1))
            prepared = step > 0 and count <= max(1, rounds[step - 1])
            for r in range(count):
                groups, correct = src.next_round(r, 2 if r else None)
                assert correct.shape == (len(groups), G)
                ages = {step - g.step for g in groups}
                age = ages.pop()
                assert not ages and 0 <= age <= k  # the bound
                # a step taking no more rounds than the one before finds them all prepared
                # during that step's update (none asked for, and waited on, now)
                assert age >= 1 or not prepared
                versions.append(groups[0].step)
                handed += [g.problem_id for g in groups]
            src.after_collection()
            dropped += src.step_metrics([])["async/stale_dropped"]
        src.state_dict()  # waits for the rounds in flight
        waiting = sum(len(r.groups) for r in src.waiting)
        src.close()
        assert len(handed) == len(set(handed))  # each group at most once
        assert versions == sorted(versions)  # handed in version order
        assert worker.sampled == sorted(worker.sampled)  # sampled in version order
        assert len(handed) + dropped + waiting == src.received_groups  # none lost unseen


def test_a_round_left_over_for_the_next_step_to_drop_is_replaced_during_the_update(
        monkeypatch):
    worker = ThreadWorker()
    src = _source(monkeypatch, 1, worker)
    model = torch.nn.Linear(1, 1)
    src.start_step(0, model)
    src.next_round(0), src.next_round(1, 2)
    src.after_collection()  # took 2 rounds: 2 more sampled by version 0 during the update
    src.start_step(1, model)
    src.next_round(0)
    src.after_collection()  # took 1: the other version-0 round is too old for step 2
    assert src.step_metrics([])["async/lookahead"] == 1
    src.start_step(2, model)
    groups, _ = src.next_round(0)
    assert groups[0].step == 1  # sampled during step 1's update, not asked for at step 2
    assert src.step_metrics(groups)["async/stale_dropped"] == 3
    src.close()
    assert worker.sampled == [0, 0, 0, 0, 1]


def test_a_generator_exception_is_raised_in_the_trainer_with_its_traceback(monkeypatch):
    src = _source(monkeypatch, 1, ThreadWorker(fail_at=1))
    src.start_step(0, torch.nn.Linear(1, 1))
    src.next_round(0)
    src.after_collection()  # request 1 fails in the generator
    src.start_step(1, torch.nn.Linear(1, 1))
    with pytest.raises(GeneratorFailed, match="(?s)raised an exception:.*ValueError: a broken"):
        src.next_round(0)
    saved = src.state_dict()  # the stream as of the last round received
    assert saved["env"] == {"at": 0} and saved["async"]["rounds"] == []
    src.close()


class TwoRanks:
    """Rank 0 of two, in this process: ``all_sum`` adds what rank 1 reports (``other``);
    records every call, so the test sees that each step start takes one all-reduce."""

    enabled, rank, world = True, 0, 2

    def __init__(self, other_failed: bool) -> None:
        self.other_failed, self.calls = other_failed, []

    def all_sum(self, values):
        values = np.asarray(values, dtype=float)
        self.calls.append(values.copy())
        return values + (np.array([0.0, 1.0]) if self.other_failed else 0.0)


def test_every_rank_stops_at_the_step_start_when_another_ranks_generator_failed(monkeypatch):
    comm = TwoRanks(other_failed=False)
    src = _source(monkeypatch, 1, ThreadWorker())
    src.comm = comm
    src.start_step(0, torch.nn.Linear(1, 1))
    src.next_round(0)
    src.after_collection()
    assert len(comm.calls) == 1 and src.sent_version == 0  # healthy: agreed, then pushed
    comm.other_failed = True  # rank 1's generator died during the update
    with pytest.raises(GeneratorFailed, match="generator process of rank 1 failed") as info:
        src.start_step(1, torch.nn.Linear(1, 1))
    assert info.value.at_step_start and not info.value.own
    assert src.sent_version == 0  # no weight push: a sharded policy's gather is a collective
    assert len(comm.calls) == 2 and comm.calls[1].tolist() == [0.0, 0.0]
    src.close()


def test_a_rank_whose_generator_died_stops_at_the_step_start_with_its_last_words(monkeypatch):
    worker = ThreadWorker(fail_at=1)
    src = _source(monkeypatch, 1, worker)
    src.comm = TwoRanks(other_failed=False)
    src.start_step(0, torch.nn.Linear(1, 1))
    src.next_round(0)
    src.after_collection()  # request 1 fails in the generator, which then ends
    worker.thread.join(10)
    assert not worker.is_alive()
    with pytest.raises(GeneratorFailed, match="(?s)raised an exception:.*ValueError") as info:
        src.start_step(1, torch.nn.Linear(1, 1))
    assert info.value.at_step_start and info.value.own
    assert src.comm.calls[-1].tolist() == [1.0, 0.0]  # what rank 1 learns from rank 0
    src.close()


def test_settings_async_rollouts_cannot_run_with_are_refused_by_name():
    from verimath.trainer.config.files import load_config
    from verimath.trainer.rollout.async_source import check_async

    with pytest.raises(ValueError, match="rollout.async_steps must be >= 0"):
        load_config("tiny", ["rollout.async_steps=-1"])
    with pytest.raises(ValueError, match="vllm_tensor_parallel_size must be 1"):
        load_config("tiny", ["rollout.async_steps=1", "rollout.engine=vllm",
                             "rollout.vllm_tensor_parallel_size=2"])

    class TwoRanks:
        enabled = True

    with pytest.raises(ValueError, match="does not support LoRA yet"):
        check_async(load_config("tiny", ["rollout.async_steps=2", "model.lora_rank=4"]))
    check_async(load_config("tiny", ["rollout.async_steps=1"]))  # one process, full model
    check_async(load_config("tiny", ["rollout.async_steps=1"]), TwoRanks())  # a generator each
    check_async(load_config("tiny", ["model.lora_rank=4"]), TwoRanks())  # synchronous: fine


@pytest.mark.parametrize(("cores", "work", "said"), [
    ({0, 1}, (0.9, 1.0), False),  # a core of its own: nothing to say
    ({0, 1}, (0.3, 1.0), True),  # 30% of a core while generating: every core is busy
    ({0}, (1.0, 1.0), True),  # one usable core: said at once
])
def test_the_run_says_once_when_the_generator_has_no_free_core(monkeypatch, cores, work, said):
    lines = []
    monkeypatch.setattr(async_source.os, "sched_getaffinity", lambda pid: cores)
    source = _source(monkeypatch, 1, ThreadWorker(work=work), echo=lines.append)
    for step in range(4):  # 4 rounds of 1 s: enough to judge
        source.start_step(step, source.policy)
        source.next_round(0)
        source.after_collection()
        metrics = source.step_metrics([])
    source.close()
    assert len(lines) == (1 if said else 0)
    if said:
        assert "cannot help here" in lines[0] and "rollout.async_steps=0" in lines[0]
    if len(cores) > 1:
        assert metrics["async/generator_cpu_share"] == pytest.approx(work[0] / work[1])


def test_no_free_core_by_hand():
    from verimath.trainer.rollout.placement import no_free_core

    assert "1 CPU core" in no_free_core(usable_cpus=1, cpu_seconds=0, wall_seconds=0, load=0)
    assert no_free_core(usable_cpus=2, cpu_seconds=0.1, wall_seconds=1.0, load=3) is None  # 1 s
    why = no_free_core(usable_cpus=2, cpu_seconds=1.5, wall_seconds=5.0, load=3.2)
    assert why.startswith("the generator process got 30% of a core") and "load average 3.2" in why
    assert no_free_core(usable_cpus=2, cpu_seconds=2.5, wall_seconds=5.0, load=3.2) is None
