"""Rollout engine protocol, the Hugging Face engine, packing and log-probs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.trainer.core.logprobs import pack_sequences, token_logprobs
from verimath.trainer.core.protocols import RolloutEngine, Rollouts, SamplingParams
from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model
from verimath.trainer.rollout.hf_engine import HFRolloutEngine

TOKENIZER = make_char_tokenizer()
MODEL = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=2, num_heads=4, seed=0).eval()
PROMPTS = [TOKENIZER(t)["input_ids"] for t in ("1+1=", "What is 12 - 3?\n", "9*9=")]


def test_pack_sequences_hand_worked():
    ids, attention, mask = pack_sequences([[5, 6], [7]], [[8, 1], [9, 10, 1]], pad_id=0)
    assert ids.tolist() == [[5, 6, 8, 1], [7, 9, 10, 1]]
    assert attention.tolist() == [[1, 1, 1, 1], [1, 1, 1, 1]]
    # logits at t predict token t+1: row 0 predicts 8 at t=1 and 1 at t=2.
    assert mask.tolist() == [[0, 1, 1], [1, 1, 1]]
    ids, attention, mask = pack_sequences([[5]], [[8]], pad_id=0)
    assert mask.tolist() == [[1]]


token_lists = st.lists(st.integers(3, 98), min_size=1, max_size=6)


@given(st.lists(st.tuples(token_lists, token_lists), min_size=1, max_size=5))
def test_pack_mask_counts_response_tokens(pairs):
    prompts, responses = [p for p, _ in pairs], [r for _, r in pairs]
    ids, attention, mask = pack_sequences(prompts, responses, pad_id=0)
    assert mask.sum(dim=1).tolist() == [float(len(r)) for r in responses]
    assert attention.sum(dim=1).tolist() == [len(p) + len(r) for p, r in pairs]
    for i, r in enumerate(responses):  # masked positions predict exactly the response
        targets = ids[i, 1:][mask[i].bool()].tolist()
        assert targets == r


def test_pack_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="2 prompts but 1 responses"):
        pack_sequences([[1], [2]], [[3]], pad_id=0)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.tuples(token_lists, token_lists), min_size=1, max_size=4),
       st.sampled_from([1.0, 0.7]))
def test_token_logprobs_match_a_plain_loop_and_ignore_padding(pairs, temperature):
    prompts, responses = [p for p, _ in pairs], [r for _, r in pairs]
    ids, attention, mask = pack_sequences(prompts, responses, pad_id=0)
    with torch.no_grad():
        batched = token_logprobs(MODEL, ids, attention, temperature=temperature)
        for i, (p, r) in enumerate(pairs):  # one unpadded sequence at a time
            seq = torch.tensor([p + r])
            logits = MODEL(input_ids=seq).logits[0, :-1].double() / temperature
            ref = []
            for t in range(len(p) - 1, len(p) + len(r) - 1):
                ref.append(torch.log_softmax(logits[t], dim=-1)[seq[0, t + 1]].item())
            got = batched[i][mask[i].bool()].tolist()
            np.testing.assert_allclose(got, ref, atol=1e-4)


def test_entropy_is_bounded():
    ids, attention, _ = pack_sequences(PROMPTS, [[3, 4]] * 3, pad_id=0)
    with torch.no_grad():
        logp, entropy = token_logprobs(MODEL, ids, attention, with_entropy=True)
    assert (logp <= 0).all()
    assert (entropy >= -1e-5).all() and (entropy <= np.log(len(TOKENIZER)) + 1e-4).all()


def test_sampling_params_validation():
    for bad in ({"temperature": 0}, {"top_p": 0}, {"top_p": 1.5}, {"max_new_tokens": 0}):
        with pytest.raises(ValueError):
            SamplingParams(**bad)


def test_engine_contract():
    torch.manual_seed(0)
    with HFRolloutEngine(MODEL, TOKENIZER, batch_size=4) as engine:
        assert isinstance(engine, RolloutEngine)
        out = engine.generate(PROMPTS, SamplingParams(max_new_tokens=5), n=3)
    assert isinstance(out, Rollouts) and len(out) == 9
    assert engine.closed
    eos = TOKENIZER.eos_token_id
    for i, (prompt, response) in enumerate(zip(out.prompt_ids, out.response_ids)):
        assert prompt == PROMPTS[i // 3]  # prompt-major order
        assert 1 <= len(response) <= 5
        assert eos not in response[:-1]  # nothing after EOS
        assert out.truncated[i] == (response[-1] != eos)
        assert out.truncated[i] <= (len(response) == 5)
        assert out.texts[i] == TOKENIZER.decode(response, skip_special_tokens=True)
    assert out.lengths.tolist() == [len(r) for r in out.response_ids]


def test_closed_engine_refuses_work():
    engine = HFRolloutEngine(MODEL, TOKENIZER)
    engine.close()
    engine.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        engine.generate(PROMPTS, SamplingParams())


def test_greedy_is_deterministic_and_picks_the_argmax():
    engine = HFRolloutEngine(MODEL, TOKENIZER)
    params = SamplingParams(max_new_tokens=4, greedy=True)
    a = engine.generate(PROMPTS, params)
    b = engine.generate(PROMPTS, params)
    assert a.response_ids == b.response_ids
    ids, attention, mask = pack_sequences(a.prompt_ids, a.response_ids, pad_id=0)
    with torch.no_grad():
        logits = MODEL(input_ids=ids, attention_mask=attention).logits[:, :-1]
        logp = token_logprobs(MODEL, ids, attention)
    best = torch.log_softmax(logits.float(), -1).max(-1).values
    m = mask.bool()
    torch.testing.assert_close(logp[m], best[m], atol=1e-5, rtol=0)


def test_sampling_is_reproducible_from_the_torch_seed():
    engine = HFRolloutEngine(MODEL, TOKENIZER)
    params = SamplingParams(max_new_tokens=6, temperature=1.5)
    torch.manual_seed(7)
    a = engine.generate(PROMPTS, params, n=2)
    torch.manual_seed(7)
    b = engine.generate(PROMPTS, params, n=2)
    assert a.response_ids == b.response_ids


def test_batches_are_split_without_changing_results():
    params = SamplingParams(max_new_tokens=4, greedy=True)
    whole = HFRolloutEngine(MODEL, TOKENIZER, batch_size=64).generate(PROMPTS, params, n=2)
    split = HFRolloutEngine(MODEL, TOKENIZER, batch_size=1).generate(PROMPTS, params, n=2)
    assert whole.response_ids == split.response_ids


def test_sampling_uses_the_full_distribution_and_greedy_gets_no_sampling_flags(monkeypatch):
    """Sampling passes ``top_k=0`` (transformers would otherwise keep only the top 50
    tokens); greedy passes no sampling flags (transformers warns about them)."""
    calls = []
    real = MODEL.generate

    def spy(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(MODEL, "generate", spy)
    engine = HFRolloutEngine(MODEL, TOKENIZER)
    engine.generate(PROMPTS[:1], SamplingParams(temperature=0.7, top_p=0.9, max_new_tokens=2))
    engine.generate(PROMPTS[:1], SamplingParams(greedy=True, max_new_tokens=2))
    sampled, greedy = calls
    assert (sampled["top_k"], sampled["temperature"], sampled["top_p"]) == (0, 0.7, 0.9)
    assert not {"top_k", "temperature", "top_p"} & greedy.keys()
