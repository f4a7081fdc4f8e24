"""Memory per GPU and time per step of a training run, from the model's shape alone.

:func:`estimate_run` is a pure function of numbers: a :class:`ModelShape` (from a Hugging
Face ``config.json`` dict, :func:`model_shape`), a :class:`RunShape` (the run's sizes), a
:class:`GPU` and stated :class:`Assumptions`. Nothing is loaded and torch is not imported;
``verimath train --config X --estimate`` prints the result (``estimate_cli``).

The layout it assumes is the trainer's data-parallel mode: FSDP2 over ``gpus`` ranks with
``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`` on float32 sharded
parameters, one FSDP unit per decoder layer plus the root (embeddings, head, final norm).
With ``P`` parameters, ``n`` GPUs, hidden size ``h``, ``L`` layers, ``k`` KV heads of size
``d``, MLP width ``f`` and vocabulary ``V``, per GPU:

- parameters ``4P/n`` (the float32 shards are the master weights), gradients ``4P/n``
  (float32 shards), optimizer ``8P/n`` (AdamW's two float32 moments): 16 bytes per
  parameter over ``n``;
- gathered units: the root held unsharded through forward and backward (2-byte bf16
  parameters and a 4-byte float32 gradient each), two decoder layers in bf16 (the one
  computing and the one prefetched) and one layer's float32 gradient before its
  reduce-scatter;
- activations of one micro-batch at full length (``micro_batch_size`` sequences of
  ``prompt_tokens + max_new_tokens``), bf16, attention by SDPA/flash (no ``S x S`` scores
  kept): ``A = 20h + 4kd + 8f`` bytes per token and layer, as transformers' Qwen2 keeps
  them (each RMSNorm its float32 input, its bf16 normalized value and the weighted output
  that the next projections read: ``8h`` twice; q and the attention output ``4h``; k and v
  ``4kd``; gate, SiLU(gate), up and their product ``8f``), times ``L``; with
  activation checkpointing ``2h`` bytes per token and layer (each layer's input) plus one
  layer's ``A`` recomputed in the backward pass;
- the log-prob head: ``logprob_chunk_size x V x 4`` bytes times a few float32 buffers
  (:attr:`Assumptions.head_buffers`: logits, softmax and gradients of one recomputed chunk);
  chunk 0 means full logits for every position of the micro-batch at once
  (:attr:`Assumptions.full_logits_buffers`);
- vLLM (``engine="vllm"``): ``vllm_memory_utilization x`` the GPU's memory reserved while
  it is awake: its bf16 weights ``2P/tp``, its own overhead, and the rest KV cache, which
  holds ``2 x L x ceil(k/tp) x d x 2`` bytes per token per GPU. With sleep mode the update
  runs beside a small residue only; without it, beside the whole reservation. The HF engine
  instead keeps a KV cache for one ``generate`` call at full length.

Peak per GPU is the larger of the update phase and the rollout phase. Times are estimates:
a decoding step is bound by memory bandwidth (weights plus the KV cache read) or by compute,
whichever is slower, plus a fixed overhead, and a round takes at least ``max_new_tokens``
sequential steps; the update takes ``(2 + 6 x epochs) x P`` FLOPs per token (``+2`` per
epoch with checkpointing, ``+2`` with a reference model) plus causal attention, at an
assumed MFU.
Prefill, scoring and weight pushes are not counted.

With LoRA (``model.lora_rank = r``) the ``P_a = r x sum(in + out)`` adapter parameters of the
adapted projections (:func:`lora_parameters`) train alone: gradients ``4 P_a / n`` and AdamW
state ``8 P_a / n``, the gathered units carry no base gradient, there is no reference copy
(the base with the adapters off), and the backward pass computes input gradients only
(``2 + 4 x epochs`` instead of ``2 + 6 x epochs`` FLOPs per parameter and token).

The inputs that are not the run's (:class:`ModelShape` and :func:`model_shape`, the known
Qwen2.5 shapes, the :class:`GPU` table and LoRA's parameter count) live in
:mod:`verimath.trainer.estimate.shapes` and are re-exported here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from verimath.trainer.estimate.shapes import (
    GPU,
    GPUS,
    KNOWN_SHAPES,
    LORA_PROJECTIONS,
    ModelShape,
    lora_parameters,
    model_shape,
)

__all__ = ["GIB", "GPU", "GPUS", "KNOWN_SHAPES", "LORA_PROJECTIONS", "Assumptions", "Estimate",
           "ModelShape", "RunShape", "activation_bytes_per_token", "estimate_run",
           "kv_bytes_per_token", "lora_parameters", "min_gpus", "model_shape"]

GIB = 1024**3


@dataclass(frozen=True)
class RunShape:
    """The sizes of a run that memory and time depend on (unpacked from a config)."""

    gpus: int = 8
    gen_prompts: int = 512
    group_size: int = 16
    train_prompts: int = 512
    max_gen_rounds: int = 1
    dynamic_sampling: bool = True
    prompt_tokens: int = 512
    """Longest prompt planned for (the config has no prompt cap; an assumption)."""
    max_new_tokens: int = 1024
    micro_batch_size: int = 1
    logprob_chunk_size: int = 1024
    ppo_epochs: int = 1
    activation_checkpointing: bool = False
    reference_model: bool = False
    engine: str = "vllm"
    hf_batch_size: int = 0
    """Sequences per HF ``generate`` call; 0: the rank's whole share of a round."""
    vllm_memory_utilization: float = 0.5
    tensor_parallel: int = 1
    sleep_mode: bool = False
    lora_rank: int = 0
    """LoRA adapters of this rank train instead of the model (0: full fine-tuning)."""
    lora_targets: tuple[str, ...] = ("all-linear",)


@dataclass(frozen=True)
class Assumptions:
    """What the estimate cannot know from the config; each is stated in the printout."""

    mean_response_fraction: float = 0.25
    """Mean response length as a fraction of ``max_new_tokens``."""
    mean_prompt_tokens: int = 256
    """Mean prompt length (DAPO-Math-17k in the ``dapo`` template: a few hundred tokens)."""
    informative_fraction: float = 0.5
    """Share of generated groups that dynamic sampling keeps."""
    mfu: float = 0.35
    """Model FLOPs utilization of the update (and of compute-bound decoding)."""
    bandwidth_efficiency: float = 0.6
    """Share of the memory bandwidth that decoding reaches."""
    vllm_max_seqs: int = 256
    """Sequences vLLM runs at once (its ``max_num_seqs`` default)."""
    decode_step_overhead_s: float = 0.003
    """Added to every decoding step: scheduling, sampling, kernel launches."""
    vllm_overhead_gib: float = 2.0
    """vLLM's profiled activations, sampler buffers and CUDA graphs."""
    vllm_asleep_gib: float = 1.0
    """What a sleeping vLLM engine keeps on the GPU."""
    context_gib: float = 1.0
    """CUDA context, NCCL buffers and allocator slack."""
    head_buffers: float = 2.0
    """``(chunk, V)`` float32 buffers alive in the chunked log-prob head (1.3 measured on a
    CPU for a 152k vocabulary)."""
    full_logits_buffers: float = 5.0
    """``(positions, V)`` float32 buffers alive with full logits (chunk 0; 5 measured)."""


@dataclass(frozen=True)
class Estimate:
    """Per-GPU memory (GiB) of both phases, KV-cache fit, tokens and times of one step."""

    model: ModelShape
    run: RunShape
    gpu: GPU
    assumptions: Assumptions
    update_gib: dict[str, float]
    rollout_gib: dict[str, float]
    activations_gib: dict[str, float]
    """``{"without checkpointing": x, "with checkpointing": y}``, one micro-batch."""
    kv_needed_gib: float
    """KV cache per GPU for the rank's whole round at full length."""
    kv_share: float
    """Fraction of that which the KV cache holds (vLLM queues the rest)."""
    concurrent_sequences: int
    """Sequences decoded at once per engine (at the mean context)."""
    generated_tokens: float
    trained_tokens: float
    decode_tokens_per_s: float
    """Per GPU."""
    generate_s: float
    update_s: float
    notes: tuple[str, ...] = field(default=())

    @property
    def peak_gib(self) -> float:
        return max(sum(self.update_gib.values()), sum(self.rollout_gib.values()))

    @property
    def fits(self) -> bool:
        return self.peak_gib <= self.gpu.memory_gib and not any("no room" in n for n in self.notes)

    @property
    def step_s(self) -> float:
        return self.generate_s + self.update_s


def activation_bytes_per_token(shape: ModelShape, checkpointing: bool) -> float:
    """Activation bytes kept per token for the backward pass, all layers (bf16)."""
    h, f = shape.hidden, shape.intermediate
    per_layer = 20 * h + 4 * shape.kv_heads * shape.head_dim + 8 * f
    if checkpointing:
        return 2 * h * shape.layers + per_layer
    return per_layer * shape.layers


def kv_bytes_per_token(shape: ModelShape, tensor_parallel: int = 1) -> float:
    """bf16 K and V of one token on one GPU of a ``tensor_parallel`` engine."""
    return 2 * shape.layers * math.ceil(shape.kv_heads / tensor_parallel) * shape.head_dim * 2


def _update_memory(shape: ModelShape, run: RunShape, a: Assumptions) -> tuple[dict, dict]:
    p, n = shape.parameters, run.gpus
    tokens = run.micro_batch_size * (run.prompt_tokens + run.max_new_tokens)
    acts = {label: activation_bytes_per_token(shape, ckpt) * tokens / GIB
            for label, ckpt in (("without checkpointing", False), ("with checkpointing", True))}
    head_rows = run.logprob_chunk_size or tokens
    lora = lora_parameters(shape, run.lora_rank, run.lora_targets) if run.lora_rank else 0
    trained = lora or p  # LoRA: gradients and AdamW state of the adapters alone
    grad_bytes = 0 if lora else 4  # the frozen base's gathered units get no gradient
    rows = {
        "parameters (fp32 shards)": 4 * (p + lora) / n / GIB,
        "gradients (fp32 shards)": 4 * trained / n / GIB,
        "optimizer (AdamW fp32 m, v)": 8 * trained / n / GIB,
        "gathered bf16 units + grads": ((2 + grad_bytes) * (shape.embedding_parameters
                                                            + shape.hidden)
                                        + (4 + grad_bytes) * shape.layer_parameters
                                        + 6 * lora / max(shape.layers, 1)) / GIB,
        "activations (one micro-batch)": acts["with checkpointing" if run.activation_checkpointing
                                              else "without checkpointing"],
        "log-prob head buffers": min(head_rows, tokens) * shape.vocab * 4 / GIB
        * (a.head_buffers if run.logprob_chunk_size else a.full_logits_buffers),
    }
    if run.reference_model and not lora:  # LoRA's reference: the base, adapters off
        rows["reference model (bf16 shards)"] = 2 * p / n / GIB
    return rows, acts


def _rollout_memory(shape: ModelShape, run: RunShape, gpu: GPU, a: Assumptions):
    """``(rows, kv_needed_gib, kv_cache_gib, notes)`` of the generation phase."""
    engines = max(1, run.gpus // run.tensor_parallel) if run.engine == "vllm" else run.gpus
    seqs = math.ceil(run.gen_prompts / engines) * run.group_size  # per engine, one round
    full = run.prompt_tokens + run.max_new_tokens
    if run.engine != "vllm":
        batch = min(seqs, run.hf_batch_size or seqs)
        kv = batch * full * kv_bytes_per_token(shape) / GIB
        return {"HF KV cache (one generate call)": kv}, kv, kv, ()
    kv_needed = seqs * full * kv_bytes_per_token(shape, run.tensor_parallel) / GIB
    reserved = run.vllm_memory_utilization * gpu.memory_gib
    weights = 2 * shape.parameters / run.tensor_parallel / GIB
    kv_cache = reserved - weights - a.vllm_overhead_gib
    notes = ()
    if kv_cache * GIB < full * kv_bytes_per_token(shape, run.tensor_parallel):
        notes = (f"no room for one full-length sequence in vLLM's share ({reserved:.1f} GiB): "
                 "raise rollout.vllm_gpu_memory_utilization or rollout.vllm_tensor_parallel_size",)
    rows = {"vLLM weights (bf16 / TP)": weights, "vLLM KV cache": max(kv_cache, 0.0),
            "vLLM overhead": a.vllm_overhead_gib}
    return rows, kv_needed, max(kv_cache, 0.0), notes


def _decode(shape: ModelShape, run: RunShape, gpu: GPU, a: Assumptions, kv_cache_gib: float,
            tokens_per_round: float) -> tuple[float, int, float]:
    """``(seconds per round, sequences at once, tokens/s per GPU)``: bandwidth or compute
    bound, and never fewer than ``max_new_tokens`` sequential steps."""
    tp = run.tensor_parallel if run.engine == "vllm" else 1
    engines = max(1, run.gpus // tp)
    seqs = math.ceil(run.gen_prompts / engines) * run.group_size
    mean_response = a.mean_response_fraction * run.max_new_tokens
    context = a.mean_prompt_tokens + mean_response / 2  # average over a response's life
    kv_token = kv_bytes_per_token(shape, tp)
    fit = int(kv_cache_gib * GIB // (context * kv_token)) if run.engine == "vllm" else seqs
    cap = a.vllm_max_seqs if run.engine == "vllm" else (run.hf_batch_size or seqs)
    at_once = max(1, min(seqs, cap, fit))
    weights = 2 * shape.parameters / tp
    bandwidth = gpu.hbm_tbps * 1e12 * a.bandwidth_efficiency
    step_s = max((weights + at_once * context * kv_token) / bandwidth,
                 2 * shape.parameters / tp * at_once / (gpu.bf16_tflops * 1e12 * a.mfu)) \
        + a.decode_step_overhead_s
    engine_tps = at_once / step_s
    round_s = max(tokens_per_round / engines / engine_tps,
                  run.max_new_tokens * (weights / bandwidth + a.decode_step_overhead_s))
    return round_s, at_once, engine_tps / tp


def _update_seconds(shape: ModelShape, run: RunShape, gpu: GPU, a: Assumptions,
                    sequence_tokens: float, sequences: int) -> float:
    """FLOPs of the old log-probs, the optional reference and the update epochs, over the
    cluster's dense bf16 peak at the assumed MFU."""
    backward = 2 if run.lora_rank else 4  # LoRA: input gradients only, no weight gradients
    passes = 2 * (1 + run.reference_model) \
        + run.ppo_epochs * (2 + backward + 2 * run.activation_checkpointing)
    dense = passes * shape.parameters * sequence_tokens * sequences
    attention = passes * shape.layers * shape.heads * shape.head_dim * sequence_tokens**2 \
        * sequences
    return (dense + attention) / (run.gpus * gpu.bf16_tflops * 1e12 * a.mfu)


def estimate_run(shape: ModelShape, run: RunShape, gpu: GPU,
                 assumptions: Assumptions = Assumptions()) -> Estimate:
    """Memory per GPU, KV-cache fit, tokens and time of one step (see the module docstring)."""
    if run.gpus < 1 or run.tensor_parallel < 1 or run.gpus % run.tensor_parallel:
        raise ValueError(f"--nproc ({run.gpus}) must be a positive multiple of "
                         f"rollout.vllm_tensor_parallel_size ({run.tensor_parallel})")
    a = assumptions
    update, acts = _update_memory(shape, run, a)
    rollout, kv_needed, kv_cache, notes = _rollout_memory(shape, run, gpu, a)
    resident = {k: update[k] for k in list(update)[:3]}
    resident.update({k: v for k, v in update.items() if k.startswith("reference")})
    resident["CUDA context and slack"] = a.context_gib
    if run.engine == "vllm":
        awake = sum(rollout.values())
        update["vLLM while updating"] = a.vllm_asleep_gib if run.sleep_mode else awake
    else:
        rollout["gathered bf16 units + grads"] = update["gathered bf16 units + grads"]
    update["CUDA context and slack"] = a.context_gib
    rollout = {**resident, **rollout}
    rounds = 1 if not run.dynamic_sampling else min(run.max_gen_rounds, math.ceil(
        run.train_prompts / (run.gen_prompts * a.informative_fraction)))
    mean_response = a.mean_response_fraction * run.max_new_tokens
    per_round = run.gen_prompts * run.group_size * mean_response
    round_s, at_once, tps = _decode(shape, run, gpu, a, kv_cache, per_round)
    sequences = run.train_prompts * run.group_size
    update_s = _update_seconds(shape, run, gpu, a, a.mean_prompt_tokens + mean_response,
                               sequences)
    return Estimate(
        model=shape, run=run, gpu=gpu, assumptions=a, update_gib=update, rollout_gib=rollout,
        activations_gib=acts, kv_needed_gib=kv_needed,
        kv_share=min(1.0, kv_cache / kv_needed) if kv_needed else 1.0,
        concurrent_sequences=at_once, generated_tokens=rounds * per_round,
        trained_tokens=sequences * mean_response, decode_tokens_per_s=tps,
        generate_s=rounds * round_s, update_s=update_s, notes=notes)


def min_gpus(shape: ModelShape, run: RunShape, gpu: GPU, assumptions: Assumptions = Assumptions(),
             *, limit: int = 1024) -> int | None:
    """The fewest GPUs (a power of two, a multiple of the tensor-parallel size) on which the
    run fits, or None up to ``limit``."""
    n = run.tensor_parallel
    while n <= limit:
        if estimate_run(shape, replace(run, gpus=n), gpu, assumptions).fits:
            return n
        n *= 2
    return None
