"""``--estimate`` with LoRA: the adapter count against peft, and the memory rows that shrink."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st
from verimath.trainer.estimate.budget import (
    GIB,
    GPUS,
    KNOWN_SHAPES,
    RunShape,
    estimate_run,
    lora_parameters,
    model_shape,
)

SEVEN_B = model_shape(KNOWN_SHAPES["Qwen2.5-Math-7B"], "Qwen2.5-Math-7B")
H100 = GPUS["H100"]


@pytest.mark.parametrize("targets", [("all-linear",), ("q_proj", "v_proj"), ("down_proj",)])
def test_adapter_count_matches_peft(targets):
    torch = pytest.importorskip("torch")
    pytest.importorskip("peft")
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from verimath.trainer.config import ModelConfig
    from verimath.trainer.model.lora import add_lora, trainable_parameters

    config = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 3,
              "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 50,
              "model_type": "qwen2"}
    with torch.device("meta"):
        model = Qwen2ForCausalLM(Qwen2Config(**{k: v for k, v in config.items()
                                                if k != "model_type"}))
    model = add_lora(model, ModelConfig(lora_rank=4, lora_target_modules=targets))
    assert lora_parameters(model_shape(config), 4, targets) == \
        sum(p.numel() for p in trainable_parameters(model))


def test_qwen_7b_rank_16_has_its_published_adapter_size():
    assert lora_parameters(SEVEN_B, 16) == 40_370_176


def test_lora_keeps_gradients_and_optimizer_state_of_the_adapters_only():
    run = RunShape(gpus=2, reference_model=True)
    full = estimate_run(SEVEN_B, run, H100)
    lora = estimate_run(SEVEN_B, dataclasses.replace(run, lora_rank=16), H100)
    adapters = lora_parameters(SEVEN_B, 16)
    assert lora.update_gib["gradients (fp32 shards)"] == pytest.approx(4 * adapters / 2 / GIB)
    assert lora.update_gib["optimizer (AdamW fp32 m, v)"] == pytest.approx(8 * adapters / 2 / GIB)
    assert "reference model (bf16 shards)" in full.update_gib
    assert "reference model (bf16 shards)" not in lora.update_gib  # the base, adapters off
    assert lora.update_s < full.update_s  # no weight gradients of the base


@given(rank=st.integers(1, 256), gpus=st.sampled_from([1, 2, 8]),
       ref=st.booleans(), checkpointing=st.booleans())
def test_lora_never_needs_more_memory_than_full_fine_tuning(rank, gpus, ref, checkpointing):
    run = RunShape(gpus=gpus, reference_model=ref, activation_checkpointing=checkpointing)
    full = estimate_run(SEVEN_B, run, H100)
    lora = estimate_run(SEVEN_B, dataclasses.replace(run, lora_rank=rank), H100)
    assert sum(lora.update_gib.values()) < sum(full.update_gib.values())
    assert lora.peak_gib <= full.peak_gib + 1e-9


def test_the_report_names_the_adapters(capsys):
    from verimath.trainer.cli import main

    assert main(["train", "--config", "dapo-qwen2.5-math-7b", "--estimate", "--nproc", "2",
                 "model.lora_rank=16"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "LoRA rank 16 on all-linear: 40.4M trainable parameters" in out
