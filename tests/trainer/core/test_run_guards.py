"""Runs that cannot be lost, mixed or wasted: one live process per run directory, Ctrl-C in
the warm start, resume commands that name the ranks, ranks that die with their launcher,
prompts that fit the model, and runs that say when they train on nothing."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from verimath.trainer.checkpoint.files import MANIFEST, latest_checkpoint
from verimath.trainer.core.processes import LAUNCHER_ENV, RunDirInUse, RunLock, check_not_in_use
from verimath.trainer.run.cli import TRAINED_NOTHING, add_arguments, resolve_config
from verimath.trainer.run.cli import main as train_main
from verimath.trainer.run.launch import interrupted_message

QUICK = ["model.tiny_hidden_size=32", "model.tiny_layers=1", "model.tiny_heads=2",
         "model.threads=0", "warmstart.steps=0", "rollout.gen_prompts=2", "rollout.group_size=2",
         "rollout.max_new_tokens=4", "reward.overlong_buffer=2", "algo.train_prompts=2",
         "algo.mini_batch_prompts=2", "algo.max_gen_rounds=1", "algo.dynamic_sampling=false",
         "eval.num_problems=0", "logging.progress=false", "logging.plot=false",
         "logging.save_every=1", "reward.workers=1"]
FINISHED = (0, TRAINED_NOTHING)


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def _cli(argv: list[str]) -> int:
    return train_main(_args(argv))


@pytest.fixture
def quick_run(tmp_path) -> Path:
    run = tmp_path / "run"
    assert _cli(["--output-dir", str(run), *QUICK, "optim.steps=1"]) in FINISHED
    return run


def _holder(folder: Path) -> subprocess.Popen:
    """Another live process that holds ``folder``'s lock."""
    code = ("import sys, time; from verimath.trainer.core.processes import RunLock; "
            "RunLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(120)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_run_directory_in_use_is_refused_until_its_process_dies(quick_run, capsys):
    holder = _holder(quick_run)
    try:
        with pytest.raises(RunDirInUse, match="in use by another live verimath train"):
            check_not_in_use(quick_run)
        assert _cli(["--resume", str(quick_run), "optim.steps=2"]) == 2
        assert "is in use by another live verimath train process" in capsys.readouterr().err
    finally:
        holder.kill()  # kill -9: the kernel drops its lock
        holder.wait()
    check_not_in_use(quick_run)
    with RunLock(quick_run):  # and this process may take it, once
        with pytest.raises(RunDirInUse):
            RunLock(quick_run).acquire()
    assert _cli(["--resume", str(quick_run), "optim.steps=2"]) in FINISHED


def test_ctrl_c_in_the_warm_start_leaves_a_run_that_resume_starts_again(tmp_path, monkeypatch,
                                                                        capsys):
    import verimath.trainer.run.setup as setup

    real = setup.warmstart

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    run = tmp_path / "run"
    monkeypatch.setattr(setup, "warmstart", interrupted)
    assert _cli(["--output-dir", str(run), *QUICK, "warmstart.steps=3",
                 "optim.steps=1"]) == 130
    err = capsys.readouterr().err
    assert f"`verimath train --resume {run}` starts the run again from step 0" in err
    assert (run / "config.yaml").is_file() and latest_checkpoint(run / "checkpoints") is None
    monkeypatch.setattr(setup, "warmstart", real)
    assert _cli(["--resume", str(run)]) in FINISHED
    err = capsys.readouterr().err
    assert "stopped before its first checkpoint: starting it again from step 0" in err
    summary = json.loads((run / "summary.json").read_text())
    assert summary["rl_steps"] == 1 and latest_checkpoint(run / "checkpoints").name.endswith("1")


def test_a_resume_on_another_number_of_ranks_says_so_first(quick_run):
    checkpoint = latest_checkpoint(quick_run / "checkpoints")
    manifest = json.loads((checkpoint / MANIFEST).read_text())
    (checkpoint / MANIFEST).write_text(json.dumps({**manifest, "ranks": 2}))
    said = []
    resolve_config(_args(["--resume", str(quick_run), "optim.steps=2"]), echo=said.append)
    assert any("written by 2 processes and resumes on 1" in s and "--nproc 2" in s for s in said)
    said.clear()
    resolve_config(_args(["--resume", str(quick_run), "--nproc", "2", "optim.steps=2"]),
                   echo=said.append)
    assert not any("resumes on" in s for s in said)


def test_resume_commands_name_the_number_of_processes(quick_run):
    assert f"continue with: verimath train --nproc 4 --resume {quick_run}" in \
        interrupted_message(quick_run, nproc=4)
    assert f"continue with: verimath train --resume {quick_run}" in interrupted_message(quick_run)


def test_prompts_beyond_the_models_positions_are_refused_before_anything_runs(tmp_path, capsys):
    run = tmp_path / "run"
    assert _cli(["--output-dir", str(run), *QUICK, "rollout.max_new_tokens=125"]) == 2
    err = capsys.readouterr().err
    assert "with rollout.max_new_tokens (125) a sequence reaches" in err
    assert "beyond the model's 128 positions (max_position_embeddings)" in err
    assert not run.exists()


@given(prompt=st.integers(0, 300), new=st.integers(1, 300), positions=st.integers(1, 400))
def test_the_context_check_names_the_numbers(prompt, new, positions):
    from verimath.trainer.rollout.context_length import context_error

    message = context_error(prompt_tokens=prompt, max_new_tokens=new, positions=positions,
                            what="the prompt")
    assert (message is None) == (prompt + new <= positions)
    if message:
        assert f"is {prompt} tokens" in message and f"({new})" in message
        assert f"reaches {prompt + new} tokens" in message and f"{positions} positions" in message
        assert (f"at most {positions - prompt}" in message) == (positions - prompt >= 1)


def test_estimate_warns_when_the_responses_outgrow_the_model(capsys):
    from verimath.trainer.cli import main

    assert main(["train", "--config", "dapo", "--estimate", "--model-shape",
                 "Qwen2.5-Math-7B"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the warning is wrapped at 100
    assert out.startswith("WARNING:") and "20992 tokens" in out and "4096 positions" in out
    assert main(["train", "--config", "dapo-qwen2.5-math-7b", "--estimate"]) == 0
    assert "WARNING" not in capsys.readouterr().out


def test_a_run_that_trains_on_nothing_warns_and_exits_3(tmp_path, capsys):
    run = tmp_path / "run"  # a boxed answer style, but the tiny model writes "Answer: x"
    assert _cli(["--output-dir", str(run), *QUICK, "reward.answer_style=boxed",
                 "optim.steps=3"]) == TRAINED_NOTHING
    printed = capsys.readouterr()
    assert "steps 1-3 trained on nothing" in printed.out  # the run's own lines
    assert "every response was wrong" in printed.out and "reward.answer_style=boxed" in printed.out
    assert "error: the run trained on nothing" in printed.err and "exit code 3" in printed.err
    assert json.loads((run / "summary.json").read_text())["rl_steps"] == 3  # it finished


def _wait_for(predicate, timeout: float, what: str, process=None) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"{what}: the launcher exited with {process.returncode}: "
                                 f"{process.stdout.read()[-3000:]}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _processes_of(launcher: int) -> list[int]:
    """Live processes started by the launcher (torchrun and its ranks carry its pid)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"{LAUNCHER_ENV}={launcher}".encode() in environ and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _launch(argv: list[str], cwd: Path) -> subprocess.Popen:
    from conftest import default_sigint

    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "verimath.trainer.cli", "train", "--nproc",
                             "2", *argv], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=default_sigint)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_two_ranks_interrupted_stopped_then_killed_with_their_launcher(tmp_path):
    run, long = tmp_path / "run", [*QUICK, "eval.num_problems=0", "optim.steps=100000"]
    launcher = _launch(["--output-dir", str(run), *long], tmp_path)
    _wait_for(lambda: latest_checkpoint(run / "checkpoints") is not None, 300, "a checkpoint",
              launcher)
    os.killpg(launcher.pid, signal.SIGINT)  # Ctrl-C in a terminal: the launcher's group
    out = launcher.communicate(timeout=120)[0]
    assert launcher.returncode == 130, out[-3000:]
    assert out.count("verimath train: interrupted") == 1, out[-3000:]
    assert f"continue with: verimath train --nproc 2 --resume {run}" in out

    launcher = _launch(["--resume", str(run)], tmp_path)
    metrics = run / "metrics.jsonl"
    lines = len(metrics.read_text().splitlines())
    _wait_for(lambda: len(metrics.read_text().splitlines()) > lines + 1, 300, "new steps",
              launcher)
    second = subprocess.run([sys.executable, "-m", "verimath.trainer.cli", "train", "--resume",
                             str(run)], capture_output=True, text=True, timeout=120)
    assert second.returncode == 2 and "in use by another live" in second.stderr
    # SIGTERM to the launcher alone (a scheduler, a container stop): the ranks get it, finish
    # their step, save together and exit 0
    before = latest_checkpoint(run / "checkpoints")
    launcher.send_signal(signal.SIGTERM)
    out = launcher.communicate(timeout=120)[0]
    assert launcher.returncode == 0, out[-3000:]
    saved = latest_checkpoint(run / "checkpoints")
    assert saved != before and f"SIGTERM: checkpoint {saved} saved at step" in out, out[-3000:]
    assert f"continue with: verimath train --nproc 2 --resume {run}" in out
    assert not _processes_of(launcher.pid)

    launcher = _launch(["--resume", str(run)], tmp_path)
    lines = len(metrics.read_text().splitlines())
    _wait_for(lambda: len(metrics.read_text().splitlines()) > lines + 1, 300, "new steps",
              launcher)
    ranks = _processes_of(launcher.pid)
    assert len(ranks) >= 3, ranks  # torchrun and two ranks
    launcher.kill()  # kill -9, as an out-of-memory killer or a scheduler would
    launcher.wait()
    killed_at = time.monotonic()
    _wait_for(lambda: not _processes_of(launcher.pid), 5, "every rank to exit")
    assert time.monotonic() - killed_at < 5
    size = metrics.stat().st_size
    time.sleep(2)
    assert metrics.stat().st_size == size  # nothing written after
    check_not_in_use(run)  # and the dead ranks hold no lock


def _step(informative=0, right=0, wrong=0, tokens=0, cap=0):
    return {"sampling/informative_groups": informative, "sampling/all_correct_groups": right,
            "sampling/all_wrong_groups": wrong, "compute/trained_tokens": tokens,
            "sampling/hit_cap": cap}


@given(steps=st.lists(st.sampled_from(["learn", "right", "wrong"]), min_size=1, max_size=12))
def test_the_learning_signal_watch_warns_after_three_quiet_steps_in_a_row(steps):
    from verimath.trainer.config import TrainConfig
    from verimath.trainer.run.learning_signal import QUIET_STEPS, LearningSignalWatch

    said = []
    watch = LearningSignalWatch(TrainConfig(), said.append)
    for i, kind in enumerate(steps, 1):
        watch.update(i, _step(informative=kind == "learn", tokens=10 * (kind == "learn"),
                              right=4 * (kind == "right"), wrong=4 * (kind == "wrong")))
    streaks, run = 0, 0
    for kind in steps:
        run = 0 if kind == "learn" else run + 1
        streaks += run == QUIET_STEPS
    warnings = [s for s in said if "trained on nothing" in s]
    assert len(warnings) == streaks
    assert watch.trained_nothing == ("learn" not in steps)
    watch.close()
    if "learn" not in steps:  # a run too short to have warned still says why at the end
        assert any("trained on nothing" in s for s in said)


def test_the_likely_causes_follow_the_verdicts():
    from verimath.trainer.config import TrainConfig
    from verimath.trainer.run.learning_signal import quiet_cause

    config = TrainConfig()
    assert "reward.answer_style=auto" in quiet_cause(config, all_wrong=5, all_right=0)
    assert "too easy" in quiet_cause(config, all_wrong=0, all_right=5)
    assert "rollout.group_size" in quiet_cause(config, all_wrong=2, all_right=3)


def test_dynamic_sampling_that_stops_short_is_printed_once_then_counted():
    from verimath.trainer.config import TrainConfig
    from verimath.trainer.run.learning_signal import LearningSignalWatch, first_note_only

    said = []
    echo = first_note_only(said.append)
    for step in (1, 2, 3):
        echo(f"step {step}: dynamic sampling hit max_rounds=3 with 2/4 informative groups")
    echo("step 3: something else")
    assert len(said) == 2 and said[0].startswith("step 1: dynamic sampling hit max_rounds=3")
    watch = LearningSignalWatch(TrainConfig(), said.append)
    for step in (1, 2, 3):
        watch.update(step, _step(informative=2, tokens=5, cap=1))
    watch.close()
    assert "stopped short of algo.train_prompts on 3 of 3 steps" in said[-1]


@pytest.mark.parametrize(("right", "wrong", "advice"), [(9, 1, False), (8, 2, False),
                                                        (7, 3, True), (0, 5, True)])
def test_a_run_that_masters_its_task_ends_without_advice_to_change_it(right, wrong, advice):
    """Steps cut short because nearly every discarded group was all right are how a run that
    solves its task ends: the summary says so and gives no advice; mostly all-wrong groups
    (the policy solves little) get the advice to generate more per step."""
    from verimath.trainer.config import TrainConfig
    from verimath.trainer.run.learning_signal import LearningSignalWatch

    said = []
    watch = LearningSignalWatch(TrainConfig(), said.append)
    watch.update(1, _step(informative=4, tokens=5))
    for step in (2, 3):
        watch.update(step, _step(informative=2, right=right, wrong=wrong, tokens=5, cap=1))
    watch.close()
    assert "on 2 of 3 steps, from step 2 on" in said[-1]
    assert ("raise algo.max_gen_rounds" in said[-1]) == advice
    assert ("masters its task" in said[-1]) == (not advice)
