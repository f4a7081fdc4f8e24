"""``verimath plot``: learning curves of several training runs overlaid, one panel per metric.

    verimath plot runs/dapo-1 runs/grpo-1                      # against the RL step
    verimath plot runs/* --x generated_tokens --output cost.png
    verimath plot runs/dapo-1 --keys 'eval/avg@*' policy/entropy 'clip/*'

Each RUN_DIR is a training run directory (or its ``metrics.jsonl``). ``--x generated_tokens``
puts the cumulative ``compute/generated_tokens`` (kept and discarded groups alike) on the x
axis, so runs that spend generation differently (dynamic sampling) compare at equal cost.
``--keys`` takes metric names or shell patterns; the default panels are held-out and training
accuracy, reward, length, entropy, clip fractions and the kept-group fraction
``sampling/kept_frac = sampling/kept_groups / sampling/generated_groups`` (derived here).
The PNG is drawn with matplotlib's Agg canvas (no display needed). Errors exit with code 2.
Without ``--output`` it is ``curves-<x>.png`` beside the runs: in the run directory for one run
(next to the trainer's own ``learning_curve.png``), else in the directory holding them all.
"""

from __future__ import annotations

import argparse
import fnmatch
import math
import sys
import warnings
from pathlib import Path

DEFAULT_KEYS = ("eval/avg@*", "eval/greedy", "reward/accuracy", "reward/kept_mean",
                "length/mean", "policy/entropy", "clip/frac_high", "clip/frac_low",
                "sampling/kept_frac")
X_AXES = {"step": "RL step", "generated_tokens": "generated tokens (cumulative)"}


def default_output(metrics_paths: list[Path], x: str) -> Path:
    """``curves-<x>.png`` in the run directory of one run, else in the runs' common parent."""
    import os

    run_dirs = [Path(p).resolve().parent for p in metrics_paths]
    folder = run_dirs[0] if len(set(run_dirs)) == 1 else \
        Path(os.path.commonpath([str(d) for d in run_dirs]))
    return folder / f"curves-{x}.png"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR",
                        help="training run directories (or metrics.jsonl files)")
    parser.add_argument("--x", choices=sorted(X_AXES), default="step", help="x axis")
    parser.add_argument("--keys", nargs="+", default=None, metavar="KEY",
                        help="metrics to draw, names or patterns such as 'clip/*' "
                             "(default: accuracy, reward, length, entropy, clips, kept groups)")
    parser.add_argument("--output", default=None, metavar="FILE",
                        help="PNG file to write (default: curves-<x>.png in the run directory, "
                             "or in the directory that holds all the runs)")
    parser.add_argument("--title", default=None)


def metrics_file(run: str) -> Path:
    """``run/metrics.jsonl``, or ``run`` itself when it is a file; ValueError otherwise."""
    path = Path(run)
    path = path if path.is_file() else path / "metrics.jsonl"
    if not path.is_file():
        raise ValueError(f"{run}: no metrics.jsonl (pass a training run directory)")
    return path


def run_series(records: list[dict]) -> dict[str, list[tuple[int, float, float]]]:
    """``{key: [(step, generated_tokens, value), ...]}`` of one run, step-ordered.

    A step logged twice keeps its last record. ``generated_tokens`` is the cumulative
    ``compute/generated_tokens`` up to and including the step. Adds ``sampling/kept_frac``.
    """
    by_step = {int(r["step"]): r for r in records}
    series: dict[str, list] = {}
    tokens = 0.0
    for step in sorted(by_step):
        record = dict(by_step[step])
        tokens += float(record.get("compute/generated_tokens") or 0.0)
        generated = record.get("sampling/generated_groups")
        if isinstance(generated, (int, float)) and generated > 0:
            record["sampling/kept_frac"] = record.get("sampling/kept_groups", 0) / generated
        for key, value in record.items():
            if key == "step" or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if math.isfinite(value):
                series.setdefault(key, []).append((step, tokens, float(value)))
    return series


def select_keys(patterns, available: set[str]) -> list[str]:
    """Keys matching ``patterns`` in pattern order (each key once)."""
    chosen: list[str] = []
    for pattern in patterns:
        for key in sorted(fnmatch.filter(available, pattern)):
            if key not in chosen:
                chosen.append(key)
    return chosen


def plot_runs(runs: dict[str, dict], keys: list[str], png_path: Path, *, x: str = "step",
              title: str | None = None) -> Path:
    """Draw ``keys`` for every run (``{label: run_series(...)}``) into ``png_path``."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import EngFormatter
    except ImportError as exc:
        raise ValueError("verimath plot needs matplotlib: pip install 'verimath[plot]'") from exc
    cols = min(len(keys), 3)
    rows = math.ceil(len(keys) / cols)
    fig = Figure(figsize=(4.4 * cols, 3.1 * rows + 0.6), layout="constrained")
    FigureCanvasAgg(fig)
    column = 0 if x == "step" else 1
    steps = max(len({p[0] for s in run.values() for p in s}) for run in runs.values())
    for index, key in enumerate(keys):
        ax = fig.add_subplot(rows, cols, index + 1)
        for color, (label, series) in enumerate(runs.items()):
            points = series.get(key, [])
            sparse = len(points) < max(2, steps // 2)  # an evaluation every few steps
            ax.plot([p[column] for p in points], [p[2] for p in points], color=f"C{color}",
                    label=label, linewidth=1.3, marker="o" if sparse else None, markersize=3)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel(X_AXES[x], fontsize=8)
        if x == "generated_tokens":
            ax.xaxis.set_major_formatter(EngFormatter(sep=""))  # 400k, 1.2M
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(runs), 4), fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    png_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png_path, dpi=110)
    return png_path


def _labels(paths: list[Path]) -> list[str]:
    """Run names: the run directory's name, made unique with its parent when needed."""
    names = [p.parent.name for p in paths]
    return [f"{p.parent.parent.name}/{n}" if names.count(n) > 1 else n
            for p, n in zip(paths, names)]


def main(args: argparse.Namespace) -> int:
    from verimath.trainer.run.metrics import read_metrics

    try:
        paths = [metrics_file(run) for run in args.runs]
        runs = {}
        for label, path in zip(_labels(paths), paths):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a torn last line is expected mid-run
                runs[label] = run_series(read_metrics(path))
        available = {key for series in runs.values() for key in series}
        keys = select_keys(args.keys or DEFAULT_KEYS, available)
        if not keys:
            raise ValueError(f"none of the keys {list(args.keys or DEFAULT_KEYS)} has values in "
                             f"{', '.join(args.runs)}")
        if args.x == "generated_tokens" and not any(
                "compute/generated_tokens" in s for s in runs.values()):
            raise ValueError("--x generated_tokens: no run logs compute/generated_tokens")
        output = Path(args.output) if args.output else default_output(paths, args.x)
        out = plot_runs(runs, keys, output, x=args.x, title=args.title)
    except ValueError as exc:
        print(f"verimath plot: error: {exc}", file=sys.stderr)
        return 2
    print(f"verimath plot: {len(keys)} panels, {len(runs)} run(s) -> {out}")
    return 0
