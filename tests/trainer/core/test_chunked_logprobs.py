"""Memory-bounded log-probs: the output head applied chunk by chunk over response positions
gives the same log-probs, entropies and gradients as full logits, and never builds them."""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.trainer.core.logprobs import pack_sequences, token_logprobs
from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model

TOKENIZER = make_char_tokenizer()
MODEL64 = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=2, num_heads=4,
                          seed=1).double().eval()
token_lists = st.lists(st.integers(3, 98), min_size=1, max_size=7)


def _batch(pairs):
    prompts, responses = [p for p, _ in pairs], [r for _, r in pairs]
    return pack_sequences(prompts, responses, pad_id=0)  # ids, attention, mask (B, S-1)


def _forward_and_grads(model, ids, attention, mask, chunk_size, temperature):
    """log-probs, entropies and the gradient of a weighted sum of both, all parameters."""
    model = copy.deepcopy(model)
    logp, entropy = token_logprobs(model, ids, attention, temperature=temperature,
                                   with_entropy=True, chunk_size=chunk_size, positions=mask)
    weights = torch.linspace(-1.0, 2.0, mask.numel(), dtype=logp.dtype).view_as(mask)
    ((logp * weights * mask).sum() + 0.3 * (entropy * mask).sum()).backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return logp.detach(), entropy.detach(), grads


@settings(max_examples=8, deadline=None)
@given(st.lists(st.tuples(token_lists, token_lists), min_size=1, max_size=4),
       st.integers(1, 9), st.sampled_from([1.0, 0.7]))
def test_chunked_equals_unchunked_values_and_gradients(pairs, chunk_size, temperature):
    ids, attention, mask = _batch(pairs)
    plain = _forward_and_grads(MODEL64, ids, attention, mask, 0, temperature)
    chunked = _forward_and_grads(MODEL64, ids, attention, mask, chunk_size, temperature)
    m = mask.bool()
    # a float64 model keeps float64 log-probs on both paths
    assert chunked[0].dtype == plain[0].dtype == torch.float64
    torch.testing.assert_close(chunked[0][m], plain[0][m], atol=1e-9, rtol=1e-9)
    torch.testing.assert_close(chunked[1][m], plain[1][m], atol=1e-9, rtol=1e-9)
    assert (chunked[0][~m] == 0).all() and (plain[0][~m] == 0).all()
    assert chunked[2].keys() == plain[2].keys() and plain[2]
    for name, grad in plain[2].items():
        torch.testing.assert_close(chunked[2][name], grad, atol=1e-5, rtol=1e-4, msg=name)


def test_chunked_matches_a_hand_computed_softmax():
    ids, attention, mask = _batch([([5, 6], [7, 8, 1])])
    with torch.no_grad():
        logp, entropy = token_logprobs(MODEL64, ids, attention, with_entropy=True,
                                       chunk_size=2, positions=mask)
        logits = MODEL64(input_ids=ids).logits[0, :-1]  # (S-1, V)
    for t in (1, 2, 3):  # the response positions: predict 7, 8 and EOS
        probs = torch.softmax(logits[t], -1)
        assert logp[0, t].item() == pytest.approx(probs[ids[0, t + 1]].log().item(), abs=1e-5)
        assert entropy[0, t].item() == pytest.approx(-(probs * probs.log()).sum().item(),
                                                     abs=1e-5)
    assert logp[0, 0].item() == 0.0 and entropy[0, 0].item() == 0.0  # a prompt position


def test_head_never_sees_more_than_chunk_size_positions():
    model = copy.deepcopy(MODEL64).float()
    seen = []
    handle = model.get_output_embeddings().register_forward_hook(
        lambda module, inputs, output: seen.append(output.shape[:-1].numel()))
    ids, attention, mask = _batch([([5, 6, 7], [8] * 9 + [1])] * 3)  # 30 response positions
    try:
        logp = token_logprobs(model, ids, attention, chunk_size=4, positions=mask)
        logp.sum().backward()  # recomputation in backward also runs in chunks
    finally:
        handle.remove()
    assert seen and max(seen) <= 4
    assert sum(seen) == 2 * int(mask.sum())  # forward + recomputed backward, responses only
    assert model.get_output_embeddings().weight.grad is not None


def test_all_masked_micro_batch_still_backpropagates():
    model = copy.deepcopy(MODEL64)
    ids, attention, mask = _batch([([5], [6, 1])])
    logp = token_logprobs(model, ids, attention, chunk_size=4, positions=torch.zeros_like(mask))
    assert logp.shape == mask.shape and (logp == 0).all()
    logp.sum().backward()  # an all-truncated micro-batch: zero gradient, no error


def test_models_without_a_separable_head_use_full_logits():
    class Wrapped(torch.nn.Module):  # a causal LM without get_output_embeddings/base model
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, **kwargs):
            return self.inner(**kwargs)

    ids, attention, mask = _batch([([5, 6], [7, 1])])
    with torch.no_grad():
        a = token_logprobs(Wrapped(MODEL64), ids, attention, chunk_size=1, positions=mask)
        b = token_logprobs(MODEL64, ids, attention, chunk_size=1, positions=mask)
    torch.testing.assert_close(a, b.to(a.dtype), atol=1e-5, rtol=1e-5)
    soft = copy.deepcopy(MODEL64)
    soft.config.final_logit_softcapping = 30.0  # a head that is not a plain projection
    from verimath.trainer.core.logprobs import _split_head

    assert _split_head(soft) is None and _split_head(MODEL64) is not None


def test_chunk_size_is_validated_and_documented():
    from verimath.trainer.config import AlgoConfig
    from verimath.trainer.config.files import load_config

    with pytest.raises(ValueError, match="algo.logprob_chunk_size must be >= 0"):
        AlgoConfig(logprob_chunk_size=-1)
    assert load_config("tiny", ["algo.logprob_chunk_size=0"]).algo.logprob_chunk_size == 0
    # 150k vocabularies need it
    assert load_config("dapo", check_required=False).algo.logprob_chunk_size > 0
