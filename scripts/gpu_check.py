"""GPU check: does the trainer learn, how fast, and in how much memory, on this machine.

    python scripts/gpu_check.py                 # on a GPU: a few minutes
    python scripts/gpu_check.py --quick         # tiny sizes (what the test suite runs on CPU)
    python scripts/gpu_check.py --parts update,generate --json out.json

Parts (``--parts``, all by default):

- ``tiny``: ``verimath train`` on the tiny preset with the HF engine, then with vLLM (when
  installed): held-out avg@k and greedy before and after RL, wall time.
- ``update``: one bf16 update of a Qwen2.5-0.5B-shaped model built from its config with
  random weights (nothing downloaded): FSDP2 on one rank with
  ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`` over float32 parameters, the
  trainer's chunked log-probs and DAPO loss, AdamW. Reports the update's model FLOPs
  utilization, ``6 x parameters x tokens / seconds / peak`` against the GPU's dense bf16
  peak (:data:`verimath.trainer.estimate.budget.GPUS`), and its peak memory beside what
  :func:`~verimath.trainer.estimate.budget.estimate_run` predicts for the same sizes.
- ``generate``: tokens/s of HF ``generate`` and of vLLM on the same random model (every
  response runs to its full length); ``benchmarks/bench_rollout.py`` runs too when present.

Without a GPU the script runs the same code on tiny sizes and says which numbers need a GPU
(MFU, peak memory, vLLM). It prints one table at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("tiny", "update", "generate")
QUICK_TRAIN = ["optim.steps=2", "warmstart.steps=0", "eval.num_problems=4", "eval.k=1",
               "rollout.gen_prompts=4", "rollout.group_size=4", "algo.train_prompts=4",
               "algo.mini_batch_prompts=4", "algo.max_gen_rounds=1"]
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


def has_vllm() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def vllm_missing() -> str:
    """Why the vLLM rows are skipped here, or "" when they run (vLLM and a CUDA GPU)."""
    import torch

    if not torch.cuda.is_available():
        return "no GPU (the test suite covers vLLM's CPU backend)"
    return "" if has_vllm() else "vLLM is not installed (pip install 'verimath[vllm]')"


def check_tiny(engine: str, quick: bool, workdir: Path) -> list[tuple[str, str, str]]:
    """Train the tiny preset with one engine in a subprocess; read its summary.json."""
    label = f"tiny preset, {engine} engine"
    if engine == "vllm" and vllm_missing():
        return [(label, "skipped", vllm_missing())]
    run_dir = workdir / f"tiny-{engine}"
    argv = [sys.executable, "-m", "verimath.trainer.cli", "train", "--output-dir", str(run_dir),
            f"rollout.engine={engine}", "logging.progress=false", "logging.plot=false",
            *(QUICK_TRAIN if quick else [])]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    # exit 3: the run finished but no group was informative, which the quick sizes (a few
    # steps from an unwarmed model) allow; a full run must train
    if done.returncode != 0 and not (quick and done.returncode == 3):
        return [(label, "FAILED", f"exit {done.returncode}: {done.stderr.strip()[-300:]}")]
    s = json.loads((run_dir / "summary.json").read_text())
    before, after = s["heldout_acc_before_rl"], s["heldout_acc_after_rl"]
    verdict = "ran (too short to learn)" if quick else \
        "learns" if after > before else "does NOT learn"
    return [(label, f"{verdict}: {before:.1%} -> {after:.1%}",
             f"held-out avg@{s['eval_k']} on {s['heldout_problems']} problems; greedy "
             f"{s['heldout_greedy_acc_before_rl']:.1%} -> {s['heldout_greedy_acc_after_rl']:.1%}"
             f"; {s['rl_steps']} steps, {seconds:.0f} s{' (quick)' if quick else ''}"
             f"{'; no informative group' if done.returncode == 3 else ''}")]


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
    from verimath.trainer.algo.logprobs import token_logprobs

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


def check_generate(quick: bool, workdir: Path) -> list[tuple[str, str, str]]:
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
    rows.extend([] if quick else _bench_rollout())
    return rows


def _vllm_tokens_per_s(folder: Path, shape: dict, prompts: int, new: int, device):
    if vllm_missing():
        return ("generation, vLLM", "skipped", vllm_missing())
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


def _bench_rollout() -> list[tuple[str, str, str]]:
    """``benchmarks/bench_rollout.py`` (HF vs vLLM on the trainer's engines), when present."""
    script = ROOT / "benchmarks" / "bench_rollout.py"
    if not script.is_file():
        return []
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          check=False)
    print(done.stdout)
    tail = (done.stdout.strip().splitlines() or [""])[-1]
    result = "ran" if done.returncode == 0 else f"FAILED (exit {done.returncode})"
    return [("benchmarks/bench_rollout.py", result, tail[-120:])]


def format_table(rows: list[tuple[str, str, str]]) -> str:
    """The results as one plain-text table."""
    widths = [max(len(r[i]) for r in [("check", "result", "detail"), *rows]) for i in (0, 1)]
    lines = [f"{'check':<{widths[0]}}  {'result':<{widths[1]}}  detail"]
    lines += [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c}" for a, b, c in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CPU, tests)")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated subset of {', '.join(PARTS)}")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the rows here")
    args = parser.parse_args(argv)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"--parts: unknown {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    import torch

    quick = args.quick
    if not torch.cuda.is_available() and not quick:
        print("gpu_check: no CUDA GPU here; running the tiny sizes (--quick) and skipping "
              "MFU, peak memory and vLLM", file=sys.stderr)
        quick = True
    rows = [("device", gpu_spec(torch)[0], f"torch {torch.__version__}, vLLM "
             f"{'installed' if has_vllm() else 'not installed'}")]
    with tempfile.TemporaryDirectory() as tmp:
        if "tiny" in parts:
            for engine in ("hf", "vllm"):
                rows += check_tiny(engine, quick, Path(tmp))
        if "update" in parts:
            rows += check_update(quick)
        if "generate" in parts:
            rows += check_generate(quick, Path(tmp))
    print(format_table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if not any(r[1].startswith("FAILED") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
