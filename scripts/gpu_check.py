"""GPU check: does the trainer learn, how fast, and in how much memory, on this machine.

    python scripts/gpu_check.py                 # on a GPU: a few minutes
    python scripts/gpu_check.py --quick         # tiny sizes (what the test suite runs on CPU)
    python scripts/gpu_check.py --parts update,generate --json out.json

Parts (``--parts``, all by default, run in this order within ``--budget-s`` seconds, 420 by
default: a part that finds the budget spent is named as skipped, a training run still going
when it runs out is stopped):

- ``update``: one bf16 update of a Qwen2.5-0.5B-shaped model built from its config with
  random weights (nothing downloaded): FSDP2 on one rank with
  ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`` over float32 parameters, the
  trainer's chunked log-probs and DAPO loss, AdamW. Reports the update's model FLOPs
  utilization, ``6 x parameters x tokens / seconds / peak`` against the GPU's dense bf16
  peak (:data:`verimath.trainer.estimate.budget.GPUS`), and its peak memory beside what
  :func:`~verimath.trainer.estimate.budget.estimate_run` predicts for the same sizes.
- ``generate``: tokens/s of HF ``generate`` and of vLLM on the same random model (every
  response runs to its full length); ``benchmarks/bench_rollout.py`` too when vLLM runs.
- ``async``: two short ``verimath train`` runs of the tiny preset with the HF engine, the same
  but for ``rollout.async_steps`` (0, then 1: generation in its own process during the
  update): seconds per step (the first step left out), the speed-up, and the ``async/*``
  metrics (time waited for rollouts and for weights, staleness, stale rounds dropped).
- ``tiny``: ``verimath train`` on the tiny preset with the HF engine, then with vLLM:
  held-out avg@k and greedy before and after RL, wall time.

vLLM rows say ``skipped: vllm not installed`` without vLLM (or with
``VERIMATH_GPU_CHECK_NO_VLLM=1``) and ``skipped: no GPU`` on a CPU. Without a GPU the script
runs the same code on tiny sizes and says which numbers need a GPU (MFU, peak memory, vLLM).
It prints one table at the end and writes it as JSON (``--json``, by default
``runs/gpu_check-<time>.json``; the path is printed).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_check_runs import check_async, check_tiny, has_vllm, vllm_missing  # noqa: E402
from gpu_check_table import (  # noqa: E402
    Budget,
    default_json_path,
    failed,
    format_table,
    skipped,
    write_json,
)

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("update", "generate", "async", "tiny")
SMALL_SHAPE = {"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
               "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
               "vocab_size": 512, "tie_word_embeddings": True}


def gpu_spec(torch):
    """``(device name, GPU spec or None)``: the peak table entry whose name the device's has."""
    from verimath.trainer.estimate.budget import GPUS

    if not torch.cuda.is_available():
        return "CPU", None
    name = torch.cuda.get_device_name()
    return name, next((spec for key, spec in GPUS.items() if key in name.upper()), None)


def _shape(quick: bool) -> dict:
    from verimath.trainer.estimate.budget import KNOWN_SHAPES

    return dict(SMALL_SHAPE if quick else KNOWN_SHAPES["Qwen2.5-0.5B"])


def build_model(torch, shape: dict, device, dtype):
    """A randomly initialised Qwen2 model of ``shape`` (a config.json dict)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(**{k: v for k, v in shape.items() if k != "model_type"})
    torch.manual_seed(0)
    return Qwen2ForCausalLM(config).to(device=device, dtype=dtype)


def _init_one_rank(torch, device):
    """A one-process group (NCCL on GPU, gloo on CPU) and its device mesh."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    if not dist.is_initialized():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(port))
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=0,
                                world_size=1)
    return init_device_mesh(device.type, (1,))


def sharded_logprob_module(torch, model, chunk: int, device):
    """The model behind FSDP2 on one rank: each decoder layer a unit, and a root module
    whose forward is the trainer's ``token_logprobs`` (so the embeddings and the head,
    called piecewise by the chunked path, are gathered by the root's hooks)."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from verimath.trainer.core.logprobs import token_logprobs

    class LogprobRoot(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, ids, attention, positions):
            return token_logprobs(self.inner, ids, attention, chunk_size=chunk,
                                  positions=positions)

    mesh = _init_one_rank(torch, device)
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh, mp_policy=policy)
    root = LogprobRoot(model)
    fully_shard(root, mesh=mesh, mp_policy=policy)
    return root


def _one_update(torch, root, optimizer, batches):
    """Forward, DAPO loss and backward on each micro-batch, then the optimizer step."""
    from verimath.trainer.algo.loss import dapo_policy_loss

    optimizer.zero_grad(set_to_none=True)
    total = sum(int(mask.sum()) for _, _, mask, _ in batches)
    for ids, attention, mask, adv in batches:
        logp = root(ids, attention, mask)  # (B, S-1)
        loss, _ = dapo_policy_loss(logp, logp.detach(), adv, mask, num_tokens=total)
        loss.backward()
    torch.nn.utils.clip_grad_norm_(root.parameters(), 1.0)
    optimizer.step()


def check_update(quick: bool) -> list[tuple[str, str, str]]:
    """One bf16 FSDP2 update: MFU and peak memory against the estimate."""
    import torch
    from verimath.trainer.estimate.budget import RunShape, estimate_run, model_shape

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name, spec = gpu_spec(torch)
    shape = _shape(quick)
    micro, length, chunk, micro_batches = (2, 32, 16, 2) if quick else (4, 2048, 1024, 2)
    model = build_model(torch, shape, device, torch.float32)
    params = sum(p.numel() for p in model.parameters())
    root = sharded_logprob_module(torch, model, chunk, device)
    optimizer = torch.optim.AdamW(root.parameters(), lr=1e-6)
    gen = torch.Generator(device="cpu").manual_seed(0)
    batches = [(torch.randint(0, shape["vocab_size"], (micro, length), generator=gen).to(device),
                torch.ones(micro, length, dtype=torch.long, device=device),
                torch.ones(micro, length - 1, device=device),
                torch.randn(micro, generator=gen).to(device)) for _ in range(micro_batches)]
    _one_update(torch, root, optimizer, batches)  # warm-up: allocator, kernels, AdamW state
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    _one_update(torch, root, optimizer, batches)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    measured = torch.cuda.max_memory_allocated() / 1024**3 if device.type == "cuda" else 0.0
    import torch.distributed as dist

    dist.destroy_process_group()  # vLLM below builds its own
    tokens = micro * length * micro_batches
    label = f"update, {'small' if quick else 'Qwen2.5-0.5B'} shape ({params / 1e6:.2f}M)"
    detail = (f"{micro_batches} x {micro} x {length:,} tokens, bf16 FSDP2 on 1 rank, chunk "
              f"{chunk}: {tokens / seconds:,.0f} tokens/s on {name}")
    mfu = ("n/a: no GPU" if spec is None and device.type == "cpu" else
           f"n/a: add {name} to estimate.GPUS" if spec is None else
           f"MFU {6 * params * tokens / seconds / (spec.bf16_tflops * 1e12):.1%}")
    rows = [(label, mfu, detail)]
    if device.type != "cuda":
        return rows + [("peak memory, update", "n/a: no GPU", "torch.cuda counts GPU memory")]
    run = RunShape(gpus=1, micro_batch_size=micro, prompt_tokens=0, max_new_tokens=length,
                   logprob_chunk_size=chunk, engine="hf", gen_prompts=1, group_size=2,
                   train_prompts=1)
    est = estimate_run(model_shape(shape, "check"), run, spec or _any_gpu())
    predicted = sum(v for k, v in est.update_gib.items() if "CUDA" not in k)
    return rows + [("peak memory, update", f"{measured:.2f} GiB",
                    f"estimate_run predicts {predicted:.2f} GiB for these sizes")]


def _any_gpu():
    from verimath.trainer.estimate.budget import GPUS

    return GPUS["H100"]


def check_generate(quick: bool, workdir: Path, budget: Budget) -> list[tuple[str, str, str]]:
    """Tokens/s of HF generate and vLLM on the same random model, full-length responses."""
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    shape = _shape(quick)
    prompts, new = (4, 8) if quick else (64, 256)
    model = build_model(torch, shape, device, dtype).eval()
    ids = torch.randint(0, shape["vocab_size"], (prompts, 16), device=device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    with torch.no_grad():
        model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                       min_new_tokens=new, do_sample=True, pad_token_id=0)
    hf_tps = prompts * new / (time.perf_counter() - start)
    peak = (f", peak {torch.cuda.max_memory_allocated() / 1024**3:.1f} GiB"
            if device.type == "cuda" else "")
    rows = [("generation, HF", f"{hf_tps:,.0f} tokens/s",
             f"{prompts} x {new} new tokens, {dtype} on {device.type}{peak}")]
    folder = workdir / "random-model"
    model.save_pretrained(folder)
    del model
    rows.append(_vllm_tokens_per_s(folder, shape, prompts * 4, new, device))
    rows.extend([] if quick else _bench_rollout(budget))
    return rows


def _vllm_tokens_per_s(folder: Path, shape: dict, prompts: int, new: int, device):
    if vllm_missing():
        return skipped("generation, vLLM", vllm_missing())
    import random

    import torch
    from vllm import LLM, SamplingParams

    torch.cuda.empty_cache()  # vLLM sizes its share from the free memory
    from vllm.inputs import TokensPrompt

    llm = LLM(model=str(folder), skip_tokenizer_init=True, gpu_memory_utilization=0.3, seed=0,
              dtype="bfloat16")
    rng = random.Random(0)
    batch = [TokensPrompt(prompt_token_ids=[rng.randrange(shape["vocab_size"]) for _ in range(16)])
             for _ in range(prompts)]
    params = SamplingParams(max_tokens=new, min_tokens=new, ignore_eos=True, detokenize=False)
    llm.generate(batch[:2], params)  # warm-up
    start = time.perf_counter()
    llm.generate(batch, params)
    tps = prompts * new / (time.perf_counter() - start)
    return ("generation, vLLM", f"{tps:,.0f} tokens/s", f"{prompts} x {new} new tokens, bf16")


def _bench_rollout(budget: Budget) -> list[tuple[str, str, str]]:
    """``benchmarks/bench_rollout.py`` (HF vs vLLM on the trainer's engines), when present
    and vLLM runs."""
    script, label = ROOT / "benchmarks" / "bench_rollout.py", "benchmarks/bench_rollout.py"
    if not script.is_file():
        return []
    if vllm_missing() or budget.spent(30):
        return [skipped(label, vllm_missing() or budget.reason())]
    try:
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              check=False, timeout=budget.left())
    except subprocess.TimeoutExpired:
        return [(label, "stopped", budget.reason())]
    print(done.stdout)
    tail = (done.stdout.strip().splitlines() or [""])[-1]
    result = "ran" if done.returncode == 0 else f"FAILED (exit {done.returncode})"
    return [("benchmarks/bench_rollout.py", result, tail[-120:])]


def parse_args(argv: list[str] | None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CPU, tests)")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated subset of {', '.join(PARTS)}")
    parser.add_argument("--json", default=None, metavar="FILE",
                        help="write the rows here (default runs/gpu_check-<time>.json)")
    parser.add_argument("--budget-s", type=float, default=420.0,
                        help="seconds for all parts; later parts are skipped once spent")
    parser.add_argument("--mode", default="here", help="how the Python was set up (recorded)")
    args = parser.parse_args(argv)
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(args.parts) - set(PARTS))
    if unknown:
        parser.error(f"--parts: unknown {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    if args.budget_s <= 0:
        parser.error(f"--budget-s must be > 0, got {args.budget_s}")
    return args


def run_parts(parts: list[str], quick: bool, budget: Budget) -> list[tuple[str, str, str]]:
    """The rows of ``parts``, in the order of :data:`PARTS`."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for part in (p for p in PARTS if p in parts):
            if part in ("update", "generate") and budget.spent(30):
                rows.append(skipped(part, budget.reason()))
            elif part == "update":
                rows += check_update(quick)
            elif part == "generate":
                rows += check_generate(quick, Path(tmp), budget)
            elif part == "async":
                rows += check_async(quick, Path(tmp), budget)
            else:
                for engine in ("hf", "vllm"):
                    rows += check_tiny(engine, quick, Path(tmp), budget)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    budget = Budget(args.budget_s)
    import torch

    quick = args.quick
    if not torch.cuda.is_available() and not quick:
        print("gpu_check: no CUDA GPU here; running the tiny sizes (--quick) and skipping "
              "MFU, peak memory and vLLM", file=sys.stderr)
        quick = True
    start = time.perf_counter()
    rows = [("device", gpu_spec(torch)[0], f"torch {torch.__version__}, vLLM "
             f"{'installed' if has_vllm() else 'not installed'}, Python "
             f"{sys.version.split()[0]}, setup: {args.mode}")]
    rows += run_parts(args.parts, quick, budget)
    seconds = time.perf_counter() - start
    print(format_table(rows))
    path = write_json(Path(args.json) if args.json else default_json_path(ROOT / "runs"), rows,
                      seconds=round(seconds, 1), quick=quick, mode=args.mode,
                      budget_s=args.budget_s)
    print(f"gpu_check: {seconds:.0f} s; the table as JSON: {path}")
    return 1 if failed(rows) else 0


if __name__ == "__main__":
    sys.exit(main())
