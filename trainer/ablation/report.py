"""The ablation report: per variant, over seeds, a markdown table and a PNG chart.

For every finished run it reads ``summary.json`` and ``metrics.jsonl``; per variant it gives
the mean and 95% Student-t interval over seeds (:mod:`verimath.trainer.ablation.stats`) of

- held-out avg@k at equal RL steps: the final evaluation (``summary.json``);
- the gain over the warm start (after minus before RL, per seed), and the change against the
  family's reference (GRPO, or DAPO for DAPO minus one control) paired by seed: every
  variant of a seed starts from that seed's warm start, so pairing removes its spread;
- held-out avg@k at equal generated tokens: each run's held-out curve (evaluations every
  ``eval.every`` steps, against cumulative generated tokens, discarded groups included)
  read at the common budget, the smallest final token count among all runs;
- held-out greedy accuracy at the final evaluation, the final ``policy/entropy``;
- compute: generated and trained tokens, wall seconds (which depend on the machine's load).
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

from verimath.trainer.ablation.stats import common_budget, interpolate_curve, t_interval
from verimath.trainer.run.plot_cli import run_series


@dataclass
class RunResult:
    """What the report needs from one finished run."""

    seed: int
    acc: float
    greedy: float
    acc_before: float
    entropy: float
    generated_tokens: float
    trained_tokens: float
    wall_seconds: float
    steps: int
    curve: tuple[list[float], list[float]]
    """``(cumulative generated tokens, held-out avg@k)`` at every evaluation."""


def read_run(run_dir: Path, seed: int) -> RunResult:
    """A finished run's result; ValueError naming the directory when it is incomplete."""
    from verimath.trainer.run.metrics import read_metrics

    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a torn last line
            records = read_metrics(run_dir / "metrics.jsonl")
    except (OSError, ValueError) as exc:
        raise ValueError(f"{run_dir}: cannot read the run ({exc})") from None
    key = f"eval/avg@{summary['eval_k']}"
    if summary.get("heldout_acc_after_rl") is None:
        raise ValueError(f"{run_dir}: no held-out evaluation (eval.num_problems=0?); the "
                         "ablation compares held-out accuracy")
    entropy = [r["policy/entropy"] for r in records if "policy/entropy" in r]
    return RunResult(
        seed=seed, acc=summary["heldout_acc_after_rl"],
        greedy=summary["heldout_greedy_acc_after_rl"],
        acc_before=summary["heldout_acc_before_rl"],
        entropy=float(entropy[-1]) if entropy else math.nan,
        generated_tokens=float(summary["generated_tokens"]),
        trained_tokens=float(summary["trained_tokens"]),
        wall_seconds=float(summary["wall_seconds"]), steps=int(summary["rl_steps"]),
        curve=curve_points(records, key))


def curve_points(records: list[dict], key: str) -> tuple[list[float], list[float]]:
    """``(cumulative generated tokens, value)`` at every step that logs ``key`` (step 0, the
    held-out start, at 0 tokens), as ``verimath plot --x generated_tokens`` draws it."""
    points = run_series(records).get(key, [])
    return [p[1] for p in points], [p[2] for p in points]


@dataclass
class VariantRow:
    """One table row: statistics over the seeds of a variant."""

    name: str
    label: str
    families: tuple[str, ...]
    seeds: list[int]
    acc: tuple[float, float, float]
    acc_at_budget: tuple[float, float, float]
    greedy: tuple[float, float, float]
    entropy: tuple[float, float, float]
    generated_tokens: float
    trained_tokens: float
    wall_seconds: float
    values: dict[str, list[float]]
    """Per-seed values (``acc``, ``acc_at_budget``, ``entropy``, ``generated_tokens``) for the
    chart's dots."""
    gain: tuple[float, float, float] = (math.nan,) * 3
    """Held-out avg@k after RL minus before, per seed (the warm start's spread cancels)."""
    versus: str = ""
    """The label of the reference this row is compared with, seed by seed ("" for none)."""
    change: tuple[float, float, float] = (math.nan,) * 3
    """avg@k at the final step minus the reference's, paired by seed (same warm start)."""


def summarize(results: dict, variants: list) -> tuple[list[VariantRow], float]:
    """``(rows, budget)`` from ``{variant name: [RunResult, ...]}``; variants without a
    finished run are left out."""
    finished = [r for rs in results.values() for r in rs]
    if not finished:
        raise ValueError("no finished run to report")
    budget = common_budget(r.curve[0][-1] for r in finished)
    rows = []
    for variant in variants:
        runs = results.get(variant.name) or []
        if not runs:
            continue
        values = {"acc": [r.acc for r in runs],
                  "acc_at_budget": [interpolate_curve(*r.curve, budget) for r in runs],
                  "entropy": [r.entropy for r in runs if math.isfinite(r.entropy)],
                  "generated_tokens": [r.generated_tokens for r in runs]}
        rows.append(VariantRow(
            name=variant.name, label=variant.label, families=variant.families,
            seeds=[r.seed for r in runs], acc=t_interval(values["acc"]),
            acc_at_budget=t_interval(values["acc_at_budget"]),
            greedy=t_interval([r.greedy for r in runs]),
            entropy=t_interval(values["entropy"]) if values["entropy"] else (math.nan,) * 3,
            generated_tokens=_mean(values["generated_tokens"]),
            trained_tokens=_mean([r.trained_tokens for r in runs]),
            wall_seconds=_mean([r.wall_seconds for r in runs]), values=values,
            gain=t_interval([r.acc - r.acc_before for r in runs])))
    _pair_with_references(rows, results)
    return rows, budget


def reference_of(name: str) -> str | None:
    """The variant a row is compared with: DAPO for DAPO minus one control, none for GRPO,
    GRPO for every other variant (its controls added to GRPO)."""
    if name == "grpo":
        return None
    return "dapo" if name.startswith("dapo-") else "grpo"


def paired_diffs(runs: list[RunResult], reference: list[RunResult]) -> list[float]:
    """``acc - reference acc`` for each seed both have run; each seed's variants start from
    the same warm start, so the pairs share its luck."""
    by_seed = {r.seed: r.acc for r in reference}
    return [r.acc - by_seed[r.seed] for r in runs if r.seed in by_seed]


def paired_change(runs: list[RunResult], reference: list[RunResult]) -> tuple[float, ...]:
    """Mean and 95% interval of :func:`paired_diffs`."""
    diffs = paired_diffs(runs, reference)
    return t_interval(diffs) if diffs else (math.nan,) * 3


def _pair_with_references(rows: list[VariantRow], results: dict) -> None:
    labels = {row.name: row.label for row in rows}
    for row in rows:
        ref = reference_of(row.name)
        if ref in labels:
            row.versus = labels[ref]
            row.change = paired_change(results[row.name], results[ref])
            row.values["change"] = paired_diffs(results[row.name], results[ref])


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _pct(stat: tuple[float, float, float]) -> str:
    mean, low, high = stat
    if math.isnan(low):
        return f"{100 * mean:.1f}"
    return f"{100 * mean:.1f} ({100 * max(low, 0):.1f}-{100 * min(high, 1):.1f})"


def _points(stat: tuple[float, float, float]) -> str:
    """A difference of fractions in percentage points: ``+12.5 (3.0 to 22.0)``."""
    mean, low, high = stat
    if math.isnan(mean):
        return "-"
    if math.isnan(low):
        return f"{100 * mean:+.1f}"
    return f"{100 * mean:+.1f} ({100 * low:+.1f} to {100 * high:+.1f})"


def _plain(stat: tuple[float, float, float]) -> str:
    mean, low, high = stat
    if math.isnan(mean):
        return "n/a"
    return f"{mean:.3f}" if math.isnan(low) else f"{mean:.3f} ({low:.3f}-{high:.3f})"


def _tokens(value: float) -> str:
    return f"{value / 1e6:.2f}M" if value >= 1e6 else f"{value / 1e3:.0f}k"


def markdown_table(rows: list[VariantRow], budget: float, *, k: int, steps: int,
                   acc_before: float | None = None) -> str:
    """The report's table and the lines that explain it."""
    head = (f"| variant | seeds | held-out avg@{k} % at step {steps} (95% CI) | "
            "gain over the warm start, points (95% CI) | change vs reference, paired by seed, "
            f"points (95% CI) | avg@{k} % at {_tokens(budget)} generated tokens (95% CI) | "
            f"greedy % at step {steps} | final entropy (95% CI) | generated tokens | "
            "trained tokens | wall time (s) |")
    lines = [head, "| " + " | ".join(["---"] * 11) + " |"]
    for row in rows:
        versus = f"{_points(row.change)} vs {row.versus}" if row.versus else "reference"
        lines.append(
            f"| {row.label} | {len(row.seeds)} | {_pct(row.acc)} | {_points(row.gain)} | "
            f"{versus} | {_pct(row.acc_at_budget)} "
            f"| {100 * row.greedy[0]:.1f} | {_plain(row.entropy)} | "
            f"{_tokens(row.generated_tokens)} | {_tokens(row.trained_tokens)} | "
            f"{row.wall_seconds:.0f} |")
    notes = [
        "",
        f"Means over seeds with 95% Student-t intervals (none for a single seed). Equal "
        f"tokens: each run's held-out curve (evaluated every few steps) interpolated at "
        f"{budget:,.0f} generated tokens, the smallest final count among the runs; generated "
        "tokens count discarded groups. Wall times depend on the machine's load. The warm "
        "start differs from seed to seed and every variant of a seed starts from the same "
        "one: the gain and the paired change take that spread out, so read them first "
        "(an interval that excludes 0 is a difference the seeds agree on).",
    ]
    if acc_before is not None:
        notes.append(f"Held-out avg@{k} before RL (the warm start, shared by every variant of "
                     f"a seed): {100 * acc_before:.1f}%.")
    return "\n".join(lines + notes) + "\n"


def plot_ablation(rows: list[VariantRow], budget: float, png_path: Path, *, k: int,
                  steps: int, title: str | None = None) -> Path:
    """Five panels of horizontal bars (mean, 95% interval, one dot per seed): held-out
    avg@k at equal steps, its change against the reference paired by seed, avg@k at equal
    tokens, final entropy, generated tokens."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import EngFormatter
    except ImportError as exc:
        raise ValueError("the ablation chart needs matplotlib: pip install 'verimath[plot]'"
                         ) from exc
    panels = [("acc", f"held-out avg@{k} at step {steps}", 100.0),
              ("change", "change vs GRPO / DAPO, paired by seed (points)", 100.0),
              ("acc_at_budget", f"held-out avg@{k} at {_tokens(budget)} tokens", 100.0),
              ("entropy", "final policy entropy", 1.0),
              ("generated_tokens", "generated tokens", 1.0)]
    height = 1.2 + 0.38 * len(rows)
    fig = Figure(figsize=(18, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), sharey=True)
    ypos = list(range(len(rows)))[::-1]
    for ax, (key, name, scale) in zip(axes, panels):
        for y, row in zip(ypos, rows):
            values = [v * scale for v in row.values.get(key, [])]
            if not values:
                continue
            mean = sum(values) / len(values)
            if key in ("acc", "change", "acc_at_budget", "entropy"):
                _, low, high = t_interval(values)
            else:
                low = high = math.nan
            ax.barh(y, mean, color=f"C{0 if 'cumulative' in row.families else 1}", alpha=0.5)
            if not math.isnan(low):
                ax.errorbar(mean, y, xerr=[[mean - low], [high - mean]], color="black",
                            capsize=3, linewidth=1)
            ax.plot(values, [y] * len(values), "o", color="black", markersize=2.5)
        ax.set_title(name + (" (%)" if scale == 100.0 and key != "change" else ""), fontsize=9)
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(labelsize=7)
        if key == "generated_tokens":
            ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    axes[0].set_yticks(ypos, [row.label for row in rows], fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    png_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png_path, dpi=110)
    return png_path
