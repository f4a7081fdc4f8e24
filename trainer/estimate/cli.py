"""``verimath train --estimate``: memory per GPU and time per step of a config, without weights.

    verimath train --config dapo-qwen2.5-32b --estimate
    verimath train --config dapo --estimate model.path=/models/Qwen2.5-Math-7B --nproc 8
    verimath train --config my.yaml --estimate --model-shape Qwen2.5-1.5B --gpu A100

The model's shape comes from ``--model-shape`` (a name of
:data:`~verimath.trainer.estimate.shapes.KNOWN_SHAPES`, a ``config.json`` or a model directory),
else ``model.path``'s ``config.json`` (a hub id's from huggingface_hub's cache, fetching that
file alone when online), else the preset's model (the ``dapo-qwen2.5-*``
presets), else the tiny model the config builds in code. The run's sizes are unpacked from
the config here; the arithmetic is :func:`~verimath.trainer.estimate.budget.estimate_run`.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path

from verimath.trainer.estimate.budget import (
    GPUS,
    KNOWN_SHAPES,
    Estimate,
    ModelShape,
    RunShape,
    estimate_run,
    lora_parameters,
    min_gpus,
    model_shape,
)
from verimath.trainer.model.hub import is_hub_id, resolve_model_dir

PRESET_MODELS = {"dapo-qwen2.5-32b": "Qwen2.5-32B", "dapo-qwen2.5-math-7b": "Qwen2.5-Math-7B",
                 "dapo-qwen2.5-1.5b": "Qwen2.5-1.5B"}
"""The model each recipe preset is written for."""
PRESET_GPUS = {"dapo-qwen2.5-32b": 128, "dapo-qwen2.5-math-7b": 8, "dapo-qwen2.5-1.5b": 1}
"""The GPU count each recipe preset is sized for (``--nproc`` default)."""
DEFAULT_GPUS = 8
DEFAULT_PROMPT_TOKENS = 512
"""Prompt budget when ``rollout.vllm_max_model_len`` does not imply one."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--estimate`` and its inputs, on the ``verimath train`` parser."""
    parser.add_argument("--estimate", action="store_true",
                        help="print memory per GPU and time per step of the resolved config "
                             "(from the model's shape: no weights loaded, no GPU needed) and exit")
    try:  # the launch option of data-parallel training means the same GPU count
        parser.add_argument("--nproc", type=int, default=None, metavar="N",
                            help=f"GPUs (data-parallel ranks); --estimate default: the preset's "
                                 f"own count, else {DEFAULT_GPUS}")
    except argparse.ArgumentError:
        pass
    parser.add_argument("--gpu", default="H100", choices=sorted(GPUS),
                        help="--estimate: the GPU's peak FLOP/s, bandwidth and memory (H100)")
    parser.add_argument("--gpu-memory-gib", type=float, default=None, metavar="G",
                        help="--estimate: memory per GPU in GiB (default: the --gpu's, 80 for "
                             "an H100)")
    parser.add_argument("--model-shape", default=None, metavar="NAME_OR_CONFIG",
                        help=f"--estimate: {', '.join(KNOWN_SHAPES)}, a config.json or a model "
                             "directory (default: model.path, else the preset's model)")


def resolve_shape(config, name: str, model_shape_arg: str | None) -> ModelShape:
    """The model's shape (see the module docstring); ValueError naming what to pass."""
    if model_shape_arg:
        return _named_or_file_shape(model_shape_arg)
    if config.model.path is not None:
        return _named_or_file_shape(config.model.path)
    if name in PRESET_MODELS:
        return model_shape(KNOWN_SHAPES[PRESET_MODELS[name]], PRESET_MODELS[name])
    from verimath.trainer.config.files import required_settings

    if "model.path" in required_settings(name):
        raise ValueError(f"--estimate needs the model's shape: pass model.path=DIR (its "
                         f"config.json is read) or --model-shape NAME ({', '.join(KNOWN_SHAPES)})")
    return tiny_shape(config.model)


def _named_or_file_shape(text: str) -> ModelShape:
    known = {k.lower(): k for k in KNOWN_SHAPES}
    if text.lower() in known:
        return model_shape(KNOWN_SHAPES[known[text.lower()]], known[text.lower()])
    path = Path(text)
    if not path.exists() and is_hub_id(text):  # Qwen/Qwen2.5-Math-7B: the cached config.json
        try:
            path = resolve_model_dir(text, field="--estimate model", config_only=True)
        except ValueError as exc:
            raise ValueError(f"--estimate: {text!r} is neither a known shape "
                             f"({', '.join(KNOWN_SHAPES)}) nor a local config.json or directory; "
                             f"as a hub id: {exc}") from None
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise ValueError(f"--estimate: {text!r} is neither a known shape "
                         f"({', '.join(KNOWN_SHAPES)}) nor a config.json, a directory holding "
                         "one or a hub id")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{file}: not a JSON config ({exc})") from None
    name = text if is_hub_id(text) and not Path(text).exists() else path.name
    return model_shape(data, name if path.is_dir() else path.parent.name or str(file))


def tiny_shape(model) -> ModelShape:
    """The shape of the tiny model ``verimath.trainer.model.tiny`` builds for ``model`` settings."""
    from verimath.trainer.model.tiny import CHARACTERS, SPECIAL_TOKENS

    h, heads = model.tiny_hidden_size, model.tiny_heads
    return ModelShape(name="tiny (built in code)", hidden=h, layers=model.tiny_layers,
                      heads=heads, kv_heads=2 if heads % 2 == 0 else heads, head_dim=h // heads,
                      intermediate=4 * h, vocab=len(SPECIAL_TOKENS) + len(CHARACTERS), tied=True)


def run_shape(config, gpus: int) -> RunShape:
    """The sizes of ``config`` that memory and time depend on."""
    r, algo = config.rollout, config.algo
    prompt = DEFAULT_PROMPT_TOKENS
    if r.vllm_max_model_len is not None and r.vllm_max_model_len > r.max_new_tokens:
        prompt = r.vllm_max_model_len - r.max_new_tokens
    return RunShape(
        gpus=gpus, gen_prompts=r.gen_prompts, group_size=r.group_size,
        train_prompts=algo.train_prompts, max_gen_rounds=algo.max_gen_rounds,
        dynamic_sampling=algo.dynamic_sampling, prompt_tokens=prompt,
        max_new_tokens=r.max_new_tokens, micro_batch_size=algo.micro_batch_size,
        logprob_chunk_size=algo.logprob_chunk_size, ppo_epochs=algo.ppo_epochs,
        activation_checkpointing=bool(getattr(algo, "activation_checkpointing", False)),
        reference_model=algo.kl_coef > 0, engine=r.engine, hf_batch_size=r.batch_size,
        vllm_memory_utilization=r.vllm_gpu_memory_utilization,
        tensor_parallel=r.vllm_tensor_parallel_size if r.engine == "vllm" else 1,
        sleep_mode=r.vllm_enable_sleep_mode, lora_rank=config.model.lora_rank,
        lora_targets=tuple(config.model.lora_target_modules))


def estimate_report(config, args: argparse.Namespace) -> str:
    """What ``verimath train --estimate`` prints for ``config``."""
    from dataclasses import replace

    name = args.config or "tiny"
    shape = resolve_shape(config, name, args.model_shape)
    gpus = args.nproc or PRESET_GPUS.get(name, DEFAULT_GPUS)
    gpu = GPUS[args.gpu]
    if args.gpu_memory_gib is not None:
        if args.gpu_memory_gib <= 0:
            raise ValueError(f"--gpu-memory-gib must be > 0, got {args.gpu_memory_gib}")
        gpu = replace(gpu, memory_gib=args.gpu_memory_gib)
    run = run_shape(config, gpus)
    estimate = estimate_run(shape, run, gpu)
    extra = []
    if not run.activation_checkpointing:
        ckpt = replace(run, activation_checkpointing=True)
        alt = estimate_run(shape, ckpt, gpu)
        fewest = min_gpus(shape, ckpt, gpu)
        extra.append(f"with activation checkpointing: peak {alt.peak_gib:.1f} GiB per GPU ("
                     f"{'fits' if alt.fits else 'does NOT fit'}), step ~{alt.step_s:,.0f} s; "
                     + (f"fits on >= {fewest} GPUs" if fewest else "fits on no GPU count"))
    report = format_estimate(estimate, title=f"verimath train --config {name}",
                             fewest=min_gpus(shape, run, gpu), extra=extra)
    warning = context_warning(shape, run)
    head = textwrap.fill(warning, 100, subsequent_indent="    ") + "\n" if warning else ""
    return head + report


def context_warning(shape: ModelShape, run: RunShape) -> str | None:
    """A warning when the prompt budget plus ``rollout.max_new_tokens`` exceeds the model's
    ``max_position_embeddings``."""
    from verimath.trainer.rollout.context_length import context_error

    message = context_error(prompt_tokens=run.prompt_tokens, max_new_tokens=run.max_new_tokens,
                            positions=shape.max_positions,
                            what=f"the prompt budget of the estimate ({shape.name})")
    return f"WARNING: {message}" if message else None


def _n(x: float) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.{2 if unit == 'B' else 1}f}{unit}"
    return f"{x:.0f}"


def format_estimate(e: Estimate, *, title: str, fewest: int | None = None,
                    extra: list[str] = ()) -> str:
    """The estimate as a plain-text table (memory per GPU in GiB, then one step)."""
    m, r, g, a = e.model, e.run, e.gpu, e.assumptions
    engine = (f"vLLM engines of TP {r.tensor_parallel} ({r.gpus // r.tensor_parallel}), sleep "
              f"mode {'on' if r.sleep_mode else 'off'}" if r.engine == "vllm" else "HF generate")
    lines = [
        f"{title}: estimate from the model's shape (no weights loaded)",
        f"model  {m.name}: {_n(m.parameters)} parameters ({m.layers} layers, hidden "
        f"{m.hidden}, {m.heads} heads, {m.kv_heads} KV heads x {m.head_dim}, vocab {m.vocab:,})",
        f"GPUs   {r.gpus} x {g.name} ({g.memory_gib:g} GiB, {g.bf16_tflops:g} TFLOP/s dense bf16, "
        f"{g.hbm_tbps:g} TB/s); FSDP2 over {r.gpus} rank{'s' * (r.gpus > 1)} (bf16 compute; "
        f"fp32 master weights, gradients and AdamW state); {engine}",
        *([f"LoRA   rank {r.lora_rank} on {', '.join(r.lora_targets)}: "
           f"{_n(lora_parameters(m, r.lora_rank, r.lora_targets))} trainable parameters "
           "(gradients and AdamW state for these alone; the KL reference is the base)"]
          if r.lora_rank else []),
        f"run    {r.gen_prompts} prompts x {r.group_size} per round, <= {r.prompt_tokens:,} + "
        f"{r.max_new_tokens:,} tokens; micro-batch {r.micro_batch_size}; activation "
        f"checkpointing {'on' if r.activation_checkpointing else 'off'}",
        "",
        f"{'memory per GPU (GiB)':<34}{'update':>9}{'rollout':>9}",
    ]
    for key in dict.fromkeys([*e.update_gib, *e.rollout_gib]):
        cells = [f"{d[key]:9.1f}" if key in d else f"{'-':>9}" for d in (e.update_gib,
                                                                          e.rollout_gib)]
        lines.append(f"  {key:<32}{''.join(cells)}")
    verdict = "fits" if e.fits else "does NOT fit"
    lines.append(f"  {'total':<32}{sum(e.update_gib.values()):9.1f}"
                 f"{sum(e.rollout_gib.values()):9.1f}   peak {e.peak_gib:.1f} of "
                 f"{g.memory_gib:g}: {verdict}")
    tokens = r.micro_batch_size * (r.prompt_tokens + r.max_new_tokens)
    acts = e.activations_gib
    lines += [
        f"activations of one micro-batch ({tokens:,} tokens): "
        f"{acts['without checkpointing']:.1f} GiB without checkpointing, "
        f"{acts['with checkpointing']:.1f} GiB with",
        f"KV cache: a round at full length needs {e.kv_needed_gib:.1f} GiB per GPU; the cache "
        f"holds {e.kv_share:.0%} of it; ~{e.concurrent_sequences} sequences decode at once per "
        "engine, the rest wait",
        *e.notes,
        f"fits on >= {fewest} GPUs of this kind" if fewest else
        "fits on no count of GPUs of this kind up to 1024 (activation checkpointing, shorter "
        "sequences or smaller micro-batches would)",
        *extra,
        "",
        "per step (estimate, not measured)",
        f"  generated tokens  {_n(e.generated_tokens):>8}",
        f"  trained tokens    {_n(e.trained_tokens):>8}  (response tokens)",
        f"  generate          {e.generate_s:8.0f} s  (~{e.decode_tokens_per_s:,.0f} tokens/s per "
        "GPU)",
        f"  update            {e.update_s:8.0f} s  ({a.mfu:.0%} MFU assumed)",
        f"  step              {e.step_s:8.0f} s  ({e.step_s / 60:.1f} min)",
        f"assumptions: mean response {a.mean_response_fraction:.0%} of max_new_tokens, mean "
        f"prompt {a.mean_prompt_tokens} tokens; {a.informative_fraction:.0%} of groups "
        f"informative; decoding at {a.bandwidth_efficiency:.0%} of memory bandwidth plus "
        f"{a.decode_step_overhead_s * 1e3:g} ms a step, <= {a.vllm_max_seqs} sequences per "
        f"engine; vLLM overhead {a.vllm_overhead_gib:g} GiB "
        f"({a.vllm_asleep_gib:g} asleep); prefill, scoring and weight pushes not counted.",
    ]
    return "\n".join(textwrap.fill(line, 100, subsequent_indent="    ") if line else line
                     for line in lines) + "\n"
