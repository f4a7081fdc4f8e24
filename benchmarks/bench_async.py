"""Benchmark of asynchronous rollouts and of the off-policy corrections of stale groups (and of
the policy losses): named variants of the tiny preset, each run per seed from a warm start
shared by all variants of that seed, each run a fresh ``verimath train`` process.

Variants (``--variants``; ``--list`` prints them): ``sync``; ``async`` (``rollout.async_steps=1``
with its defaults) and ``async=2``; one-step-off with each treatment of the stale groups alone:
``async-sampler`` (the ratio taken against the policy that sampled the group, no weight: the
default before the corrections), ``async-recompute`` (against the policy at the start of the
step, no weight), ``async-decoupled`` (against the start of the step, untruncated weights
``pi_start / pi_sampler``: the decoupled objective), and ``async-<mode>`` for each rollout
correction mode at its default bound (``token-truncate``, ``token-mask``, ``sequence-truncate``,
``sequence-mask``), and ``async-update-truncate`` (token-truncate against the policy at the
start of each update: no extra forward pass); the policy losses synchronously (``gspo``,
``gspo-paper-eps`` at the GSPO paper's clip range, ``clip-cov``, ``kl-cov``, and the ``-2pct``
variants that act on 2% of the tokens instead of 0.02%).

Per run it records the steps and their total wall seconds (``train s``: the sum of
``time/step``), the mean wall seconds per RL step (the first step, which also waits for the
generator process to start, left out), the CPU seconds of the process and its children, the
generation, update and waiting seconds per step, the largest staleness trained on, held-out
avg@16 and greedy accuracy after RL, the mean policy entropy of the last 10 steps, and the
load average of the machine (at the start, and the mean and largest of samples every 5 s during
the run): timings are only comparable between runs measured at the same load, and ``--workers
2`` runs two at once (then the timings measure contention, not the variants; the accuracies do
not depend on it: the runs are deterministic). Below the table: each asynchronous variant's
speed-up over ``sync`` beside the two-core ideal ``(generate + update) / max(generate, update)``
of the synchronous run, and the paired accuracy difference per seed.

Usage::

    python benchmarks/bench_async.py --quick                 # 1 seed x 8 steps: a smoke run
    python benchmarks/bench_async.py --variants sync async --seeds 0 1 2 \\
        --warm-starts /tmp/ws --json benchmarks/results/async.json
    python benchmarks/bench_async.py --variants sync gspo clip-cov kl-cov --workers 2 \\
        --json benchmarks/results/losses.json
    python benchmarks/bench_async.py --variants sync async --async-step-factor 1.45
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = {"sync": 0, "async=1": 1, "async=2": 2}
CORRECTIONS = ("token-truncate", "token-mask", "sequence-truncate", "sequence-mask")
VARIANTS: dict[str, tuple[int, list[str]]] = {
    "sync": (0, []),
    "async": (1, []),
    "async=2": (2, []),
    "async-sampler": (1, ["algo.proximal_clip=false"]),
    "async-recompute": (1, ["algo.proximal_clip=true", "algo.rollout_correction=none"]),
    "async-decoupled": (1, ["algo.proximal_clip=true"]),
    **{f"async-{mode}": (1, ["algo.proximal_clip=true", f"algo.rollout_correction={mode}"])
       for mode in CORRECTIONS},
    "async-update-truncate": (1, ["algo.proximal_clip=true", "algo.proximal_policy=update",
                                  "algo.rollout_correction=token-truncate"]),
    "gspo": (0, ["algo.policy_loss=gspo"]),
    "gspo-paper-eps": (0, ["algo.policy_loss=gspo", "algo.eps_low=3e-4", "algo.eps_high=4e-4"]),
    "clip-cov": (0, ["algo.policy_loss=clip-cov"]),
    "kl-cov": (0, ["algo.policy_loss=kl-cov"]),
    "clip-cov-2pct": (0, ["algo.policy_loss=clip-cov", "algo.clip_cov_fraction=0.02"]),
    "kl-cov-2pct": (0, ["algo.policy_loss=kl-cov", "algo.kl_cov_fraction=0.02"]),
}
ENGINES = {"hf": [], "vllm": ["rollout.engine=vllm", "rollout.vllm_enforce_eager=true"]}
QUICK = ["warmstart.steps=400", "eval.num_problems=40"]
WARM_MODEL = "checkpoints/step_00000000/model"
ROW_FILE = "bench_row.json"


class LoadSampler:
    """Samples the 1-minute load average every ``every`` seconds while it runs."""

    def __init__(self, every: float = 5.0) -> None:
        self.every, self.samples = every, [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, float]:
        return {"load_start": self.samples[0], "load_mean": statistics.fmean(self.samples),
                "load_max": max(self.samples)}


def command_of(run_dir: Path, *, async_steps: int, seed: int, steps: int, extra: list[str],
               engine: str = "hf") -> list[str]:
    """The ``verimath train`` command of one run."""
    return [sys.executable, "-m", "verimath.trainer.worker", "--output-dir", str(run_dir),
            "--overwrite", *settings_of(async_steps=async_steps, seed=seed, steps=steps,
                                        extra=extra, engine=engine)]


def settings_of(*, async_steps: int, seed: int, steps: int, extra: list[str],
                engine: str = "hf") -> list[str]:
    return [f"optim.steps={steps}", f"optim.seed={seed}", f"data.seed={seed}",
            f"rollout.async_steps={async_steps}", "logging.progress=false",
            "logging.plot=false", "logging.save_every=0", "eval.every=0", "eval.k=16",
            *ENGINES[engine], *extra]


def run(run_dir: Path, *, async_steps: int, seed: int, steps: int, extra: list[str],
        engine: str = "hf", variant: str | None = None) -> dict:
    """One training run in its own process: the row of the table."""
    command = command_of(run_dir, async_steps=async_steps, seed=seed, steps=steps, extra=extra,
                         engine=engine)
    with LoadSampler() as load:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True)
        err = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 3):
        raise RuntimeError(f"{' '.join(command)} failed:\n{err[-3000:]}")
    said = [line for line in err.splitlines() if "cannot help here" in line]
    return {**row_of(run_dir, async_steps=async_steps, seed=seed, extra=extra, engine=engine,
                     variant=variant),
            "cpu_seconds": usage.ru_utime + usage.ru_stime, "said_cannot_help": said[:1],
            **load.summary()}


def row_of(run_dir: Path, *, async_steps: int, seed: int, extra: list[str], engine: str = "hf",
           variant: str | None = None) -> dict:
    """The row of a finished run, from its ``metrics.jsonl`` and ``summary.json`` (CPU seconds
    and load: None, measured by :func:`run` only)."""
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    timed = [r for r in records if "time/step" in r]
    rows = timed[1:]  # the first step waits for the start
    summary = json.loads((run_dir / "summary.json").read_text())

    def mean(key: str, of=rows) -> float:
        return statistics.fmean(r.get(key, 0.0) for r in of) if of else 0.0

    generate = mean("time/generate") + mean("time/score")
    return {"variant": variant or _mode_name(async_steps), "engine": engine,
            "async_steps": async_steps, "seed": seed, "steps": len(timed), "overrides": extra,
            "train_seconds": sum(r["time/step"] for r in timed),
            "step_seconds": mean("time/step"), "cpu_seconds": None,
            "generate_seconds": generate, "update_seconds": mean("time/update"),
            "waited_seconds": mean("async/wait_rollouts") if async_steps else generate,
            "staleness_max": max((r.get("async/staleness_max", 0.0) for r in rows), default=0),
            "generated_tokens": summary.get("generated_tokens"),
            "acc_before": summary.get("heldout_acc_before_rl"),
            "avg_at_k": summary["heldout_acc_after_rl"],
            "greedy": summary["heldout_greedy_acc_after_rl"],
            "entropy_last10": mean("policy/entropy", timed[-10:]),
            "is_bounded_frac": mean("rollout/is_bounded_frac", timed),
            "clip_frac_low": mean("clip/frac_low", timed),
            "clip_frac_high": mean("clip/frac_high", timed),
            "clip_frac_cov": mean("clip/frac_cov", timed),
            "said_cannot_help": [], "load_start": None, "load_mean": None, "load_max": None}


def finished_row(run_dir: Path, settings: list[str], steps: int, *, async_steps: int, seed: int,
                 engine: str = "hf", variant: str | None = None) -> dict | None:
    """The row of a finished run in ``run_dir`` with the same settings and steps, so that an
    interrupted benchmark run again with the same ``--runs`` trains only what is missing: the
    row written beside it (``bench_row.json``), or one read from the run's files when it
    finished without the benchmark (CPU seconds and load unknown); None otherwise."""
    try:
        row = json.loads((run_dir / ROW_FILE).read_text())
        return row if row.get("overrides") == settings and row.get("steps") == steps else None
    except (OSError, ValueError):
        pass
    try:
        from verimath.trainer.config.files import config_changes, load_config

        saved = load_config(str(run_dir / "config.yaml"), check_required=False)
        wanted = load_config("tiny", settings_of(async_steps=async_steps, seed=seed, steps=steps,
                                                 extra=settings, engine=engine),
                             check_required=False)
        if config_changes(saved, wanted) or not (run_dir / "summary.json").is_file():
            return None
        row = row_of(run_dir, async_steps=async_steps, seed=seed, extra=settings, engine=engine,
                     variant=variant)
    except (OSError, ValueError, KeyError):
        return None
    return row if row["steps"] == steps else None


def _mode_name(async_steps: int) -> str:
    return {v: k for k, v in MODES.items()}.get(async_steps, f"async={async_steps}")


def table(results: list[dict]) -> str:
    """The markdown table, one line per engine and variant (means over seeds; the vLLM rows are
    named ``vllm <variant>``), each asynchronous variant's speed-up over ``sync`` and the paired
    accuracy differences."""
    lines = ["| variant | steps | train s | s/step | CPU s (process) | generate s/step "
             "| update s/step | waited s/step | max staleness | held-out avg@k | greedy |",
             "|" + "---|" * 11]
    notes = []
    for engine in ENGINES:
        mine = [r for r in results if r.get("engine", "hf") == engine]
        by_variant: dict[str, dict] = {}
        for name in dict.fromkeys(r.get("variant") or _mode_name(r["async_steps"])
                                  for r in mine):
            rows = [r for r in mine if (r.get("variant") or _mode_name(r["async_steps"])) == name]
            m = {key: statistics.fmean(r[key] or 0.0 for r in rows) for key in _NUMERIC
                 if key in rows[0]}
            label = name if engine == "hf" else f"{engine} {name}"
            by_variant[label] = {**m, "rows": rows}
            lines.append(f"| {label} | {m['steps']:.0f} | {m['train_seconds']:.0f} | "
                         f"{m['step_seconds']:.2f} | {m['cpu_seconds']:.0f} | "
                         f"{m['generate_seconds']:.2f} | {m['update_seconds']:.2f} | "
                         f"{m['waited_seconds']:.2f} | {m['staleness_max']:.0f} | "
                         f"{100 * m['avg_at_k']:.1f}% | {100 * m['greedy']:.1f}% |")
        notes += _speedups(by_variant, "sync" if engine == "hf" else f"{engine} sync")
    return "\n".join(lines + notes)


_NUMERIC = ("steps", "train_seconds", "step_seconds", "cpu_seconds", "generate_seconds",
            "update_seconds", "waited_seconds", "staleness_max", "avg_at_k", "greedy")


def _speedups(by_variant: dict[str, dict], sync_label: str) -> list[str]:
    """Each other variant's speed-up over ``sync_label`` beside the two-core ideal, and its
    accuracy difference paired by seed."""
    sync = by_variant.get(sync_label)
    if not sync:
        return []
    gen, upd = sync["generate_seconds"], sync["update_seconds"]
    ideal = (gen + upd) / max(gen, upd, 1e-9)
    out = []
    for name, m in by_variant.items():
        if name == sync_label:
            continue
        paired = paired_differences(sync["rows"], m["rows"])
        diffs = ", ".join(f"{100 * d:+.1f}" for d in paired.values())
        out.append(f"\n{name}: {sync['step_seconds'] / m['step_seconds']:.2f}x the synchronous "
                   f"wall time per step; ideal on 2 cores {ideal:.2f}x. {m['steps']:.0f} steps "
                   f"in {m['train_seconds']:.0f} s of training ({sync['steps']:.0f} synchronous: "
                   f"{sync['train_seconds']:.0f} s): held-out avg@k {100 * m['avg_at_k']:.1f}% "
                   f"(synchronous {100 * sync['avg_at_k']:.1f}%), greedy {100 * m['greedy']:.1f}% "
                   f"({100 * sync['greedy']:.1f}%)"
                   + (f"; paired by seed {diffs} points" if len(paired) > 1 else ""))
    return out


def paired_differences(reference: list[dict], other: list[dict]) -> dict[int, float]:
    """``other - reference`` held-out avg@k per seed that both ran."""
    ref = {r["seed"]: r["avg_at_k"] for r in reference}
    return {r["seed"]: r["avg_at_k"] - ref[r["seed"]] for r in other if r["seed"] in ref}


def warm_start(folder: Path, seed: int, extra: list[str]) -> Path:
    """The warm-started model of ``seed`` in ``folder`` (made there by ``optim.steps=0`` when
    missing), shared by every variant of that seed."""
    model = folder / f"seed{seed}" / WARM_MODEL
    if not (model / "config.json").is_file():
        command = [sys.executable, "-m", "verimath.trainer.worker", "--output-dir",
                   str(folder / f"seed{seed}"), "--overwrite", "optim.steps=0",
                   f"optim.seed={seed}", f"data.seed={seed}", "logging.progress=false",
                   "logging.plot=false", *extra]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return model.resolve()


def environment() -> dict:
    """Machine, versions and commit, recorded beside the runs."""
    import numpy
    import torch
    import transformers

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return out.stdout.strip()

    return {"date": datetime.datetime.now().isoformat(timespec="seconds"),
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                        "usable_cpus": len(os.sched_getaffinity(0)),
                        "processor": platform.processor()},
            "versions": {"python": platform.python_version(), "torch": torch.__version__,
                         "transformers": transformers.__version__, "numpy": numpy.__version__},
            "commit": git("rev-parse", "HEAD"),
            "dirty_files": [line[3:] for line in git("status", "--porcelain").splitlines()
                            if line[3:].startswith(("trainer/", "benchmarks/bench_async"))],
            "nice": os.nice(0)}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, 8 steps, shorter warm start")
    parser.add_argument("--seeds", type=int, nargs="+", default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--variants", nargs="+", default=["sync", "async"],
                        choices=list(VARIANTS), metavar="NAME")
    parser.add_argument("--modes", nargs="+", default=None, choices=list(MODES),
                        help="the earlier names: sync, async=1, async=2")
    parser.add_argument("--list", action="store_true", help="print the variants and exit")
    parser.add_argument("--engines", nargs="+", default=["hf"], choices=list(ENGINES))
    parser.add_argument("--json", type=Path, default=None,
                        help="also write the runs, machine, versions and commit here")
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE",
                        help="config overrides for every run (e.g. optim.lr=5e-4)")
    parser.add_argument("--warm-starts", type=Path, default=None, metavar="DIR",
                        help="per-seed warm starts in DIR/seed<k> (made there when missing); "
                             "default: a temporary folder")
    parser.add_argument("--runs", type=Path, default=None, metavar="DIR",
                        help="keep the run directories in DIR/<engine>-<variant>-<seed> "
                             "(default: a temporary folder)")
    parser.add_argument("--workers", type=int, default=1,
                        help="runs at once (2: timings under contention, accuracies unchanged)")
    parser.add_argument("--async-step-factor", type=float, default=1.0, metavar="F",
                        help="asynchronous runs take round(F x --steps) steps (e.g. 1.45: about "
                             "the synchronous run's wall time, to compare at equal time)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for name, (k, overrides) in VARIANTS.items():
            print(f"{name}: rollout.async_steps={k} {' '.join(overrides)}".rstrip())
        return 0
    variants = [{"async=1": "async"}.get(m, m) for m in args.modes] if args.modes else \
        args.variants
    seeds = args.seeds or ([0] if args.quick else [0, 1, 2])
    steps = args.steps or (8 if args.quick else 100)
    extra = (QUICK if args.quick else []) + args.set
    with tempfile.TemporaryDirectory(prefix="bench_async_") as tmp:
        folder = args.warm_starts or Path(tmp) / "warm"
        models = {seed: warm_start(folder, seed, extra) for seed in seeds}
        jobs = [(seed, engine, name) for seed in seeds for engine in args.engines
                for name in variants]

        def one(job) -> dict:
            seed, engine, name = job
            k, overrides = VARIANTS[name]
            n = steps if k == 0 else round(args.async_step_factor * steps)
            run_dir = (args.runs or Path(tmp)) / f"{engine}-{name}-{seed}"
            settings = [*extra, *overrides, f"model.path={models[seed]}", "warmstart.steps=0"]
            kept = finished_row(run_dir, settings, n, async_steps=k, seed=seed, engine=engine,
                                variant=name)
            if kept is not None:  # --runs: a finished run of the same settings is reused
                return kept
            row = run(run_dir, async_steps=k, seed=seed, steps=n, extra=settings,
                      engine=engine, variant=name)
            row["concurrent"] = args.workers
            (run_dir / ROW_FILE).write_text(json.dumps(row, indent=2) + "\n")
            print(f"{engine} {name} seed {seed}: {row['step_seconds']:.2f} s/step, "
                  f"{row['cpu_seconds']:.0f} CPU s, avg@16 {100 * row['avg_at_k']:.1f}%, "
                  f"load {row['load_mean']:.2f}", flush=True)
            return row

        with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
            results = list(pool.map(one, jobs))
    print(table(results))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {**environment(), "command": ["python", "benchmarks/bench_async.py",
                                                *(argv if argv is not None else sys.argv[1:])],
                   "runs": results}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
