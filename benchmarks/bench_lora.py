"""Benchmark of LoRA against full fine-tuning: what one policy update costs.

The model has Qwen2.5-0.5B's shape (vocabulary 151,936, hidden 896, 14 heads, 2 key-value
heads, intermediate 4864, tied embeddings) with fewer layers (4; 2 with ``--quick``) so that
a CPU runs it in minutes; random weights built from a config, float32, nothing downloaded.
For each mode a fresh process builds the model (``full``: every weight trains; ``lora``:
rank-16 adapters on every linear layer, ``verimath.trainer.model.lora``), then times a few
updates of the trainer's own pieces on one batch: the chunked token log-probs
(``token_logprobs``, chunk 256), DAPO's clipped surrogate (``dapo_policy_loss``), the backward
pass and an AdamW step over the trainable parameters. It reports the trainable parameters, the
AdamW state, the process's peak resident memory (model, gradients, optimizer state and
activations), seconds per update and trained tokens per second, and the cost of producing the
weights a rollout engine receives (every parameter, or the merged ``W + (alpha / r) B A``).

Usage::

    python benchmarks/bench_lora.py              # 4 layers, 4 x 256 tokens (a few minutes)
    python benchmarks/bench_lora.py --quick      # 2 layers, 2 x 64 tokens (CI smoke)
    python benchmarks/bench_lora.py --json out.json --rank 8
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

SHAPE = dict(vocab_size=151_936, hidden_size=896, intermediate_size=4864,
             num_attention_heads=14, num_key_value_heads=2, tie_word_embeddings=True,
             max_position_embeddings=1024)


def measure(mode: str, *, layers: int, batch: int, length: int, rank: int, updates: int,
            threads: int) -> dict:
    """One mode, in this process: the row of the table."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from verimath.trainer.algo.loss import dapo_policy_loss
    from verimath.trainer.config import ModelConfig
    from verimath.trainer.core.distributed import full_parameters
    from verimath.trainer.core.logprobs import token_logprobs
    from verimath.trainer.model.lora import add_lora, merged_parameters, trainable_parameters

    torch.manual_seed(0)
    if threads:
        torch.set_num_threads(threads)
    model = Qwen2ForCausalLM(Qwen2Config(num_hidden_layers=layers, **SHAPE)).float()
    if mode == "lora":
        model = add_lora(model, ModelConfig(lora_rank=rank))
    params = trainable_parameters(model)
    optimizer = torch.optim.AdamW(params, lr=1e-5)
    ids = torch.randint(0, SHAPE["vocab_size"], (batch, length))  # (B, T)
    attention = torch.ones_like(ids)
    mask = torch.ones(batch, length - 1)  # (B, T-1): every position is a response token
    adv = torch.randn(batch)  # (B,)

    def update() -> None:
        logp = token_logprobs(model, ids, attention, chunk_size=256, positions=mask)
        loss, _ = dapo_policy_loss(logp, logp.detach(), adv, mask, eps_low=0.2, eps_high=0.28,
                                   num_tokens=float(mask.sum()))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    update()  # warm-up: allocates the optimizer state
    start = time.perf_counter()
    for _ in range(updates):
        update()
    seconds = (time.perf_counter() - start) / updates
    start = time.perf_counter()
    with torch.no_grad():
        pushed = sum(t.numel() * t.element_size() for _, t in
                     (merged_parameters if mode == "lora" else full_parameters)(model))
    push_s = time.perf_counter() - start
    state = sum(t.numel() * t.element_size() for s in optimizer.state.values()
                for t in s.values() if torch.is_tensor(t) and t.dim() > 0)
    return {
        "mode": mode if mode == "full" else f"lora r={rank}",
        "parameters": sum(p.numel() for p in model.parameters()),
        "trainable": sum(p.numel() for p in params),
        "adamw_state_mb": state / 2**20,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "seconds_per_update": seconds,
        "trained_tokens_per_s": batch * (length - 1) / seconds,
        "push_mb": pushed / 2**20,
        "push_s": push_s,
    }


def run_mode(mode: str, args: argparse.Namespace) -> dict:
    """``measure`` in a fresh process, so that its peak memory is its own."""
    command = [sys.executable, __file__, "--one", mode, "--layers", str(args.layers),
               "--batch", str(args.batch), "--length", str(args.length), "--rank",
               str(args.rank), "--updates", str(args.updates), "--threads", str(args.threads)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{mode} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rows: list[dict], args: argparse.Namespace) -> str:
    lines = [f"one update on {args.batch} x {args.length} tokens, Qwen2.5-0.5B shape with "
             f"{args.layers} layers (float32, CPU, {args.threads or 'default'} threads)",
             f"{'mode':<10}{'trainable':>12}{'AdamW MB':>10}{'peak RSS MB':>13}"
             f"{'s/update':>10}{'tok/s':>8}{'push MB':>9}{'push s':>8}"]
    for r in rows:
        lines.append(f"{r['mode']:<10}{r['trainable']:>12,}{r['adamw_state_mb']:>10.1f}"
                     f"{r['peak_rss_mb']:>13.0f}{r['seconds_per_update']:>10.2f}"
                     f"{r['trained_tokens_per_s']:>8.0f}{r['push_mb']:>9.0f}{r['push_s']:>8.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 layers, 2 x 64 tokens")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--updates", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--json", default=None, help="also write the rows here")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.layers, args.batch, args.length, args.updates = 2, 2, 64, 1
    if args.one:
        print(json.dumps(measure(args.one, layers=args.layers, batch=args.batch,
                                 length=args.length, rank=args.rank, updates=args.updates,
                                 threads=args.threads)))
        return 0
    rows = [run_mode(mode, args) for mode in ("full", "lora")]
    print(table(rows, args))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
