"""The memory and time estimate: formulas by hand on a small case, parameter counts against
transformers, and monotonicity properties."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from verimath.trainer.estimate.budget import (
    GIB,
    GPUS,
    KNOWN_SHAPES,
    Assumptions,
    ModelShape,
    RunShape,
    activation_bytes_per_token,
    estimate_run,
    kv_bytes_per_token,
    min_gpus,
    model_shape,
)

SMALL = ModelShape(name="small", hidden=8, layers=2, heads=2, kv_heads=1, head_dim=4,
                   intermediate=16, vocab=10, tied=False)
H100 = GPUS["H100"]


def test_parameters_by_hand():
    # embeddings 10*8 + head 10*8; per layer q 8*8, k 8*4, v 8*4, o 8*8, qkv bias 8+4+4,
    # MLP 3*8*16, norms 2*8; final norm 8
    layer = 64 + 32 + 32 + 64 + 16 + 384 + 16
    assert SMALL.layer_parameters == layer == 608
    assert SMALL.parameters == 160 + 2 * 608 + 8 == 1384
    assert dataclasses.replace(SMALL, tied=True).parameters == 1384 - 80


@pytest.mark.parametrize("name", ["Qwen2.5-0.5B", "Qwen2.5-Math-7B"])
def test_parameters_match_transformers(name):
    torch = pytest.importorskip("torch")
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = {k: v for k, v in KNOWN_SHAPES[name].items() if k != "model_type"}
    with torch.device("meta"):  # shapes only, no memory
        model = Qwen2ForCausalLM(Qwen2Config(**config))
    assert model_shape(KNOWN_SHAPES[name], name).parameters == \
        sum(p.numel() for p in model.parameters())


def test_known_shapes_have_their_published_sizes():
    billions = {name: model_shape(c).parameters / 1e9 for name, c in KNOWN_SHAPES.items()}
    assert billions["Qwen2.5-Math-7B"] == pytest.approx(7.62, abs=0.01)
    assert billions["Qwen2.5-1.5B"] == pytest.approx(1.54, abs=0.01)
    assert billions["Qwen2.5-0.5B"] == pytest.approx(0.494, abs=0.001)
    assert billions["Qwen2.5-32B"] == pytest.approx(32.76, abs=0.01)


def test_memory_rows_by_hand():
    run = RunShape(gpus=2, gen_prompts=4, group_size=2, train_prompts=4, prompt_tokens=5,
                   max_new_tokens=7, micro_batch_size=3, logprob_chunk_size=4, engine="hf",
                   hf_batch_size=3)
    a = Assumptions()
    e = estimate_run(SMALL, run, H100, a)
    p = 1384
    u = e.update_gib
    assert u["parameters (fp32 shards)"] * GIB == pytest.approx(4 * p / 2)
    assert u["gradients (fp32 shards)"] * GIB == pytest.approx(4 * p / 2)
    assert u["optimizer (AdamW fp32 m, v)"] * GIB == pytest.approx(8 * p / 2)
    # root unit: embeddings + head + final norm at 6 bytes; layers: 2 x bf16 + 1 x fp32 grad
    assert u["gathered bf16 units + grads"] * GIB == pytest.approx(6 * 168 + 8 * 608)
    tokens = 3 * (5 + 7)
    per_layer = 20 * 8 + 4 * 1 * 4 + 8 * 16  # 20h + 4kd + 8f = 304
    assert activation_bytes_per_token(SMALL, False) == 2 * per_layer
    assert activation_bytes_per_token(SMALL, True) == 2 * 8 * 2 + per_layer
    assert u["activations (one micro-batch)"] * GIB == pytest.approx(2 * per_layer * tokens)
    assert u["log-prob head buffers"] * GIB == pytest.approx(4 * 10 * 4 * a.head_buffers)
    full = estimate_run(SMALL, dataclasses.replace(run, logprob_chunk_size=0), H100, a)
    assert full.update_gib["log-prob head buffers"] * GIB == \
        pytest.approx(tokens * 10 * 4 * a.full_logits_buffers)
    assert kv_bytes_per_token(SMALL) == 2 * 2 * 1 * 4 * 2
    assert kv_bytes_per_token(SMALL, tensor_parallel=2) == kv_bytes_per_token(SMALL)  # 1 head
    # HF engine: one generate call of 3 sequences at full length on each rank
    assert e.rollout_gib["HF KV cache (one generate call)"] * GIB == pytest.approx(3 * 12 * 32)
    assert e.peak_gib == max(sum(u.values()), sum(e.rollout_gib.values()))


def test_vllm_share_and_update_time_by_hand():
    shape = model_shape(KNOWN_SHAPES["Qwen2.5-1.5B"])
    run = RunShape(gpus=4, gen_prompts=8, group_size=4, train_prompts=8, max_gen_rounds=1,
                   prompt_tokens=1000, max_new_tokens=3000, vllm_memory_utilization=0.5)
    a = Assumptions()
    e = estimate_run(shape, run, H100, a)
    weights = 2 * shape.parameters / GIB
    kv = 0.5 * 80 - weights - a.vllm_overhead_gib
    assert e.rollout_gib["vLLM weights (bf16 / TP)"] == pytest.approx(weights)
    assert e.rollout_gib["vLLM KV cache"] == pytest.approx(kv)
    needed = 2 * 4 * 4000 * kv_bytes_per_token(shape) / GIB  # 2 prompts x 4 per engine
    assert e.kv_needed_gib == pytest.approx(needed)
    assert e.kv_share == pytest.approx(min(1, kv / needed))
    mean = a.mean_response_fraction * 3000
    assert e.generated_tokens == 8 * 4 * mean
    s = a.mean_prompt_tokens + mean
    flops = 32 * (8 * shape.parameters * s + 8 * 28 * 12 * 128 * s**2)  # 32 sequences
    assert e.update_s == pytest.approx(flops / (4 * 989e12 * a.mfu))


@pytest.mark.parametrize("checkpointing", [False, True])
def test_activation_formula_matches_what_transformers_keeps(checkpointing):
    """Bytes saved for the backward pass by two more layers of a bf16 Qwen2 (parameters
    excluded), against the formula."""
    torch = pytest.importorskip("torch")
    from transformers import Qwen2Config, Qwen2ForCausalLM

    def saved(layers: int, tokens: int = 64) -> int:
        config = Qwen2Config(vocab_size=100, hidden_size=64, intermediate_size=256,
                             num_hidden_layers=layers, num_attention_heads=4,
                             num_key_value_heads=2, attn_implementation="sdpa")
        model = Qwen2ForCausalLM(config).to(torch.bfloat16).train()
        if checkpointing:
            getattr(model, "activation_checkpointing_enable",
                    model.gradient_checkpointing_enable)()
        params = {p.untyped_storage().data_ptr() for p in model.parameters()}
        kept: dict[int, int] = {}

        def pack(t):
            if t.untyped_storage().data_ptr() not in params:
                kept[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model.model(input_ids=torch.randint(0, 100, (1, tokens)), use_cache=False)
        return sum(kept.values())

    def formula(layers: int) -> float:
        shape = ModelShape("m", 64, layers, 4, 2, 16, 256, 100, tied=True)
        return activation_bytes_per_token(shape, checkpointing)

    assert saved(4) - saved(2) == pytest.approx((formula(4) - formula(2)) * 64, rel=0.05)


def test_bad_inputs_name_the_setting():
    with pytest.raises(ValueError, match="vllm_tensor_parallel_size"):
        estimate_run(SMALL, RunShape(gpus=6, tensor_parallel=4), H100)
    with pytest.raises(ValueError, match="lacks hidden_size"):
        model_shape({"num_hidden_layers": 2}, "x")


def test_min_gpus_is_the_first_count_that_fits():
    shape = model_shape(KNOWN_SHAPES["Qwen2.5-32B"])
    run = RunShape(max_new_tokens=4096, activation_checkpointing=True, tensor_parallel=4,
                   vllm_memory_utilization=0.6, sleep_mode=True)
    n = min_gpus(shape, run, H100)
    assert n is not None and n > 4
    assert estimate_run(shape, dataclasses.replace(run, gpus=n), H100).fits
    assert not estimate_run(shape, dataclasses.replace(run, gpus=n // 2), H100).fits


shapes = st.builds(
    lambda h, layers, heads, kv, f, v: ModelShape("m", h * heads, layers, heads, kv,
                                                  h, f, v, tied=False),
    st.sampled_from([32, 64, 128]), st.integers(2, 48), st.sampled_from([4, 8, 16]),
    st.sampled_from([1, 2, 4]), st.integers(256, 30000), st.integers(1000, 160000))
runs = st.builds(RunShape, gpus=st.sampled_from([1, 2, 4, 8, 16]),
                 gen_prompts=st.integers(1, 512), group_size=st.integers(2, 16),
                 max_new_tokens=st.integers(16, 20000), micro_batch_size=st.integers(1, 8),
                 logprob_chunk_size=st.sampled_from([0, 256, 1024]),
                 engine=st.sampled_from(["hf", "vllm"]), sleep_mode=st.booleans(),
                 activation_checkpointing=st.booleans())


def _total(e, phase="update"):
    return sum((e.update_gib if phase == "update" else e.rollout_gib).values())


@given(shapes, runs, st.integers(1, 4096))
def test_memory_and_time_grow_with_length(shape, run, more):
    a = estimate_run(shape, run, H100)
    b = estimate_run(shape, dataclasses.replace(run, max_new_tokens=run.max_new_tokens + more),
                     H100)
    assert _total(b) > _total(a)
    assert b.kv_needed_gib > a.kv_needed_gib
    assert b.step_s > a.step_s


@given(shapes, runs)
def test_memory_grows_with_micro_batch_and_group(shape, run):
    a = estimate_run(shape, run, H100)
    bigger = dataclasses.replace(run, micro_batch_size=run.micro_batch_size + 1)
    assert _total(estimate_run(shape, bigger, H100)) > _total(a)
    more = dataclasses.replace(run, group_size=run.group_size * 2)
    assert estimate_run(shape, more, H100).kv_needed_gib > a.kv_needed_gib


@given(shapes, runs, st.sampled_from(["layers", "hidden", "intermediate"]))
def test_memory_grows_with_model_size(shape, run, dim):
    a = estimate_run(shape, run, H100)
    grown = dataclasses.replace(shape, **{dim: getattr(shape, dim) * 2})
    if dim == "hidden":
        grown = dataclasses.replace(grown, head_dim=grown.hidden // grown.heads)
    b = estimate_run(grown, run, H100)
    for key in ("parameters (fp32 shards)", "optimizer (AdamW fp32 m, v)",
                "activations (one micro-batch)"):
        assert b.update_gib[key] > a.update_gib[key]
    assert _total(b) > _total(a)


@given(shapes, runs)
def test_more_gpus_shrink_the_sharded_state(shape, run):
    a = estimate_run(shape, run, H100)
    b = estimate_run(shape, dataclasses.replace(run, gpus=run.gpus * 2), H100)
    for key in ("parameters (fp32 shards)", "gradients (fp32 shards)",
                "optimizer (AdamW fp32 m, v)"):
        assert b.update_gib[key] == pytest.approx(a.update_gib[key] / 2)
    assert b.update_s < a.update_s
    assert math.isclose(b.update_gib["activations (one micro-batch)"],
                        a.update_gib["activations (one micro-batch)"])


@given(shapes, runs)
def test_activation_checkpointing_lowers_activations(shape, run):
    off = estimate_run(shape, dataclasses.replace(run, activation_checkpointing=False), H100)
    on = estimate_run(shape, dataclasses.replace(run, activation_checkpointing=True), H100)
    key = "activations (one micro-batch)"
    assert on.update_gib[key] < off.update_gib[key]
    assert on.activations_gib == off.activations_gib  # both variants are always reported
    assert on.update_s > off.update_s  # the recomputed forward costs time
