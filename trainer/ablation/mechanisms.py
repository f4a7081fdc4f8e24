"""What each DAPO control acts on, measured per run and compared with the reference by seed.

Accuracy says whether a control helped; these metrics say through what (Yu et al. 2025, §3):

==================  ==============================================  ===========================
mechanism           per run (from ``metrics.jsonl``)                the control it answers to
==================  ==============================================  ===========================
``entropy``         ``policy/entropy``, mean of the last quarter    clip-higher (collapse)
``clip_high``       ``clip/frac_high``, mean of all steps            clip-higher (how often the
                                                                    upper bound binds at all)
``length``          ``length/mean``, mean of the last quarter       overlong shaping
``truncated``       ``length/truncated_frac``, mean of all steps     overlong filter / soft
``wrong_length``    ``length/wrong_mean``, mean of all steps         token-level loss
``kept_frac``       kept / generated groups, summed over the run     dynamic sampling (gain)
``tokens_per_step`` generated tokens per RL step                     dynamic sampling (cost)
==================  ==============================================  ===========================

A variant's change is paired by seed with its reference (DAPO for DAPO minus one control,
GRPO otherwise, as in :mod:`verimath.trainer.ablation.report`), with a 95% Student-t
interval. :func:`plot_curves` draws the paper's kind of figure: held-out accuracy, entropy,
length and truncation against the RL step, one line per variant (the mean over seeds).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from verimath.trainer.ablation.report import reference_of
from verimath.trainer.ablation.stats import t_interval

MECHANISMS = {
    "entropy": "entropy (last quarter)",
    "clip_high": "tokens at the upper clip % (all steps)",
    "length": "length, tokens (last quarter)",
    "truncated": "truncated % (all steps)",
    "wrong_length": "wrong responses' length (all steps)",
    "kept_frac": "kept / generated groups %",
    "tokens_per_step": "generated tokens per step",
}
PERCENT = ("clip_high", "truncated", "kept_frac")
DIGITS = {"entropy": 3, "clip_high": 2}
CURVES = (("eval", "held-out avg@k (%)"), ("policy/entropy", "policy entropy"),
          ("length/mean", "response length (tokens)"),
          ("length/truncated_frac", "truncated responses (%)"))


def _series(records: list[dict], key: str) -> list[float]:
    return [float(r[key]) for r in records if key in r and math.isfinite(float(r[key]))]


def _mean(values: list[float]) -> float:
    """The mean of ``values``; nan when empty."""
    return float(np.mean(values)) if values else math.nan


def _tail_mean(values: list[float]) -> float:
    """The mean of the last quarter of ``values`` (at least one value); nan when empty."""
    if not values:
        return math.nan
    return float(np.mean(values[-max(1, len(values) // 4):]))


def run_mechanisms(records: list[dict]) -> dict[str, float]:
    """The mechanism metrics of one run's step records (nan where the run logged none)."""
    steps = [r for r in records if "compute/generated_tokens" in r]
    generated = sum(r.get("sampling/generated_groups", 0.0) for r in steps)
    kept = sum(r.get("sampling/kept_groups", 0.0) for r in steps)
    tokens = sum(r["compute/generated_tokens"] for r in steps)
    wrong = [r["length/wrong_mean"] for r in steps
             if "length/wrong_mean" in r and r.get("reward/accuracy", 0.0) < 1.0]
    return {
        "entropy": _tail_mean(_series(steps, "policy/entropy")),
        "clip_high": _mean(_series(steps, "clip/frac_high")),
        "length": _tail_mean(_series(steps, "length/mean")),
        "truncated": _mean(_series(steps, "length/truncated_frac")),
        "wrong_length": _mean(wrong),
        "kept_frac": kept / generated if generated else math.nan,
        "tokens_per_step": tokens / len(steps) if steps else math.nan,
    }


def mechanism_rows(per_run: dict[str, dict[int, dict[str, float]]], labels: dict[str, str]
                   ) -> list[dict]:
    """Per variant (in ``labels`` order): each mechanism's mean over seeds and its change
    against the reference paired by seed, ``(mean, low, high)`` (nan where not defined).
    ``per_run`` maps variant name -> seed -> :func:`run_mechanisms`."""
    rows = []
    for name, label in labels.items():
        seeds = per_run.get(name)
        if not seeds:
            continue
        ref = per_run.get(reference_of(name) or "", {})
        row = {"name": name, "label": label, "seeds": len(seeds), "versus": bool(ref)}
        for key in MECHANISMS:
            own = [m[key] for m in seeds.values() if math.isfinite(m[key])]
            row[key] = float(np.mean(own)) if own else math.nan
            diffs = [m[key] - ref[s][key] for s, m in seeds.items()
                     if s in ref and math.isfinite(m[key]) and math.isfinite(ref[s][key])]
            row[f"{key}_change"] = t_interval(diffs) if diffs else (math.nan,) * 3
        rows.append(row)
    return rows


def _cell(row: dict, key: str) -> str:
    scale = 100.0 if key in PERCENT else 1.0
    digits = DIGITS.get(key, 1)
    mean = row[key]
    if math.isnan(mean):
        return "n/a"
    text = f"{scale * mean:.{digits}f}"
    change, low, high = row[f"{key}_change"]
    if not row["versus"] or math.isnan(change):
        return text
    if math.isnan(low):
        return f"{text} ({scale * change:+.{digits}f})"
    return (f"{text} ({scale * change:+.{digits}f}; {scale * low:+.{digits}f} to "
            f"{scale * high:+.{digits}f})")


def mechanisms_table(rows: list[dict]) -> str:
    """Markdown: a row per variant, a column per mechanism: ``value (paired change; 95%
    interval)``."""
    head = "| variant | seeds | " + " | ".join(MECHANISMS.values()) + " |"
    lines = ["### Mechanisms", "", head, "| " + " | ".join(["---"] * (len(MECHANISMS) + 2)) + " |"]
    for row in rows:
        cells = " | ".join(_cell(row, key) for key in MECHANISMS)
        lines.append(f"| {row['label']} | {row['seeds']} | {cells} |")
    lines += ["", "Each cell: the mean over seeds, then the change against the variant's "
              "reference (DAPO for DAPO minus one control, else GRPO) paired by seed, with "
              "its 95% interval. Entropy and length: mean of the last quarter of the steps; "
              "the upper clip, truncation and the wrong responses' length: mean of every "
              "step."]
    return "\n".join(lines) + "\n"


def mean_curves(runs: list[list[dict]], key: str) -> tuple[list[float], list[float]]:
    """``(steps, mean over runs)`` of ``key`` at the steps every run logged it."""
    by_run = [{int(r["step"]): float(r[key]) for r in records if key in r} for records in runs]
    steps = sorted(set.intersection(*(set(d) for d in by_run))) if by_run else []
    return steps, [float(np.mean([d[s] for d in by_run])) for s in steps]


def plot_curves(records: dict[str, list[list[dict]]], labels: dict[str, str], png_path: Path,
                *, k: int, title: str | None = None) -> Path:
    """Held-out avg@k, entropy, length and truncation against the RL step: one line per
    variant (``records``: variant name -> each seed's metric records), the mean over seeds."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(16, 4), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(CURVES))
    for ax, (key, name) in zip(axes, CURVES):
        key = f"eval/avg@{k}" if key == "eval" else key
        scale = 100.0 if "%" in name else 1.0
        for i, (variant, label) in enumerate(labels.items()):
            steps, values = mean_curves(records.get(variant, []), key)
            if steps:
                ax.plot(steps, [scale * v for v in values], label=label, color=f"C{i}",
                        linewidth=1.2, marker="o" if key.startswith("eval/") else None,
                        markersize=3)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("RL step", fontsize=8)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    axes[0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    png_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png_path, dpi=110)
    return png_path
