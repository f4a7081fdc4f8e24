"""Progress bars for the warm start and the RL steps (tqdm), printing beside them, and the
console metric line of a step."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping


def progress_bar(total: int, initial: int, enabled: bool, desc: str):
    """A tqdm bar, drawn only on a terminal (disabled when ``enabled`` is False, e.g.
    ``logging.progress=false``, and when stderr is a file or a pipe, where a bar's redraws
    would only interleave with the step lines)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, disable=None if enabled else True, desc=desc,
                dynamic_ncols=True, leave=True)


def bar_echo(bar, fallback: Callable[[str], None]) -> Callable[[str], None]:
    """Print through the bar while it is shown (so lines do not tear it), else ``fallback``."""
    def echo(message: str) -> None:
        (bar.write if not bar.disable else fallback)(message)
    return echo


def is_print_step(step: int, every: int, last: int) -> bool:
    """Whether step ``step`` (1-based, finished) prints a metric line: every ``every`` steps
    and the last step ``last``; never when ``every`` is 0 (``logging.print_every=0``)."""
    return every > 0 and (step % every == 0 or step == last)


# (label, metric key, format) of the console line, in order; absent keys are left out.
LINE_FIELDS = (
    ("reward", "reward/mean", "{:+.3f}"),
    ("acc", "reward/accuracy", "{:.3f}"),
    ("entropy", "policy/entropy", "{:.3f}"),
    ("len", "length/mean", "{:.1f}"),
    ("clip_low", "clip/frac_low", "{:.4f}"),
    ("clip_high", "clip/frac_high", "{:.4f}"),
)


def metric_line(step: int, total: int, metrics: Mapping[str, float]) -> str:
    """One console line of a step's metrics, e.g. ``step 10/100 | reward -0.212 | acc 0.394 |
    kept 32/32 | entropy 0.851 | len 12.3 | clip_low 0.0010 | clip_high 0.0040 | 1234
    tok/s``. Kept groups read against the step's target; tokens per second are the tokens
    generated over the step's wall time; held-out results follow on evaluation steps. A step
    that generated nothing (it trained on groups carried from earlier steps) shows no reward,
    accuracy, length or tokens per second. Missing values are left out, non-finite ones read
    ``n/a``."""
    parts = [f"step {step}/{total}"]

    def number(key: str) -> float | None:
        value = metrics.get(key)
        return None if value is None else float(value)

    generated = number("sampling/generated_groups") != 0  # 0: trained on carried groups only
    for label, key, fmt in LINE_FIELDS[:2]:
        parts += _field(label, number(key), fmt) if generated else []
    kept, target = number("sampling/kept_groups"), number("sampling/target_groups")
    if kept is not None:
        parts.append(f"kept {kept:.0f}" + (f"/{target:.0f}" if target is not None else "")
                     + ("" if generated else " (carried, nothing generated)"))
    for label, key, fmt in LINE_FIELDS[2:]:
        parts += _field(label, number(key), fmt) if generated or key != "length/mean" else []
    tokens, seconds = number("compute/generated_tokens"), number("time/step")
    if tokens is not None and seconds and generated:
        parts.append(f"{tokens / seconds:.0f} tok/s")
    for key in sorted(k for k in metrics if k.startswith("eval/") and k != "eval/problems"):
        parts += _field("heldout " + key.split("/", 1)[1], number(key), "{:.3f}")
    return " | ".join(parts)


def _field(label: str, value: float | None, fmt: str) -> list[str]:
    if value is None:
        return []
    return [f"{label} {fmt.format(value) if math.isfinite(value) else 'n/a'}"]
