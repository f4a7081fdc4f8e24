"""Each DAPO switch of the config changes what the trainer does, one control at a time.

The loss-level effects (clip range, aggregation) are covered against hand-worked values in
test_loss.py; here we check that the config switches reach the loop: one-step runs of a
barely warm-started tiny model (every answer wrong, some responses cut at
``max_new_tokens``) with each control on and off.
"""

from __future__ import annotations

import pytest
import verimath.trainer.run.step as step_module
from verimath.trainer.config.files import load_config
from verimath.trainer.run.loop import train
from verimath.trainer.run.metrics import read_metrics
from verimath.trainer.run.setup import open_state

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
    with open_state(config, tmp_path, echo=lambda _: None) as state:
        train(state)
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


def _settings_of_one_update(tmp_path, monkeypatch, overrides: list[str]):
    """The LossSettings that rl_step hands to the update (no group needs to be informative:
    dynamic sampling is off)."""
    seen = []
    update = step_module.update_on_mini_batch

    def spy(*args, settings, **kwargs):
        seen.append(settings)
        return update(*args, settings=settings, **kwargs)

    monkeypatch.setattr(step_module, "update_on_mini_batch", spy)
    _one_step(tmp_path, ["algo.dynamic_sampling=false", *overrides])
    assert seen, "no update ran"
    return seen[0]


@pytest.mark.slow
@pytest.mark.parametrize(("overrides", "clip", "aggregation"), [
    (["algo.eps_low=0.1", "algo.eps_high=0.3"], (0.1, 0.3), "token-mean"),
    (["algo.eps_low=0.1", "algo.eps_high=0.3", "algo.clip_higher=false"], (0.1, 0.1),
     "token-mean"),
    (["algo.token_level_loss=false"], (0.2, 0.28), "seq-mean-token-mean"),
    (["algo.loss_aggregation=seq-mean-token-sum-norm"], (0.2, 0.28), "seq-mean-token-sum-norm"),
])
def test_clip_higher_and_token_level_loss_reach_the_update(tmp_path, monkeypatch, overrides,
                                                           clip, aggregation):
    settings = _settings_of_one_update(tmp_path, monkeypatch, overrides)
    assert (settings.eps_low, settings.eps_high) == clip
    assert settings.aggregation == aggregation
    assert settings.horizon == 10  # rollout.max_new_tokens, the Dr. GRPO constant


def test_grpo_preset_switches_the_controls_off():
    algo = load_config("grpo").algo
    assert algo.clip_range == (0.2, 0.2) and algo.aggregation == "seq-mean-token-mean"


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
