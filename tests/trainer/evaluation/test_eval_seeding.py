"""Seeded sampling: the inverse-CDF draw, per-row RNGs in the HF engine, and the trainer's
held-out evaluation that neither reads nor advances the training RNG."""

from __future__ import annotations

import pytest
import torch
from tiny_models import TEMPLATE, fit_seven_or_eight, prompt_text
from verimath.envs import Problem
from verimath.trainer.core.protocols import SamplingParams
from verimath.trainer.evaluation.evaluate import evaluate
from verimath.trainer.rollout.hf_engine import HFRolloutEngine
from verimath.trainer.rollout.seeded_sampling import inverse_cdf_sample


def test_inverse_cdf_sample_follows_the_distribution():
    probs = torch.tensor([0.5, 0.3, 0.2])
    logits = probs.log().expand(1000, 3)  # (B, V)
    u = (torch.arange(1000, dtype=torch.float64) + 0.5) / 1000  # evenly spread uniforms
    counts = torch.bincount(inverse_cdf_sample(logits, u, temperature=1.0, top_p=1.0),
                            minlength=3)
    assert counts.tolist() == [500, 300, 200]


def test_inverse_cdf_sample_temperature_and_nucleus():
    probs = torch.tensor([0.2, 0.5, 0.3])  # sorted: token 1, token 2, token 0
    logits = probs.log().expand(1000, 3)
    u = (torch.arange(1000, dtype=torch.float64) + 0.5) / 1000
    kept = torch.bincount(inverse_cdf_sample(logits, u, temperature=1.0, top_p=0.7),
                          minlength=3)
    assert kept.tolist() == [0, 625, 375]  # tokens 1 and 2 renormalized: 0.5/0.8, 0.3/0.8
    only_top = inverse_cdf_sample(logits, u, temperature=1.0, top_p=0.4)
    assert set(only_top.tolist()) == {1}
    cold = torch.bincount(inverse_cdf_sample(logits, u, temperature=0.5, top_p=1.0), minlength=3)
    expected = probs**2 / (probs**2).sum()  # T = 0.5 squares the probabilities
    assert cold.tolist() == pytest.approx((expected * 1000).tolist(), abs=1)
    with pytest.raises(ValueError):
        inverse_cdf_sample(logits, u, temperature=0.0, top_p=1.0)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    return fit_seven_or_eight(tmp_path_factory.mktemp("seven-or-eight"))


def prompts(tokenizer, count):
    return [tokenizer(TEMPLATE.format(prompt=prompt_text(i)))["input_ids"] for i in range(count)]


@pytest.mark.slow
def test_seeded_samples_ignore_batching_and_leave_the_global_rng(fitted):
    model, tokenizer = fitted
    params = SamplingParams(temperature=1.0, top_p=0.9, max_new_tokens=12)
    ids = prompts(tokenizer, 6)
    with HFRolloutEngine(model, tokenizer, batch_size=64) as engine:
        state = torch.get_rng_state()
        together = engine.generate(ids, params, n=3, seeds=[10, 11, 12, 13, 14, 15])
        assert torch.equal(torch.get_rng_state(), state)
        engine.batch_size = 4  # other batches: prompt copies split across calls
        reversed_ = engine.generate(ids[::-1], params, n=3, seeds=[15, 14, 13, 12, 11, 10])
        other_seed = engine.generate(ids, params, n=3, seeds=[99, 98, 97, 96, 95, 94])
    rows = together.response_ids
    assert rows == [r for i in range(5, -1, -1) for r in reversed_.response_ids[3 * i:3 * i + 3]]
    assert rows != other_seed.response_ids  # other seeds, other samples
    assert any("Answer: 8" in t for t in together.texts) and any(
        "Answer: 7" in t for t in together.texts)


@pytest.mark.slow
def test_trainer_evaluation_is_seeded_on_its_own(fitted):
    model, tokenizer = fitted
    problems = [Problem(id=f"t/{i}", prompt=prompt_text(i), answer=str(7 + i % 2), source="t")
                for i in range(12)]
    engine = HFRolloutEngine(model, tokenizer)
    kwargs = dict(k=4, temperature=1.0, top_p=1.0, max_new_tokens=12, template=TEMPLATE,
                  use_chat_template=False, answer_style="dapo", mode="integer")
    torch.manual_seed(0)
    state = torch.get_rng_state()
    first = evaluate(engine, tokenizer, problems, **kwargs, seed=5)
    assert torch.equal(torch.get_rng_state(), state)  # the training RNG did not move
    torch.manual_seed(1234)
    torch.rand(10)  # whatever ran before
    assert evaluate(engine, tokenizer, problems, **kwargs, seed=5, batch_size=8) == first
    assert 0 < first["eval/avg@4"] < 1 and first["eval/problems"] == 12
    others = [evaluate(engine, tokenizer, problems, **kwargs, seed=s)["eval/avg@4"]
              for s in (6, 7, 8)]
    assert any(v != first["eval/avg@4"] for v in others)  # the seed does change the samples
