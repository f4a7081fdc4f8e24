"""The console metric line: which steps print it, what it says, and that it reaches the
console beside the progress bar and without it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from verimath.trainer.config import LoggingConfig
from verimath.trainer.config.files import load_config
from verimath.trainer.run.loop import train
from verimath.trainer.run.metrics import read_metrics
from verimath.trainer.run.progress import is_print_step, metric_line
from verimath.trainer.run.setup import open_state

STEP = {"reward/mean": -0.25, "reward/accuracy": 0.375, "sampling/kept_groups": 3.0,
        "sampling/target_groups": 4.0, "policy/entropy": 0.8125, "length/mean": 11.5,
        "clip/frac_low": 0.001, "clip/frac_high": 0.004, "compute/generated_tokens": 2000.0,
        "time/step": 4.0}


@given(every=st.integers(0, 30), last=st.integers(1, 200))
def test_print_steps_are_the_multiples_and_the_last(every, last):
    printed = [s for s in range(1, last + 1) if is_print_step(s, every, last)]
    if every == 0:
        assert printed == []
        return
    multiples = list(range(every, last + 1, every))
    assert printed == multiples + ([last] if last % every else [])


def test_the_line_names_each_metric_with_its_value():
    line = metric_line(10, 100, STEP)
    assert line.split(" | ") == [
        "step 10/100", "reward -0.250", "acc 0.375", "kept 3/4", "entropy 0.812", "len 11.5",
        "clip_low 0.0010", "clip_high 0.0040", "500 tok/s"]


def test_a_step_on_carried_groups_shows_no_rollout_numbers():
    carried = {**STEP, "sampling/generated_groups": 0.0, "compute/generated_tokens": 0.0,
               "reward/accuracy": 0.0, "length/mean": 0.0}
    assert metric_line(2, 3, carried).split(" | ") == [
        "step 2/3", "kept 3/4 (carried, nothing generated)", "entropy 0.812",
        "clip_low 0.0010", "clip_high 0.0040"]


def test_missing_metrics_are_left_out_and_non_finite_ones_read_na():
    line = metric_line(1, 2, {"reward/accuracy": float("nan"), "eval/avg@4": 0.5,
                              "eval/problems": 40.0})
    assert line == "step 1/2 | acc n/a | heldout avg@4 0.500"  # no step time: no tok/s


def test_print_every_must_not_be_negative():
    with pytest.raises(ValueError, match="logging.print_every"):
        LoggingConfig(print_every=-1)


RUN = ["model.tiny_hidden_size=16", "model.tiny_layers=1", "model.tiny_heads=2",
       "model.threads=0", "warmstart.steps=0", "rollout.gen_prompts=2", "rollout.group_size=2",
       "rollout.max_new_tokens=4", "reward.overlong_buffer=2", "algo.dynamic_sampling=false",
       "algo.train_prompts=2", "algo.mini_batch_prompts=2", "algo.max_gen_rounds=1",
       "eval.num_problems=0", "optim.steps=3", "logging.plot=false", "logging.save_every=0"]


@pytest.mark.parametrize(("progress", "terminal", "every", "steps"),
                         [(False, True, 2, [2, 3]), (True, True, 2, [2, 3]),
                          (True, False, 2, [2, 3]), (False, True, 0, [])])
def test_a_run_prints_its_lines_with_and_without_the_bar(tmp_path, capsys, monkeypatch,
                                                         progress, terminal, every, steps):
    """The bar is drawn only on a terminal; lines go through it there, else through the
    run's echo (a log file gets lines, not bar redraws)."""
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    config = load_config("tiny", RUN + [f"logging.progress={str(progress).lower()}",
                                        f"logging.print_every={every}"])
    echoed: list[str] = []
    with open_state(config, tmp_path, echo=echoed.append) as state:
        train(state)
    out = capsys.readouterr().out.splitlines()
    bar = progress and terminal
    shown = [line for line in (out if bar else echoed) if line.startswith("step ")]
    assert [line.split(" | ")[0] for line in shown] == [f"step {s}/3" for s in steps]
    assert all("tok/s" in line and "acc " in line for line in shown)
    if bar:  # printed through the bar, not the run's echo
        assert not [line for line in echoed if line.startswith("step ")]
    else:
        assert not [line for line in out if line.startswith("step ")]
    for record in read_metrics(tmp_path / "metrics.jsonl"):  # the line's reward: all responses
        accuracy = record["reward/accuracy"]
        # +1 right, -1 wrong, plus a length penalty in [-1, 0]
        assert 2 * accuracy - 2 <= record["reward/mean"] <= 2 * accuracy - 1 + 1e-9
