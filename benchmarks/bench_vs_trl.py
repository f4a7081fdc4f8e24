"""verimath's DAPO trainer against TRL's GRPOTrainer, side by side from one warm-started model.

One tiny model is warm-started once (the ``tiny`` preset's supervised phase, ``verimath train
optim.steps=0``). From it, each seed trains ``verimath`` (the ``tiny`` preset, DAPO with
dynamic sampling) and ``trl`` (``GRPOTrainer``, loss_type ``dapo``, eps 0.2 / 0.28, truncated
completions masked, the verimath TRL reward with the same overlong shaping and integer mode,
no dynamic sampling), with the same batch (32 prompts x 16), 4 updates per generation round,
LR 1e-3 with the same warm-up and cosine schedule, max length 16, temperature 1, one torch
thread each, the same procedural training problems and prompt text. The runs go one after
the other, interleaved (verimath seed 0, TRL seed 0, verimath seed 1, ...), each in its own
process (``vs_trl_runs.py``), so that both trainers see similar machine load.

Both train the same number of RL steps (one step = one generation round). Every ``--every`` steps
the model is scored on the same 200 held-out problems by the same
``verimath.trainer.evaluation.evaluate.evaluate`` call (avg@16 at temperature 1, and greedy, same
seed); evaluation time is excluded from the wall time. The table compares the trainers

- at the end of the run,
- at equal wall time: the shortest final wall time of the main runs, each curve interpolated
  linearly between its checkpoints,
- at equal CPU time (each run's own process, evaluation excluded): with one torch thread this
  is the wall time the run would take on an idle machine, so it is what to compare when other
  jobs share the CPUs (the 1-minute load average is recorded at every checkpoint),
- at equal generated tokens: the smallest final token count of the main runs, interpolated,

with mean +- sample standard deviation over seeds, and [min, max]. Reading a 100-step run at
another run's token count takes it mid-schedule (its learning rate not yet decayed); the
``verimath-budget`` row instead trains with ``optim.token_budget`` set to what TRL's run of
the same seed generated, so its cosine schedule ends at TRL's generation cost (it stops at
the first step that reaches it, so at most one step's tokens more).

    python benchmarks/bench_vs_trl.py                   # 3 seeds + 2 variants (hours)
    python benchmarks/bench_vs_trl.py --variants verimath trl verimath-curriculum
                                                        # with data.adapt_level's mix
    python benchmarks/bench_vs_trl.py --quick           # smoke run: 4 steps, 1 seed
    python benchmarks/bench_vs_trl.py --output vs_trl.md   # also write the table (.md, or .json)

Results of finished runs are kept in ``--workdir`` (``runs/bench_vs_trl``) and reused; pass
``--fresh`` to train again. Run it with ``nice`` when the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "vs_trl_runs.py"
MAIN = ("verimath", "trl")
"""The runs whose smallest final wall time, CPU time and token count are the common budgets."""
PER_SEED = (*MAIN, "verimath-budget")
"""Variants run at every seed (interleaved seed by seed); the others run once."""


@dataclass(frozen=True)
class Variant:
    """A row of the table: a trainer and the verimath config overrides it runs with."""

    label: str
    trainer: str
    overrides: tuple[str, ...] = ()
    budget_of: str = ""
    """When set: ``optim.token_budget`` is what that variant's run of the same seed generated
    (it runs first), so this run finishes its schedule at that generation cost."""


VARIANTS = {
    "verimath": Variant("verimath", "verimath"),
    "trl": Variant("trl", "trl"),
    "verimath-paper-ds": Variant("verimath-paper-ds", "verimath",
                                 ("algo.max_staleness=0", "algo.adaptive_rounds=false")),
    "verimath-no-ds": Variant("verimath-no-ds", "verimath", ("algo.dynamic_sampling=false",)),
    "verimath-budget": Variant("verimath-budget", "verimath", budget_of="trl"),
    "verimath-curriculum": Variant("verimath-curriculum", "verimath",
                                   ("data.adapt_level=true", "data.adapt_substeps=4",
                                    "data.adapt_levels=[2,3]")),
}
OPTIONAL = ("verimath-curriculum",)
"""Variants run only when ``--variants`` names them."""


# ---------------------------------------------------------------------------- pure helpers

def value_at(points: list[dict], key: str, x: float, field: str) -> float | None:
    """``field`` of a run's checkpoints at ``key`` = ``x`` (``key`` is ``wall_s`` or
    ``tokens``, increasing along ``points``), linear between the two checkpoints around
    ``x``; None when ``x`` lies beyond the run's last checkpoint."""
    xs = [p[key] for p in points]
    if not points or x > xs[-1] + 1e-9 or x < xs[0] - 1e-9:
        return None
    for (x0, p0), (x1, p1) in zip(zip(xs, points), zip(xs[1:], points[1:])):
        if x0 <= x <= x1:
            if x1 == x0:
                return p1[field]
            w = (x - x0) / (x1 - x0)
            return (1 - w) * p0[field] + w * p1[field]
    return points[-1][field]  # a single point, at x


def stats(values: list[float | None]) -> dict | None:
    """Mean, sample standard deviation (0 for one value), min, max and count; None when no
    value is known."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    n = len(known)
    mean = sum(known) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in known) / (n - 1)) if n > 1 else 0.0
    return {"mean": mean, "std": std, "min": min(known), "max": max(known), "n": n}


def budgets(runs: list[dict], labels=MAIN) -> dict:
    """The common budgets: the smallest final wall time, CPU time (when every run has it)
    and token count of the runs of ``labels`` (what every one of them reached); empty when
    none of them ran (``--variants`` naming only the other rows: the end column only)."""
    main = [r for r in runs if r["label"] in labels]
    if not main:
        return {}
    out = {"wall_s": min(r["wall_s"] for r in main), "tokens": min(r["tokens"] for r in main)}
    if all(r.get("cpu_s") is not None for r in main):
        out["cpu_s"] = min(r["cpu_s"] for r in main)
    return out


def summarize(runs: list[dict], budget: dict) -> list[dict]:
    """One row per label (in order of first appearance): accuracies at the end, at the
    equal-wall and equal-token budgets, tokens, tokens/s, wall time and time profile."""
    rows = []
    for label in dict.fromkeys(r["label"] for r in runs):
        mine = [r for r in runs if r["label"] == label]
        row = {"label": label, "seeds": [r["seed"] for r in mine]}
        for field in ("avg", "greedy"):
            row[f"start_{field}"] = stats([r["points"][0][field] for r in mine])
            row[f"final_{field}"] = stats([r["points"][-1][field] for r in mine])
            for key in budget:
                row[f"{key}_{field}"] = stats([value_at(r["points"], key, budget[key], field)
                                               if key in r["points"][-1] else None
                                               for r in mine])
        row["tokens"] = stats([r["tokens"] for r in mine])
        row["wall_s"] = stats([r["wall_s"] for r in mine])
        row["cpu_s"] = stats([r.get("cpu_s") for r in mine])
        row["tokens_per_s"] = stats([r["tokens"] / r["wall_s"] for r in mine])
        row["load"] = stats([r["load_mean"] for r in mine])
        row["profile"] = {k: stats([r["profile"].get(k) for r in mine])["mean"]
                          for k in mine[0]["profile"]}
        rows.append(row)
    return rows


def _pct(s: dict | None) -> str:
    if s is None:
        return "n/a"
    if s["n"] == 1:
        return f"{100 * s['mean']:.1f}"
    return (f"{100 * s['mean']:.1f} ± {100 * s['std']:.1f} "
            f"[{100 * s['min']:.1f}, {100 * s['max']:.1f}]")


def _num(s: dict | None, scale: float = 1.0, digits: int = 0) -> str:
    if s is None:
        return "n/a"
    text = f"{s['mean'] / scale:.{digits}f}"
    return text if s["n"] == 1 else f"{text} ± {s['std'] / scale:.{digits}f}"


def format_table(rows: list[dict], budget: dict) -> str:
    """The markdown tables: accuracies (percent) at the end and at each budget, and cost,
    one line per label."""
    names = {"wall_s": lambda v: f"{v:.0f} s wall", "cpu_s": lambda v: f"{v:.0f} s CPU",
             "tokens": lambda v: f"{v / 1e6:.3f}M tok"}
    columns = [("final", "end")] + [(key, name(budget[key])) for key, name in names.items()
                                    if key in budget]
    head = ["| trainer | seeds | " + " | ".join(
                f"avg@16 {name} | greedy {name}" for _, name in columns) + " |",
            "| --- | --- |" + " --- |" * (2 * len(columns))]
    lines = [f"| {r['label']} | {len(r['seeds'])} | " + " | ".join(
                f"{_pct(r[f'{key}_avg'])} | {_pct(r[f'{key}_greedy'])}" for key, _ in columns)
             + " |" for r in rows]
    cost = ["", "| trainer | generated tokens (M) | wall s (no eval) | CPU s | tokens/s "
            "| load (1 min) | generate s | score s | update s | other s |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        p = r["profile"]
        update = p.get("update", 0.0) + p.get("logp_and_advantages", 0.0)
        other = p.get("other", 0.0)
        cost.append(f"| {r['label']} | {_num(r['tokens'], 1e6, 3)} | {_num(r['wall_s'])} | "
                    f"{_num(r['cpu_s'])} | {_num(r['tokens_per_s'])} | "
                    f"{_num(r['load'], digits=1)} | "
                    f"{p.get('generate', 0):.0f} | {p.get('score', 0):.0f} | {update:.0f} | "
                    f"{other:.0f} |")
    start = rows[0]
    note = (f"\nStart (the warm-started model, every run): avg@16 "
            f"{_pct(start['start_avg'])}, greedy {_pct(start['start_greedy'])}. Accuracies in "
            "percent: mean ± sample std [min, max] over seeds.")
    return "\n".join(head + lines + cost) + "\n" + note


def schedule(seeds: list[int], variants: list[str], extra_seed: int = 0) -> list[tuple]:
    """``(label, seed)`` in run order: the per-seed variants interleaved seed by seed (a
    variant after the one whose tokens are its budget), then each other variant once at
    ``extra_seed``."""
    order = [(label, s) for s in seeds for label in PER_SEED if label in variants]
    order += [(label, extra_seed) for label in variants if label not in PER_SEED]
    return order


def with_budget(variant: Variant, seed: int, runs: list[dict]) -> Variant:
    """``variant`` with its token budget set from ``budget_of``'s run of ``seed`` in ``runs``
    (ValueError when that run is not there: name both variants)."""
    if not variant.budget_of:
        return variant
    source = [r for r in runs if r["label"] == variant.budget_of and r["seed"] == seed]
    if not source:
        raise ValueError(f"{variant.label} takes its token budget from {variant.budget_of}'s "
                         f"run of seed {seed}: add {variant.budget_of} to --variants")
    return Variant(variant.label, variant.trainer,
                   (*variant.overrides, f"optim.token_budget={source[0]['tokens']}"))


# ---------------------------------------------------------------------------- running

def run_one(variant: Variant, seed: int, *, model: Path, steps: int, every: int, k: int,
            results: Path, fresh: bool) -> dict:
    """One run in its own process (one torch thread), or its saved result."""
    out = results / f"{variant.label}-s{seed}.json"
    if out.is_file() and not fresh:
        print(f"{variant.label} seed {seed}: kept from {out}", flush=True)
    else:
        print(f"{variant.label} seed {seed} (load {os.getloadavg()[0]:.1f})", flush=True)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "TOKENIZERS_PARALLELISM": "false"}
        cmd = [sys.executable, str(RUNNER), variant.trainer, "--model", str(model),
               "--seed", str(seed), "--steps", str(steps), "--every", str(every), "--k", str(k),
               "--result", str(out), *variant.overrides]
        subprocess.run(cmd, check=True, env=env)
    run = json.loads(out.read_text())
    run["label"] = variant.label
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 steps, 1 seed, avg@4: a smoke run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=100, help="RL steps (generation rounds)")
    parser.add_argument("--every", type=int, default=10, help="held-out checkpoint interval")
    parser.add_argument("--k", type=int, default=16, help="samples per held-out problem")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS),
                        default=[v for v in VARIANTS if v not in OPTIONAL])
    parser.add_argument("--workdir", type=Path, default=Path("runs/bench_vs_trl"))
    parser.add_argument("--model", type=Path, help="a warm-started model directory to start from")
    parser.add_argument("--output", type=Path, help="write the table (.md) or everything (.json)")
    parser.add_argument("--fresh", action="store_true", help="train again even if results exist")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.steps, args.every, args.k = args.seeds[:1], 4, 2, 4
        args.variants = [v for v in args.variants if v in MAIN]
        args.workdir = args.workdir.with_name(args.workdir.name + "-quick")
    args.workdir.mkdir(parents=True, exist_ok=True)
    model = args.model
    if model is None:
        subprocess.run([sys.executable, str(RUNNER), "warmstart", "--out",
                        str(args.workdir / "warmstart")], check=True)
        model = args.workdir / "warmstart" / "model"
    results = args.workdir / f"results-{args.steps}x{args.every}-k{args.k}"
    results.mkdir(exist_ok=True)
    runs: list[dict] = []
    for label, seed in schedule(args.seeds, args.variants, args.seeds[0]):
        runs.append(run_one(with_budget(VARIANTS[label], seed, runs), seed,
                            model=model.resolve(), steps=args.steps, every=args.every,
                            k=args.k, results=results, fresh=args.fresh))
    budget = budgets(runs)
    rows = summarize(runs, budget)
    table = format_table(rows, budget).replace("avg@16", f"avg@{args.k}")
    print(table)
    if args.output:
        if args.output.suffix == ".json":
            args.output.write_text(json.dumps({"budget": budget, "rows": rows, "runs": runs,
                                               "table": table}, indent=1) + "\n")
        else:
            args.output.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
