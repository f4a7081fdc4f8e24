"""Each DAPO switch of the config changes what the trainer does, one control at a time.

The loss-level effects (clip range, aggregation) are covered against hand-worked values in
test_loss.py; here we check that the config switches reach the loop: one-step runs of a
barely warm-started tiny model (every answer wrong, some responses cut at
``max_new_tokens``) with each control on and off.
"""

from __future__ import annotations

import pytest
from verimath.trainer.config_io import load_config
from verimath.trainer.loop import train
from verimath.trainer.metrics import read_metrics
from verimath.trainer.run import Run, make_loss_settings

# 20 warm-start steps: the model ends some responses with EOS but answers nothing right,
# so no group is informative.
ONE_STEP = [
    "model.tiny_hidden_size=32", "model.tiny_layers=1", "model.tiny_heads=2", "model.threads=0",
    "warmstart.steps=20", "warmstart.lr=1e-2", "warmstart.batch_size=32",
    "rollout.gen_prompts=4", "rollout.group_size=4",
    "rollout.max_new_tokens=10", "reward.overlong_buffer=3", "algo.train_prompts=4",
    "algo.mini_batch_prompts=4", "algo.max_gen_rounds=1", "eval.num_problems=0",
    "optim.steps=1", "logging.progress=false", "logging.plot=false", "logging.save_every=0",
]


def _one_step(tmp_path, overrides: list[str]) -> dict:
    config = load_config("tiny", ONE_STEP + overrides)
    with Run(config, run_dir=tmp_path, echo=lambda _: None) as run:
        train(run)
    (record,) = [r for r in read_metrics(tmp_path / "metrics.jsonl") if r["step"] == 1]
    assert record["reward/accuracy"] == 0.0  # the premise of the comparisons below
    assert record["sampling/informative_groups"] == 0.0
    return record


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> dict[str, dict]:
    runs = {
        "dapo": [],
        "no_dynamic_sampling": ["algo.dynamic_sampling=false"],
        "no_overlong": ["algo.dynamic_sampling=false", "algo.overlong_filtering=false",
                        "reward.overlong_punishment=false"],
    }
    return {name: _one_step(tmp_path_factory.mktemp(name), extra) for name, extra in runs.items()}


def test_clip_higher_off_uses_eps_low_on_both_sides():
    on = make_loss_settings(load_config("tiny", ["algo.eps_low=0.1", "algo.eps_high=0.3"]))
    off = make_loss_settings(load_config("tiny", ["algo.eps_low=0.1", "algo.eps_high=0.3",
                                                  "algo.clip_higher=false"]))
    assert (on.eps_low, on.eps_high) == (0.1, 0.3)
    assert (off.eps_low, off.eps_high) == (0.1, 0.1)


def test_token_level_loss_off_is_grpo_sequence_mean():
    assert make_loss_settings(load_config("tiny")).aggregation == "token-mean"
    off = load_config("tiny", ["algo.token_level_loss=false"])
    assert make_loss_settings(off).aggregation == "seq-mean-token-mean"
    assert make_loss_settings(load_config("grpo")).aggregation == "seq-mean-token-mean"


@pytest.mark.slow
def test_dynamic_sampling_off_keeps_every_group(records):
    on, off = records["dapo"], records["no_dynamic_sampling"]
    assert on["sampling/kept_groups"] == 0 and on["compute/trained_tokens"] == 0
    assert off["sampling/kept_groups"] == off["sampling/generated_groups"] == 4
    assert off["compute/trained_tokens"] > 0 and "loss/policy" in off


@pytest.mark.slow
def test_overlong_filtering_drops_truncated_tokens_from_the_loss(records):
    on, off = records["no_dynamic_sampling"], records["no_overlong"]
    for record in (on, off):
        assert 0 < record["length/truncated_frac"] < 1, "needs both kinds of response"
    assert off["compute/trained_tokens"] == off["compute/generated_tokens"]
    assert on["compute/trained_tokens"] < on["compute/generated_tokens"]
    # every truncated response has exactly max_new_tokens = 10 tokens, all filtered out
    truncated_tokens = 10 * on["length/truncated_frac"] * 16
    assert on["compute/trained_tokens"] == pytest.approx(
        on["compute/generated_tokens"] - truncated_tokens)


@pytest.mark.slow
def test_overlong_punishment_lowers_the_reward_of_long_responses(records):
    on, off = records["no_dynamic_sampling"], records["no_overlong"]
    assert off["reward/kept_mean"] == -1.0  # all wrong, no length term
    # a truncated response (length 10 = L_max) gets R_length = ((10 - 3) - 10) / 3 = -1
    assert on["reward/kept_mean"] <= -1.0 - on["length/truncated_frac"] + 1e-9
