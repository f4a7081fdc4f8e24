"""Benchmark: n-gram decontamination of 17,000 training problems against 600 eval problems.

Baseline (same run): the direct method, each training problem's n-gram set intersected with
each eval problem's n-gram set (17k x 600 set intersections), on a subset scaled up.
Reads real data (GSM8K, MATH-500, AIME 2024 and 2025 as raw JSON lines) from
$VERIMATH_DATA_DIR or ../shared/data; without it the benchmark says so and is skipped
(exit code 0), so that ``make bench`` runs the others.

    python benchmarks/bench_prep.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from verimath.datasets_prep import decontaminate, prepare
from verimath.datasets_prep.contamination import DEFAULT_N, ngrams, words
from verimath.envs import Problem

DATA = Path(os.environ.get("VERIMATH_DATA_DIR",
                           Path(__file__).resolve().parents[2] / "shared" / "data"))


def load_sets(n_train: int):
    train = prepare("gsm8k", DATA / "gsm8k" / "train.jsonl", verify=False).problems
    synthetic = [
        Problem(f"syn/{k}/{i}", f"Variant {k}. {p.prompt}", p.answer, "syn")
        for k in range(3)
        for i, p in enumerate(train)
    ][:n_train]
    evals = []
    for source, path in [("math", "math500/test.jsonl"), ("aime", "aime24/test.jsonl"),
                         ("aime", "aime25/test.jsonl")]:
        evals += prepare(source, DATA / path, verify=False).problems
    evals += prepare("gsm8k", DATA / "gsm8k" / "test.jsonl", verify=False).problems[:40]
    # 1 in 100 training problems is a planted copy of an eval problem.
    planted = [
        Problem(f"planted/{i}", "Consider this. " + evals[i % len(evals)].prompt, "1", "x")
        for i in range(n_train // 100)
    ]
    return synthetic + planted, evals


def pairwise_baseline(train, evals) -> int:
    """The same rule, computed directly: shared n-gram sets, and eval problems shorter than
    n words searched for whole (as contiguous word runs) in each training problem."""
    eval_words = [words(e.prompt) for e in evals]
    eval_sets = [set(ngrams(w, DEFAULT_N)) for w in eval_words]
    short = [tuple(w) for w in eval_words if 0 < len(w) < DEFAULT_N]
    dropped = 0
    for p in train:
        tokens = words(p.prompt)
        grams = set(ngrams(tokens, DEFAULT_N))
        if any(grams & s for s in eval_sets if s) or any(
            tuple(tokens[i : i + len(w)]) == w for w in short for i in range(len(tokens))
        ):
            dropped += 1
    return dropped


NEEDED = ("gsm8k/train.jsonl", "gsm8k/test.jsonl", "math500/test.jsonl", "aime24/test.jsonl",
          "aime25/test.jsonl")


def missing_data(data: Path) -> list[str]:
    """The files of `NEEDED` that are not under `data`."""
    return [name for name in NEEDED if not (data / name).is_file()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,700 training problems")
    args = parser.parse_args(argv)
    missing = missing_data(DATA)
    if missing:
        print(f"bench_prep: skipped: real data not found at {DATA} (missing "
              f"{', '.join(missing)}); set VERIMATH_DATA_DIR to a directory that holds them "
              "(docs/datasets.md says where to get each one)")
        return 0
    n_train = 1_700 if args.quick else 17_000
    train, evals = load_sets(n_train)
    t = time.perf_counter()
    kept, dropped = decontaminate(train, evals)
    ours = time.perf_counter() - t
    # The baseline runs on a tenth and is scaled, to keep the benchmark short.
    sub = train[::10]
    t = time.perf_counter()
    base_dropped = pairwise_baseline(sub, evals)
    base = (time.perf_counter() - t) * len(train) / len(sub)
    ours_sub = sum(1 for c in decontaminate(sub, evals)[1])
    print(f"decontaminate {len(train)} train x {len(evals)} eval: {ours:.3f} s, "
          f"dropped {len(dropped)} (planted {n_train // 100})")
    print(f"pairwise set-intersection baseline (scaled from {len(sub)}): {base:.2f} s")
    print(f"speed-up vs baseline: {base / ours:.1f}x; same drops on the subset: "
          f"{ours_sub == base_dropped} ({ours_sub} vs {base_dropped})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
