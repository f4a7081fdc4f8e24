"""The mechanism regimes' results file: every seed's measures, and the summary rows.

``benchmarks/results/mechanisms.json`` holds::

    {"rows": [...], "runs": [...]}

``runs`` has one record per regime and seed, written as soon as the seed's arms are
measured, with where and on what it was measured (machine, versions, commit, date, load) and
a ``design`` fingerprint of the regime (the full config of every arm and warm-start stage),
so that seeds of the same design pool across days and machines and a changed design starts
a new pool. ``phase`` is ``pilot`` (seeds used to tune the design, left out of the summary)
or ``confirmatory``.

``rows`` is recomputed from the confirmatory records of each regime's current design, one
row per effect (:class:`verimath.trainer.ablation.regimes.Effect`)::

    {"control", "kind": "mechanism" | "accuracy", "metric", "effect", "ci": [lo, hi],
     "direction_ok", "decisive", "primary", "seeds", "regime", "on", "off"}

``effect`` is the mean over seeds of ``on - off`` (paired by seed: both arms start from the
seed's warm start), ``ci`` its 95% Student-t interval, ``direction_ok`` whether its sign is
the paper's, ``decisive`` whether the interval excludes 0.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import subprocess
from pathlib import Path

from verimath.trainer.ablation.regimes import REGIMES, Effect, Regime
from verimath.trainer.ablation.stats import interpolate_curve, t_interval

DEFAULT_RESULTS = Path("benchmarks/results/mechanisms.json")


def design_of(regime: Regime) -> str:
    """A fingerprint of what a regime runs: the full config of each warm-start stage and
    arm (the preset with its overrides), the probes and the effects."""
    from verimath.trainer.config.files import load_config

    configs = {"stages": [load_config(regime.preset, list(stage), check_required=False).to_dict()
                          for stage in regime.warm_start],
               "arms": {a.name: load_config(regime.preset, list(a.overrides),
                                            check_required=False).to_dict()
                        for a in regime.arms},
               "probe": regime.probe, "stage_overrides": [list(s) for s in regime.warm_start]}
    text = json.dumps(configs, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def provenance() -> dict:
    """Where and on what a record was measured."""
    from importlib.metadata import version

    import numpy
    import torch
    import transformers

    return {"machine": {"node": platform.node(), "cpu": _cpu_name(), "cores": os.cpu_count(),
                        "python": platform.python_version()},
            "versions": {"verimath": version("verimath"), "torch": torch.__version__,
                         "transformers": transformers.__version__, "numpy": numpy.__version__},
            "commit": _commit()}


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=True, cwd=Path(__file__).resolve().parent)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True,
                               cwd=Path(__file__).resolve().parent).stdout.strip()
        return out.stdout.strip() + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def load_results(path: Path) -> dict:
    """The results file, or an empty one when it does not exist."""
    if not path.is_file():
        return {"rows": [], "runs": []}
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise ValueError(f"{path}: not a mechanisms results file (expected rows and runs)")
    return data


def add_record(path: Path, record: dict) -> dict:
    """Add (or replace: same regime, seed, phase and design) one record, recompute the rows
    and write the file atomically; returns the new contents."""
    data = load_results(path)
    same = ("regime", "seed", "phase", "design")
    runs = [r for r in data["runs"] if any(r.get(k) != record.get(k) for k in same)]
    runs.append(record)
    runs.sort(key=lambda r: (r["regime"], r["phase"], r["seed"], r.get("date", "")))
    data = clean({"rows": summary_rows(runs), "runs": runs})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return data


def clean(value):
    """``value`` with every non-finite float replaced by None (JSON has no NaN)."""
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def paired_values(effect: Effect, records: list[dict]) -> list[float]:
    """``on - off`` of ``effect.metric`` per record (seed) that has both arms' values."""
    diffs = []
    for record in records:
        arms = record["arms"]
        if effect.on not in arms or effect.off not in arms:
            continue
        if effect.metric == "acc_at_equal_tokens":
            on, off = equal_token_accuracy(arms[effect.on], arms[effect.off])
        else:
            on, off = arms[effect.on].get(effect.metric), arms[effect.off].get(effect.metric)
        if on is not None and off is not None and math.isfinite(on) and math.isfinite(off):
            diffs.append(float(on) - float(off))
    return diffs


def equal_token_accuracy(a: dict, b: dict) -> tuple[float, float]:
    """Held-out avg@k of two runs at the smaller of their final generated-token counts, each
    read from its evaluation curve by linear interpolation."""
    curves = [a["curve"]["eval"], b["curve"]["eval"]]
    budget = min(c[-1][1] for c in curves)
    return tuple(interpolate_curve([p[1] for p in c], [p[2] for p in c], budget)
                 for c in curves)


def summary_rows(runs: list[dict]) -> list[dict]:
    """One row per effect of every regime, from its confirmatory records of the newest
    design (the design of its latest confirmatory record)."""
    rows = []
    for regime in REGIMES.values():
        mine = [r for r in runs if r["regime"] == regime.name and r["phase"] == "confirmatory"]
        if not mine:
            continue
        design = max(mine, key=lambda r: r.get("date", ""))["design"]
        mine = [r for r in mine if r["design"] == design]
        for effect in regime.effects:
            diffs = paired_values(effect, mine)
            if not diffs:
                continue
            mean, low, high = t_interval(diffs)
            decisive = bool(math.isfinite(low) and (low > 0 or high < 0))
            rows.append(clean({
                "control": effect.control, "kind": effect.kind, "metric": effect.metric,
                "effect": mean, "ci": [low, high],
                "direction_ok": bool(mean * effect.paper_sign > 0), "decisive": decisive,
                "primary": effect.primary, "seeds": len(diffs), "regime": regime.name,
                "on": effect.on, "off": effect.off, "design": design}))
    return rows
