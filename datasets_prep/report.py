"""The text `verimath prep` prints: counts, a few examples of what was dropped, samples."""

from __future__ import annotations

import json

from verimath.datasets_prep.pipeline import PrepResult

EXAMPLES = 3


def _short(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def count_lines(result: PrepResult) -> list[str]:
    """One ``name  value`` line per count, in pipeline order."""
    width = max(len(k) for k in result.counts)
    return [f"  {k:<{width}}  {v}" for k, v in result.counts.items()]


def dropped_lines(result: PrepResult) -> list[str]:
    """A few rejected, duplicate and contaminated examples with their reasons."""
    lines = [f"  rejected {r.where}: {_short(r.reason)}" for r in result.rejected[:EXAMPLES]]
    conflicts = [d for d in result.duplicates if not d.same_answer]
    if conflicts:
        lines.append(f"  {len(conflicts)} duplicates had a different answer than the kept copy:")
    for d in conflicts[:EXAMPLES]:
        lines.append(f"    {d.problem.id} (answer {d.problem.answer!r:.30}) repeats {d.kept_id}")
    for d in [d for d in result.duplicates if d.same_answer][:EXAMPLES]:
        lines.append(f"  duplicate {d.problem.id} of {d.kept_id}")
    for c in result.contaminated[:EXAMPLES]:
        lines.append(f"  contaminated {c.problem.id} ~ {c.eval_id} ({c.coverage:.0%} of it): "
                     f"\"{_short(c.ngram, 80)}\"")
    return lines


def sample_lines(result: PrepResult) -> list[str]:
    """The first three kept problems as JSON, as the file holds them (``meta`` a dict), with
    the prompt and long meta values shortened."""
    lines = []
    for p in result.problems[:EXAMPLES]:
        meta = {key: value if len(json.dumps(value, ensure_ascii=False)) <= 40
                else _short(json.dumps(value, ensure_ascii=False), 40)
                for key, value in sorted(p.meta.items())}
        record = {"id": p.id, "prompt": _short(p.prompt, 120), "answer": p.answer,
                  "source": p.source, "meta": meta}
        lines.append("  " + json.dumps(record, ensure_ascii=False))
    return lines


def summary(result: PrepResult, *, input: str) -> str:
    """The whole report for one run."""
    parts = [f"{input} (split {result.split!r}):", *count_lines(result)]
    dropped = dropped_lines(result)
    if dropped:
        parts += ["dropped (examples):", *dropped]
    if result.counts.get("template_missing"):
        parts.append(f"warning: {result.counts['template_missing']} prompts had no DAPO "
                     "instruction template to remove; they were kept as they are")
    parts += ["samples:", *sample_lines(result)]
    return "\n".join(parts)
