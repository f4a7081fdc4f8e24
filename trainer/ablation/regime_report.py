"""The mechanism regimes' report, drawn from the results file alone.

:func:`rows_table` is the summary as markdown (a row per effect: control, kind, metric,
effect and 95% interval, seeds); :func:`cost_table` the CPU seconds per regime and seed;
:func:`plot_regimes` the figure the DAPO paper draws for its controls (entropy, response
length and held-out accuracy against the RL step), one row of panels per regime and one line
per arm, the mean over the confirmatory seeds of the regime's current design.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from verimath.trainer.ablation.regimes import METRIC_LABELS, REGIMES

PANELS = (("entropy", "policy entropy"), ("length", "response length (tokens)"),
          ("eval", "held-out avg@k (%)"))


def pooled_runs(runs: list[dict], regime: str) -> list[dict]:
    """The confirmatory records of ``regime``'s newest design (what the rows pool)."""
    mine = [r for r in runs if r["regime"] == regime and r["phase"] == "confirmatory"]
    if not mine:
        return []
    design = max(mine, key=lambda r: r.get("date", ""))["design"]
    return [r for r in mine if r["design"] == design]


def _number(value, scale: float = 1.0, digits: int = 3) -> str:
    return "n/a" if value is None else f"{scale * value:+.{digits}f}"


def rows_table(rows: list[dict]) -> str:
    """Markdown: control, kind, metric, effect (on - off), 95% interval, seeds, verdict. A
    control measured in more than one regime is named with its regime in each row."""
    lines = ["| control | kind | metric (on - off) | effect | 95% CI | seeds | paper's sign | "
             "interval excludes 0 |", "| " + " | ".join(["---"] * 8) + " |"]
    regimes: dict[str, set] = {}
    for row in rows:
        regimes.setdefault(row["control"], set()).add(row.get("regime"))
    for row in rows:
        low, high = row["ci"]
        label = METRIC_LABELS.get(row["metric"], row["metric"])
        context = "" if row.get("primary", True) else " (context)"
        control = row["control"] + (f" ({row.get('regime')})"
                                    if len(regimes[row["control"]]) > 1 else "")
        lines.append(f"| {control} | {row['kind']}{context} | {label} "
                     f"({row['on']} - {row['off']}) | {_number(row['effect'])} | "
                     f"{_number(low)} to {_number(high)} | {row['seeds']} | "
                     f"{'yes' if row['direction_ok'] else 'no'} | "
                     f"{'yes' if row['decisive'] else 'no'} |")
    return "\n".join(lines) + "\n"


def cost_table(runs: list[dict]) -> str:
    """Markdown: CPU seconds per regime and seed (warm start, arms, probes), mean and range
    over the pooled records, and the machine's one-minute load while they ran."""
    lines = ["| regime | seeds | CPU s per seed, mean (min-max) | warm start | arms | probes | "
             "load (1 min) |", "| " + " | ".join(["---"] * 7) + " |"]
    for name, regime in REGIMES.items():
        pooled = [r for r in pooled_runs(runs, name) if not r.get("reused_runs")]
        if not pooled:
            continue
        total = [r["cpu_seconds"]["total"] for r in pooled]
        warm = np.mean([r["cpu_seconds"]["warm_start"] for r in pooled])
        arms = np.mean([sum(r["cpu_seconds"][a.name] for a in regime.arms) for r in pooled])
        probes = np.mean([r["cpu_seconds"].get("probes", 0.0) for r in pooled])
        loads = [x for r in pooled for x in r.get("load_1min", [])]
        lines.append(f"| {name} | {len(pooled)} | {np.mean(total):.0f} ({min(total):.0f}-"
                     f"{max(total):.0f}) | {warm:.0f} | {arms:.0f} | {probes:.0f} | "
                     f"{min(loads):.1f}-{max(loads):.1f} |")
    return "\n".join(lines) + "\n"


def mean_curve(arms: list[dict], panel: str) -> tuple[list[float], list[float]]:
    """``(steps, mean over seeds)`` of one arm's curve at the steps every seed has."""
    if panel == "eval":
        series = [{p[0]: p[2] for p in a["curve"]["eval"]} for a in arms]
    else:
        series = [{s: v for s, v in zip(a["curve"]["step"], a["curve"][panel])
                   if v is not None and math.isfinite(v)} for a in arms]
    steps = sorted(set.intersection(*(set(s) for s in series))) if series else []
    return steps, [float(np.mean([s[x] for s in series])) for x in steps]


def plot_regimes(runs: list[dict], png_path: Path) -> Path:
    """Entropy, response length and held-out accuracy against the RL step: a row per regime
    with pooled records, a line per arm (mean over seeds)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    regimes = [r for r in REGIMES.values() if pooled_runs(runs, r.name)]
    if not regimes:
        raise ValueError("no confirmatory record to draw")
    fig = Figure(figsize=(13, 3.0 * len(regimes)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = np.atleast_2d(fig.subplots(len(regimes), len(PANELS)))
    for row, regime in zip(axes, regimes):
        pooled = pooled_runs(runs, regime.name)
        for ax, (panel, title) in zip(row, PANELS):
            for i, arm in enumerate(regime.arms):
                arms = [r["arms"][arm.name] for r in pooled if arm.name in r["arms"]]
                steps, values = mean_curve(arms, panel)
                scale = 100.0 if panel == "eval" else 1.0
                ax.plot(steps, [scale * v for v in values], color=f"C{i}", linewidth=1.3,
                        marker="o" if panel == "eval" else None, markersize=3, label=arm.label)
            ax.set_title(f"{regime.name}: {title}", fontsize=9)
            ax.set_xlabel("RL step", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
        row[0].legend(fontsize=7, title=f"{len(pooled)} seeds", title_fontsize=7)
    png_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png_path, dpi=100)
    return png_path
