"""Behaviour log-probs of the HF engine: the distribution each token was drawn from."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from verimath.trainer.core.logprobs import pack_sequences, token_logprobs
from verimath.trainer.core.protocols import SamplingParams, WeightSync
from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model
from verimath.trainer.rollout.hf_engine import HFRolloutEngine, sampling_logits

TOKENIZER = make_char_tokenizer()
MODEL = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=2, num_heads=4, seed=0).eval()
PROMPTS = [TOKENIZER(t)["input_ids"] for t in ("1+1=", "What is 12 - 3?\n", "9*9=")]


def _reference(out, params: SamplingParams) -> list[np.ndarray]:
    """log_softmax of the sampling logits at each response token, from a plain forward."""
    ids, attention, mask = pack_sequences(out.prompt_ids, out.response_ids, pad_id=0)
    with torch.no_grad():
        logits = MODEL(input_ids=ids, attention_mask=attention).logits[:, :-1]  # (B, S-1, V)
    logp = torch.log_softmax(sampling_logits(logits, params), dim=-1)
    logp = logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)  # (B, S-1)
    return [logp[i][mask[i].bool()].numpy() for i in range(len(out))]


@pytest.mark.parametrize("params, seeds", [
    (SamplingParams(greedy=True, max_new_tokens=10), None),
    (SamplingParams(temperature=0.7, max_new_tokens=10), None),
    (SamplingParams(temperature=1.0, top_p=0.8, max_new_tokens=10), None),
    (SamplingParams(temperature=0.7, max_new_tokens=10), [1, 2, 3]),
])
def test_hf_engine_reports_the_logprobs_of_the_sampled_distribution(params, seeds):
    torch.manual_seed(0)
    out = HFRolloutEngine(MODEL, TOKENIZER).generate(PROMPTS, params, n=3, seeds=seeds)
    assert [len(lp) for lp in out.logprobs] == [len(r) for r in out.response_ids]
    assert all(lp.dtype == np.float32 for lp in out.logprobs)
    for got, want in zip(out.logprobs, _reference(out, params)):
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_with_full_nucleus_the_logprobs_are_the_trainers_old_logprobs():
    params = SamplingParams(temperature=0.7, max_new_tokens=10)
    torch.manual_seed(0)
    out = HFRolloutEngine(MODEL, TOKENIZER).generate(PROMPTS, params, n=2)
    ids, attention, mask = pack_sequences(out.prompt_ids, out.response_ids, pad_id=0)
    with torch.no_grad():
        old = token_logprobs(MODEL, ids, attention, temperature=0.7)
    for i, got in enumerate(out.logprobs):
        np.testing.assert_allclose(got, old[i][mask[i].bool()].numpy(), atol=1e-5)


def test_top_p_keeps_the_smallest_likely_set_and_renormalises():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    kept = sampling_logits(logits, SamplingParams(top_p=0.75))
    assert torch.isinf(kept[0, 2:]).all() and torch.isfinite(kept[0, :2]).all()
    np.testing.assert_allclose(torch.softmax(kept, -1)[0, :2].numpy(), [0.625, 0.375], rtol=1e-5)
    assert torch.isfinite(sampling_logits(logits, SamplingParams(top_p=0.1))[0, 0])
    assert torch.equal(sampling_logits(logits, SamplingParams(greedy=True, top_p=0.1)), logits)


def test_hf_sync_weights_pushes_nothing():
    assert HFRolloutEngine(MODEL, TOKENIZER).sync_weights(MODEL) == WeightSync()
