"""The tables of ``verimath eval``: from per-sample records to a summary and a markdown table.

A record is one verified sample (the lines of ``samples.jsonl``)::

    {"index": 3, "id": "aime24/test/3", "source": "aime24", "sample": 0,
     "response": "...", "extracted": "204", "correct": true, "timed_out": false,
     "length": 812, "truncated": false}

:func:`summarize` groups them by problem (``index``), checks every problem has the same
samples ``0..n-1``, and reports overall and per ``source``: ``avg@n`` with its 95% interval,
``pass@k`` and ``maj@k`` on the ``k`` ladder (see ``eval_metrics``), the mean response length
in tokens, and the fractions of truncated, unanswered and timed-out samples.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from verimath.rewards import fast_verdict
from verimath.trainer.evaluation.metrics import avg_at_n, k_ladder, maj_at_k, pass_at_k


def _problems(records: Iterable[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """Records grouped by problem index (ascending), each group sorted by sample index."""
    by_index: dict[int, list] = defaultdict(list)
    for r in records:
        by_index[int(r["index"])].append(r)
    groups = [sorted(by_index[i], key=lambda r: r["sample"]) for i in sorted(by_index)]
    sizes = {len(g) for g in groups}
    if len(sizes) > 1:
        raise ValueError(f"problems have different numbers of samples: {sorted(sizes)}")
    for g in groups:
        if [r["sample"] for r in g] != list(range(len(g))):
            raise ValueError(f"problem {g[0]['id']!r} has samples {[r['sample'] for r in g]}, "
                             f"expected 0..{len(g) - 1}")
    return groups


def _nan_to_none(x: float) -> float | None:
    return None if math.isnan(x) else x


def group_metrics(groups: list[list[Mapping[str, Any]]], *, mode: str,
                  conventions: str = "default") -> dict[str, Any]:
    """The metrics of some problems (each a list of its ``n`` sample records); ``mode`` and
    ``conventions`` decide which answers ``maj@k`` counts as one."""
    correct = np.array([[bool(r["correct"]) for r in g] for g in groups])  # (P, n)
    answers = [[r["extracted"] for r in g] for g in groups]
    flat = [r for g in groups for r in g]
    n = correct.shape[1]
    mean, low, high = avg_at_n(correct)
    out: dict[str, Any] = {"problems": len(groups), "samples": n, f"avg@{n}": mean,
                           f"avg@{n}_ci95": [_nan_to_none(low), _nan_to_none(high)]}
    def same(a: str, b: str) -> bool:
        return fast_verdict(a, b, mode=mode, conventions=conventions) is True

    for k in k_ladder(n):
        out[f"pass@{k}"] = pass_at_k(correct, k)
    for k in k_ladder(n)[1:]:
        out[f"maj@{k}"] = maj_at_k(answers, correct, k, same)
    out["mean_length"] = float(np.mean([r["length"] for r in flat]))
    out["truncated_frac"] = float(np.mean([bool(r["truncated"]) for r in flat]))
    out["no_answer_frac"] = float(np.mean([r["extracted"] is None for r in flat]))
    out["timed_out_frac"] = float(np.mean([bool(r.get("timed_out")) for r in flat]))
    return out


def summarize(records: Iterable[Mapping[str, Any]], *, mode: str,
              conventions: str = "default") -> dict[str, Any]:
    """``{"overall": metrics, "by_source": {source: metrics}}`` of all records.

    Raises:
        ValueError: no records, or problems with unequal sample sets.
    """
    groups = _problems(records)
    if not groups:
        raise ValueError("no evaluated problems")
    by_source: dict[str, list] = defaultdict(list)
    for g in groups:
        by_source[str(g[0]["source"])].append(g)
    def metrics(some: list) -> dict[str, Any]:
        return group_metrics(some, mode=mode, conventions=conventions)

    return {"overall": metrics(groups), "by_source": {s: metrics(by_source[s])
                                                      for s in sorted(by_source)}}


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def markdown_table(summary: Mapping[str, Any]) -> str:
    """One row per source (then ``all`` when there are several), percentages with one
    decimal, the mean length in tokens."""
    overall = summary["overall"]
    n = overall["samples"]
    passes = [k for k in k_ladder(n)[1:]]
    header = ["source", "problems", f"avg@{n} % (95% CI)", *[f"pass@{k} %" for k in passes],
              *([f"maj@{n} %"] if n > 1 else []), "mean length", "truncated %"]
    rows = [(s, m) for s, m in summary["by_source"].items()]
    if len(rows) != 1:
        rows.append(("all", overall))
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for source, m in rows:
        low, high = m[f"avg@{n}_ci95"]
        interval = "" if low is None else f" ({_pct(low)}-{_pct(high)})"
        cells = [source, str(m["problems"]), _pct(m[f"avg@{n}"]) + interval,
                 *[_pct(m[f"pass@{k}"]) for k in passes],
                 *([_pct(m[f"maj@{n}"])] if n > 1 else []),
                 f"{m['mean_length']:.1f}", _pct(m["truncated_frac"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
