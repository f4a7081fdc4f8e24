"""``optim.token_budget``: a run that ends at a generation cost, its schedule decaying over it."""

from __future__ import annotations

import math

import pytest
from smoke_config import SMOKE
from verimath.trainer.config.files import load_config
from verimath.trainer.run.loop import train
from verimath.trainer.run.metrics import read_metrics
from verimath.trainer.run.setup import open_state

BUDGET = 1500  # a few steps of the smoke model's ~400-1,500 tokens each
LR = 1e-2
RUN = [o for o in SMOKE if not o.startswith(("algo.kl_coef", "logging.backends"))] + [
    "optim.steps=40", f"optim.token_budget={BUDGET}", "optim.schedule=cosine",
    f"optim.lr={LR}", "optim.warmup_steps=0", "logging.plot=false", "eval.every=0"]


def _run(run_dir, overrides, resume=None):
    notes = []
    with open_state(load_config("tiny", overrides), run_dir, resume=resume,
                    echo=notes.append) as state:
        summary = train(state)
    return summary, notes


@pytest.fixture(scope="module")
def budget_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("budget")
    summary, _ = _run(run_dir, RUN)
    return run_dir, summary


@pytest.mark.slow
def test_the_run_ends_at_the_step_that_reaches_the_budget(budget_run):
    run_dir, summary = budget_run
    steps = [r for r in read_metrics(run_dir / "metrics.jsonl") if "compute/generated_tokens" in r]
    tokens = [int(r["compute/generated_tokens"]) for r in steps]
    assert 1 <= len(steps) < 40 and summary["rl_steps"] == len(steps)
    assert sum(tokens) >= BUDGET > sum(tokens[:-1])  # the first step to reach it is the last
    assert summary["generated_tokens"] == sum(tokens)
    assert summary["heldout_acc_after_rl"] is not None  # evaluated after that step
    # each step's updates run at the cosine of the budget share generated before the step
    spent = 0
    for record, n in zip(steps, tokens):
        expected = LR * (1 + math.cos(math.pi * min(1.0, spent / BUDGET))) / 2
        assert record["optim/lr"] == pytest.approx(expected, rel=1e-6), record["step"]
        spent += n


@pytest.mark.slow
def test_a_spent_budget_trains_nothing_and_a_raised_one_continues(budget_run, tmp_path):
    import shutil

    run_dir = tmp_path / "copy"
    shutil.copytree(budget_run[0], run_dir)
    first = budget_run[1]["rl_steps"]
    ckpt = str(sorted((run_dir / "checkpoints").glob("step_*"))[-1])
    summary, notes = _run(run_dir, RUN, resume=ckpt)
    assert summary == budget_run[1]
    assert any("raise optim.token_budget" in n for n in notes), notes
    summary, _ = _run(run_dir, [*RUN, f"optim.token_budget={3 * BUDGET}"], resume=ckpt)
    assert summary["rl_steps"] > first and summary["generated_tokens"] >= 3 * BUDGET


def test_a_negative_budget_is_refused():
    with pytest.raises(ValueError, match="optim.token_budget"):
        load_config("tiny", ["optim.token_budget=-5"])
