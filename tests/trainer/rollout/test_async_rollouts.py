"""Asynchronous rollouts end to end, with a real generator process: the synchronous step is
unchanged at ``rollout.async_steps=0``; an asynchronous run logs versions and waits, resumes
bit-identically, and stops within seconds with a checkpoint, leaving no process behind, on
a generator exception, a generator killed with -9, Ctrl-C and SIGTERM."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import verimath.trainer.rollout.async_source as async_source
import verimath.trainer.run.loop as loop_module
import verimath.trainer.run.step as step_module
from two_nodes import TIMED
from verimath.trainer.checkpoint.files import latest_checkpoint
from verimath.trainer.config.files import load_config
from verimath.trainer.rollout.episodes import EpisodeSource
from verimath.trainer.run.loop import Stopped, train
from verimath.trainer.run.metrics import read_metrics
from verimath.trainer.run.setup import open_state

pytestmark = pytest.mark.slow

MICRO = ["model.tiny_hidden_size=32", "model.tiny_layers=1", "model.tiny_heads=2",
         "model.threads=1", "data.level=1", "warmstart.steps=60", "warmstart.lr=1e-2",
         "warmstart.target_accuracy=null", "warmstart.noise_after=0",
         "warmstart.batch_size=16", "rollout.gen_prompts=6", "rollout.group_size=4",
         "rollout.max_new_tokens=12", "reward.overlong_buffer=2", "algo.train_prompts=3",
         "algo.mini_batch_prompts=2", "algo.max_gen_rounds=2", "eval.num_problems=0",
         "logging.progress=false", "logging.plot=false", "reward.workers=1"]


def _quiet(_):
    pass


def _steps(run_dir: Path) -> dict[int, dict]:
    """Metrics by step, without wall times and waits (they differ between runs)."""
    return {r["step"]: {k: v for k, v in r.items() if not k.startswith(TIMED)}
            for r in read_metrics(run_dir / "metrics.jsonl") if r["step"] > 0}


def _run(run_dir: Path, *overrides: str, resume=None) -> tuple[dict, int | None]:
    """Train; the metrics by step and the generator's pid (None without one)."""
    config = load_config("tiny", [*MICRO, *overrides])
    with open_state(config, run_dir, echo=_quiet, resume=resume) as state:
        pid = getattr(getattr(state.episodes, "process", None), "pid", None)
        train(state)
    return _steps(run_dir), pid


def _gone(pid: int | None, within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while pid is not None and time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return True
        time.sleep(0.1)
    return pid is None


def test_async_steps_0_is_the_synchronous_step(tmp_path):
    reference, pid = _run(tmp_path / "sync", "optim.steps=2")  # the key left at its default
    assert pid is None
    config = load_config("tiny", [*MICRO, "optim.steps=2", "rollout.async_steps=0"])
    with open_state(config, tmp_path / "zero", echo=_quiet) as state:
        assert type(state.episodes) is EpisodeSource  # no generator process
        train(state)
    assert _steps(tmp_path / "zero") == reference
    assert not any(k.startswith("async/") for k in reference[1])


def test_one_step_off_logs_versions_and_waits_and_leaves_no_process(tmp_path):
    steps, pid = _run(tmp_path / "run", "optim.steps=3", "rollout.async_steps=1")
    assert _gone(pid)
    records = {r["step"]: r for r in read_metrics(tmp_path / "run" / "metrics.jsonl")}
    for step in (1, 2, 3):
        m = records[step]
        assert m["async/version"] == step - 1
        # a fresh round at most 1 version old; a surplus group algo.max_staleness (1) more
        assert 0 <= m["async/staleness_max"] <= 2 and m["async/stale_dropped"] == 0
        assert m["async/staleness_max"] == m["async/version"] - m["async/oldest_version"]
        assert m["async/wait_rollouts"] >= 0 and m["async/wait_weights"] >= 0
    assert records[2]["async/staleness_max"] >= 1  # step 2 starts on a round of version 0
    # stale groups are corrected by default: ratio against the step start, truncated weights
    assert 0 < records[2]["rollout/is_weight_mean"] <= 2.0
    assert 0 <= records[2]["async/generator_cpu_share"]


def test_a_resumed_async_run_is_bit_identical(tmp_path):
    args = ["optim.steps=4", "logging.save_every=2", "rollout.async_steps=2"]
    whole, _ = _run(tmp_path / "whole", *args)
    part = tmp_path / "part"
    shutil.copytree(tmp_path / "whole", part)
    for late in ("step_00000004",):
        shutil.rmtree(part / "checkpoints" / late, ignore_errors=True)
    resumed, _ = _run(part, *args, resume=part / "checkpoints" / "step_00000002")
    assert resumed == whole
    a = torch.load(latest_checkpoint(tmp_path / "whole" / "checkpoints") / "optimizer.pt")
    b = torch.load(latest_checkpoint(part / "checkpoints") / "optimizer.pt")
    for x, y in zip(a["state"].values(), b["state"].values()):
        assert torch.equal(x["exp_avg"], y["exp_avg"])


def _record_trained(monkeypatch) -> list[tuple]:
    """Every trained group, as (problem, first response), across sessions."""
    trained = []
    collect = step_module.collect_informative

    def recording(*args, **kwargs):
        kept, surplus, stats = collect(*args, **kwargs)
        trained.extend((g.problem_id, tuple(g.response_ids[0])) for g in kept)
        return kept, surplus, stats

    monkeypatch.setattr(step_module, "collect_informative", recording)
    return trained


def test_a_generator_killed_with_9_stops_the_run_with_a_checkpoint_then_resumes(
        tmp_path, monkeypatch):
    trained = _record_trained(monkeypatch)
    rl_step, pids, killed_at = loop_module.rl_step, [], []

    def kill_after_step_2(state):
        metrics = rl_step(state)
        pids.append(state.episodes.process.pid)
        if state.step == 1:  # the second step (step index 1) just ran
            os.kill(state.episodes.process.pid, signal.SIGKILL)
            killed_at.append(time.monotonic())
        return metrics

    monkeypatch.setattr(loop_module, "rl_step", kill_after_step_2)
    run = tmp_path / "run"
    with pytest.raises(Stopped, match="killed by signal 9") as stopped:
        _run(run, "optim.steps=5", "logging.save_every=0", "rollout.async_steps=1")
    assert time.monotonic() - killed_at[0] < 60 and stopped.value.exit_code == 1
    latest = latest_checkpoint(run / "checkpoints")
    assert latest.name in ("step_00000002", "step_00000003")  # the round in the pipe may train
    assert str(latest) in str(stopped.value) and f"--resume {run}" in str(stopped.value)
    assert _gone(pids[-1])
    monkeypatch.setattr(loop_module, "rl_step", rl_step)
    steps, pid = _run(run, "optim.steps=5", "rollout.async_steps=1", resume=latest)
    assert sorted(steps) == [1, 2, 3, 4, 5] and _gone(pid)
    assert len(trained) == len(set(trained))  # no group trained twice


def test_a_generator_exception_stops_the_run_with_its_traceback_and_a_checkpoint(
        tmp_path, monkeypatch):
    failing = functools.partial(async_source.AsyncEpisodeSource, fail_after=2)
    monkeypatch.setattr(async_source, "AsyncEpisodeSource", failing)
    run = tmp_path / "run"
    with pytest.raises(Stopped, match="(?s)raised an exception.*fail_after") as stopped:
        _run(run, "optim.steps=4", "rollout.async_steps=1")
    assert stopped.value.exit_code == 1
    assert latest_checkpoint(run / "checkpoints") is not None


def _cli(run_dir: Path, *extra: str) -> subprocess.Popen:
    from conftest import default_sigint

    return subprocess.Popen(
        [sys.executable, "-m", "verimath.trainer.worker", "--output-dir", str(run_dir), *MICRO,
         "rollout.async_steps=1", "optim.steps=200", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=default_sigint)


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started, and theirs (the generator, its scoring pool)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    direct = [int(p) for p in path.read_text().split()] if path.exists() else []
    return direct + [d for c in direct for d in _children(c)]


def _after_two_steps(process: subprocess.Popen, run: Path) -> list[int]:
    end = time.monotonic() + 600
    while not (run / "metrics.jsonl").exists() or len(read_metrics(run / "metrics.jsonl")) < 2:
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < end
        time.sleep(0.1)
    return _children(process.pid)


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_ctrl_c_and_sigterm_stop_within_seconds_leaving_no_process(tmp_path, how):
    run = tmp_path / "run"
    process = _cli(run, "logging.save_every=1")
    children = _after_two_steps(process, run)
    assert children  # the generator
    start = time.monotonic()
    if how == "ctrl-c":  # a terminal sends SIGINT to the whole foreground process group
        os.killpg(process.pid, signal.SIGINT)
    else:
        process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert time.monotonic() - start < 60
    assert process.returncode == (130 if how == "ctrl-c" else 0), err[-3000:]
    assert f"--resume {run}" in err
    assert all(_gone(pid) for pid in children)
    assert latest_checkpoint(run / "checkpoints") is not None
