"""The rows of ``scripts/gpu_check.py``: the table, its JSON file, the time budget, the
reasons a row is skipped and the asynchronous-rollout rows (pure functions, tested on CPU).

A row is ``(check, result, detail)``. A result starts with ``FAILED`` when a check ran and
broke, with ``skipped: <reason>`` when it did not run.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

Row = tuple[str, str, str]
HEADER = ("check", "result", "detail")
VLLM_HINT = {"vllm not installed": "pip install 'verimath[vllm]' (a connected machine)",
             "no GPU": "the test suite covers vLLM's CPU backend"}


def format_table(rows: list[Row]) -> str:
    """The rows as one plain-text table under a header line."""
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in (0, 1)]
    return "\n".join(f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c}".rstrip()
                     for a, b, c in [HEADER, *rows])


def write_json(path: Path, rows: list[Row], **about) -> Path:
    """``{"rows": [{"check", "result", "detail"}, ...], **about}`` to ``path`` (its folder
    is created); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {**about, "rows": [dict(zip(HEADER, row)) for row in rows]}
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def read_json(path: Path) -> list[Row]:
    """The rows of a file :func:`write_json` wrote."""
    return [(r["check"], r["result"], r["detail"])
            for r in json.loads(path.read_text(encoding="utf-8"))["rows"]]


def default_json_path(folder: Path, now: float | None = None) -> Path:
    return folder / time.strftime("gpu_check-%Y%m%d-%H%M%S.json", time.localtime(now))


def failed(rows: list[Row]) -> bool:
    return any(r[1].startswith("FAILED") for r in rows)


def vllm_skip(has_vllm: bool, has_cuda: bool) -> str:
    """Why the vLLM rows are skipped ("" when they run): vLLM absent comes first, then no
    GPU (vLLM's CPU build is the test suite's business)."""
    if not has_vllm:
        return "vllm not installed"
    return "" if has_cuda else "no GPU"


def skipped(label: str, reason: str, detail: str = "") -> Row:
    return (label, f"skipped: {reason}", detail or VLLM_HINT.get(reason, ""))


class Budget:
    """Seconds left of the whole check; parts that find too little left are skipped."""

    def __init__(self, seconds: float, clock=time.monotonic) -> None:
        self.clock, self.seconds = clock, float(seconds)
        self.end = clock() + self.seconds

    def left(self) -> float:
        return max(0.0, self.end - self.clock())

    def spent(self, need: float = 1.0) -> bool:
        """Whether fewer than ``need`` seconds are left."""
        return self.left() < need

    def reason(self) -> str:
        return f"time budget ({self.seconds:.0f} s, --budget-s) spent"


# ---- the asynchronous-rollout rows ----------------------------------------------------------

ASYNC_KEYS = ("time/step", "time/generate", "time/score", "time/update", "async/wait_rollouts",
              "async/wait_weights", "async/staleness_max", "async/stale_dropped")


def step_means(metrics: list[dict]) -> dict[str, float]:
    """Means over the RL steps of ``metrics.jsonl`` rows, the first step left out (it also
    waits for the generator process to start); ``async/staleness_max`` is the largest, and
    ``steps`` the number of steps averaged."""
    steps = [m for m in metrics if "time/step" in m][1:]
    if not steps:
        raise ValueError("metrics.jsonl holds fewer than two RL steps; run more optim.steps")
    out = {k: statistics.fmean(m.get(k, 0.0) for m in steps) for k in ASYNC_KEYS}
    out["async/staleness_max"] = max(m.get("async/staleness_max", 0.0) for m in steps)
    out["steps"] = float(len(steps))
    return out


def async_rows(sync: dict[str, float], lag: dict[str, float], async_steps: int = 1) -> list[Row]:
    """The synchronous and the ``async_steps`` rows from :func:`step_means` of each run:
    seconds per step, the speed-up, and the ``async/*`` means beside them."""
    def gen_update(m):
        return (f"generate {m['time/generate'] + m['time/score']:.2f} s/step, update "
                f"{m['time/update']:.2f} s/step, {m['steps']:.0f} steps (first left out)")

    speedup = sync["time/step"] / lag["time/step"] if lag["time/step"] > 0 else float("nan")
    return [
        ("async, hf engine, async_steps=0", f"{sync['time/step']:.2f} s/step", gen_update(sync)),
        (f"async, hf engine, async_steps={async_steps}",
         f"{lag['time/step']:.2f} s/step ({speedup:.2f}x)",
         f"{gen_update(lag)}; async/wait_rollouts {lag['async/wait_rollouts']:.2f} s/step, "
         f"async/wait_weights {lag['async/wait_weights']:.2f} s/step, async/staleness_max "
         f"{lag['async/staleness_max']:.0f}, async/stale_dropped "
         f"{lag['async/stale_dropped']:.2f}/step"),
    ]
