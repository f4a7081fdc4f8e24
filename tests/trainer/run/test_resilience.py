"""Runs that lose nothing: kill -9 and resume, a kill while saving, SIGTERM, NaN updates."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import verimath.trainer.run.step as step_module
from verimath.trainer.checkpoint.files import latest_checkpoint, load_checkpoint, save_checkpoint
from verimath.trainer.config.files import load_config
from verimath.trainer.run.loop import Stopped, train
from verimath.trainer.run.metrics import read_metrics
from verimath.trainer.run.setup import open_state

pytestmark = pytest.mark.slow

# Short runs of the shared warm-started tiny model ("Answer: 123" and EOS fit in 12 tokens):
# it answers about a third right, so the steps compared below really train
MICRO = ["model.threads=1", "warmstart.steps=0", "rollout.gen_prompts=6", "rollout.group_size=4",
         "rollout.max_new_tokens=12", "reward.overlong_buffer=2", "algo.train_prompts=3",
         "algo.mini_batch_prompts=2", "algo.max_gen_rounds=2", "eval.num_problems=6",
         "eval.k=2", "eval.every=2", "logging.progress=false", "logging.plot=false",
         "reward.workers=1"]


@pytest.fixture
def micro(warm_tiny_model) -> list[str]:
    return [f"model.path={warm_tiny_model}", *MICRO]


def _command(micro: list[str], run_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "verimath.trainer.worker", "--output-dir", str(run_dir), *micro,
            *extra]


def _steps(path: Path) -> dict[int, dict]:
    """Metrics by step, wall times left out (they differ between runs)."""
    return {r["step"]: {k: v for k, v in r.items() if not k.startswith("time/")}
            for r in read_metrics(path)}


def _wait_for(path: Path, process: subprocess.Popen, timeout: float = 600) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.05)


def test_kill_9_at_a_random_step_then_resume_equals_the_uninterrupted_run(tmp_path, micro):
    steps = ["optim.steps=5", "logging.save_every=1"]
    whole = tmp_path / "whole"
    subprocess.run(_command(micro, whole, *steps), check=True, capture_output=True, timeout=900)
    killed = tmp_path / "killed"
    at = int(np.random.default_rng().integers(1, 4))  # a checkpoint in steps 1..3
    process = subprocess.Popen(_command(micro, killed, *steps), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    _wait_for(killed / "checkpoints" / f"step_{at:08d}" / "checkpoint.json", process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    resumed_from = load_checkpoint(latest_checkpoint(killed / "checkpoints"),
                                   restore_rng=False)["step"]
    done = subprocess.run([sys.executable, "-m", "verimath.trainer.worker", "--resume",
                           str(killed)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    expected, got = _steps(whole / "metrics.jsonl"), _steps(killed / "metrics.jsonl")
    assert sorted(got) == sorted(expected) == [0, 1, 2, 3, 4, 5]
    for step in range(resumed_from + 1, 6):  # every step after the resume, eval included
        assert got[step] == expected[step], (at, resumed_from, step)
    assert all(expected[step]["optim/updates"] > 0 for step in range(1, 6))
    summary = json.loads((killed / "summary.json").read_text())
    assert summary["heldout_acc_after_rl"] == expected[5]["eval/avg@2"]


KILL_WHILE_SAVING = """
import sys, time, torch
import verimath.trainer.checkpoint.files as ckpt
model = torch.nn.Linear(2, 2)
ckpt.save_checkpoint(sys.argv[1], model=model, step=1, config={})
def slow(root):
    print("saving", flush=True)
    time.sleep(60)
ckpt.fsync_tree = slow
ckpt.save_checkpoint(sys.argv[1], model=model, step=2, config={})
"""


def test_a_kill_during_saving_leaves_the_previous_checkpoint_usable(tmp_path):
    process = subprocess.Popen([sys.executable, "-c", KILL_WHILE_SAVING, str(tmp_path)],
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "saving"  # inside the second save
    process.send_signal(signal.SIGKILL)
    process.wait()
    latest = latest_checkpoint(tmp_path)
    assert latest is not None and latest.name == "step_00000001"
    model = torch.nn.Linear(2, 2)
    assert load_checkpoint(latest, model=model, restore_rng=False)["step"] == 1
    assert not (tmp_path / "step_00000002").exists()  # only a hidden temporary remains
    save_checkpoint(tmp_path, model=model, step=2, config={})  # and saving works again
    assert latest_checkpoint(tmp_path).name == "step_00000002"


def test_sigterm_saves_a_checkpoint_and_exits_0_with_the_resume_command(tmp_path, micro):
    run = tmp_path / "run"
    process = subprocess.Popen(_command(micro, run, "optim.steps=50", "logging.save_every=0"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(run / "metrics.jsonl", process)
    while len(read_metrics(run / "metrics.jsonl")) < 2:  # step 0 and step 1 are written
        assert process.poll() is None
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-3000:]
    assert f"verimath train --resume {run}" in err and "SIGTERM" in err
    step = load_checkpoint(latest_checkpoint(run / "checkpoints"), restore_rng=False)["step"]
    assert 1 <= step < 50 and max(_steps(run / "metrics.jsonl")) == step


def test_nan_updates_are_skipped_and_too_many_in_a_row_stop_with_a_checkpoint(tmp_path, micro,
                                                                            monkeypatch):
    def poisoned(rewards, eps):
        return np.full(np.shape(rewards), np.nan)  # every advantage NaN: NaN gradients

    monkeypatch.setattr(step_module, "group_advantages", poisoned)
    config = load_config("tiny", micro + ["optim.steps=6", "logging.save_every=0",
                                          "algo.dynamic_sampling=false",
                                          "algo.overlong_filtering=false",  # tokens in the loss
                                          "optim.max_skipped_updates=3"])
    with open_state(config, tmp_path, echo=lambda _: None) as state:
        before = {k: v.clone() for k, v in state.model.state_dict().items()}
        with pytest.raises(Stopped, match="NaN or inf") as stopped:
            train(state)
        after = state.model.state_dict()
        assert all(torch.equal(before[k], after[k]) for k in before)  # no update applied
    assert stopped.value.exit_code == 1
    records = [r for r in read_metrics(tmp_path / "metrics.jsonl") if r["step"] > 0]
    assert records and all(r["optim/skipped"] == r["optim/updates"] for r in records)
    assert latest_checkpoint(tmp_path / "checkpoints") is not None


@pytest.mark.vllm
def test_a_vllm_run_resumed_equals_the_uninterrupted_run(tmp_path, micro):
    """vLLM draws its request seeds from the trainer's checkpointed RNG and gets the resumed
    weights pushed before it samples, so a resumed run takes the same steps."""
    vllm = ["rollout.engine=vllm", "rollout.vllm_enforce_eager=true", "logging.save_every=1"]
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    subprocess.run(_command(micro, whole, *vllm, "optim.steps=2"), check=True, capture_output=True,
                   timeout=900)
    shutil.copytree(whole, parts)  # the run as it stood at its step-1 checkpoint
    shutil.rmtree(parts / "checkpoints" / "step_00000002")
    done = subprocess.run([sys.executable, "-m", "verimath.trainer.worker", "--resume",
                           str(parts)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    expected, got = _steps(whole / "metrics.jsonl"), _steps(parts / "metrics.jsonl")
    assert sorted(got) == [0, 1, 2] and got[2] == expected[2]
    assert expected[2]["optim/updates"] > 0 and expected[2]["compute/weight_push_bytes"] > 0
