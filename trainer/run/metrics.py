"""Per-step metrics as JSON lines (plus optional TensorBoard and W&B), and a learning curve.

``metrics.jsonl`` holds one JSON object per line, ``{"step": n, "<namespace>/<name>": x}``,
e.g. ``{"step": 3, "loss/policy": 0.012, "reward/correct_mean": 0.41}``. Values are
numbers, booleans, strings or null. Non-finite numbers (NaN, inf) are written as null,
since JSON has no spelling for them; 0-dim tensors and numpy scalars become plain
numbers. Every line is flushed when written, so ``tail -f`` and a crash both see whole
lines. ``read_metrics`` skips a torn last line.

``make_metric_loggers(run_dir, backends)`` returns one writer with the same ``write``/``close``
interface that sends each step to every backend of ``logging.backends``: ``jsonl`` (this
file's :class:`MetricsWriter`, always first, so every value is checked once), ``tensorboard``
and ``wandb`` (``metric_backends``).
"""

from __future__ import annotations

import json
import math
import numbers
import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from verimath.trainer.config.logging import check_backends
from verimath.trainer.run.metric_backends import TensorBoardWriter, WandbWriter

__all__ = ["DEFAULT_PLOT_KEYS", "MetricLoggers", "MetricsWriter",
           "check_backend_packages", "check_backends", "make_metric_loggers",
           "plot_learning_curve", "read_metrics"]

# The trainer's own metric names (``verimath train`` with eval.k=4), so that
# ``plot_learning_curve("runs/x/metrics.jsonl", "curve.png")`` draws a run's curves as is.
DEFAULT_PLOT_KEYS = (
    "reward/accuracy",
    "eval/avg@4",
    "loss/policy",
    "sampling/kept_groups",
    "policy/entropy",
    "length/mean",
)


def _scalar(key: str, value: Any):
    """A JSON-able scalar for ``value``; NaN/inf -> None."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if hasattr(value, "item") and callable(value.item):  # torch / numpy scalars
        size = getattr(value, "numel", None)
        n = size() if callable(size) else getattr(value, "size", 1)
        if n != 1:
            shape = tuple(getattr(value, "shape", ()))
            raise ValueError(f"metric {key!r} has shape {shape}; log a scalar (e.g. its mean)")
        value = value.item()
        if isinstance(value, bool):
            return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        return value if math.isfinite(value) else None
    raise ValueError(f"metric {key!r} has unsupported type {type(value).__name__}")


class MetricsWriter:
    """Appends one JSON line per ``write(step, metrics)`` to ``path`` (parents created).

    Use as a context manager or call ``close()`` (idempotent). ``resume_step=n`` first
    drops the lines with ``step > n`` (left by a run that crashed after its last
    checkpoint), so a resumed run does not log the same step twice.
    """

    def __init__(self, path: str | os.PathLike, *, resume_step: int | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume_step is not None and self.path.exists():
            self._truncate_after(resume_step)
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - owned resource
        if self._file.tell() > 0 and not _ends_with_newline(self.path):
            self._file.write("\n")  # end a torn line so the next record stays parsable

    def _truncate_after(self, step: int) -> None:
        kept = [r for r in read_metrics(self.path) if r["step"] <= step]
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
        os.replace(tmp, self.path)

    @property
    def closed(self) -> bool:
        return self._file is None

    def write(self, step: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Append ``{"step": step, **metrics}`` and return the record written.

        Raises:
            ValueError: writer closed, a key that is not a string or is ``"step"``, or a
                value that is not a scalar (a tensor of several elements, a list...).
        """
        if self._file is None:
            raise ValueError(f"MetricsWriter for {self.path} is closed")
        if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
            raise ValueError(f"step must be an integer >= 0, got {step!r}")
        record: dict[str, Any] = {"step": int(step)}
        for key, value in metrics.items():
            if not isinstance(key, str) or key == "step":
                raise ValueError(f"metric keys must be strings other than 'step', got {key!r}")
            record[key] = _scalar(key, value)
        self._file.write(json.dumps(record, allow_nan=False) + "\n")
        self._file.flush()
        return record

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        file = getattr(self, "_file", None)
        if file is not None:
            file.close()


class MetricLoggers:
    """Fans each ``write(step, metrics)`` out to several writers; the first one (a
    :class:`MetricsWriter`) checks the values and its record goes to the others.
    ``close()`` closes all of them (idempotent), even when one fails."""

    def __init__(self, writers: list) -> None:
        if not writers or not isinstance(writers[0], MetricsWriter):
            raise ValueError("MetricLoggers needs a MetricsWriter first")
        self.writers = list(writers)
        self.closed = False

    @property
    def path(self) -> Path:
        """The ``metrics.jsonl`` file."""
        return self.writers[0].path

    def write(self, step: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        if self.closed:
            raise ValueError(f"the metric loggers of {self.path.parent} are closed")
        record = self.writers[0].write(step, metrics)
        for writer in self.writers[1:]:
            writer.write(record["step"], record)
        return record

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        errors = []
        for writer in self.writers:
            try:
                writer.close()
            except Exception as exc:  # close the others before reporting it
                errors.append(exc)
        if errors:
            raise errors[0]

    def __enter__(self) -> MetricLoggers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


BACKEND_PACKAGES = {"tensorboard": ("tensorboardX", "tensorboard"), "wandb": ("wandb", "wandb")}
"""Backend -> (module it imports, verimath extra that installs it)."""


def check_backend_packages(backends: Iterable[str]) -> None:
    """Fail before a run starts when a backend's package is missing: ValueError naming
    ``logging.backends`` and the extra to install (nothing is imported)."""
    import importlib.util

    for backend in check_backends(backends)[1:]:
        module, extra = BACKEND_PACKAGES[backend]
        if importlib.util.find_spec(module) is None:
            raise ValueError(f"logging.backends includes {backend}, which needs {module}: "
                             f"pip install 'verimath[{extra}]'")


def make_metric_loggers(run_dir: str | os.PathLike, backends: Iterable[str] = ("jsonl",), *,
                        resume_step: int | None = None, config: Mapping[str, Any] | None = None,
                        wandb_project: str = "verimath", wandb_mode: str | None = None,
                        run_name: str | None = None) -> MetricLoggers:
    """The writers of ``backends`` for a run directory: ``run_dir/metrics.jsonl``,
    ``run_dir/tensorboard/`` event files, and a W&B run stored in ``run_dir/wandb/`` (with
    ``config`` as its config). ``resume_step`` drops (jsonl) or hides (TensorBoard) steps
    after it.

    Raises:
        ValueError: an unknown backend, or jsonl missing.
        ImportError: tensorboardX or wandb is not installed (the message names the extra).
    """
    run_dir, backends = Path(run_dir), check_backends(backends)
    writers: list = [MetricsWriter(run_dir / "metrics.jsonl", resume_step=resume_step)]
    try:
        for backend in backends[1:]:
            if backend == "tensorboard":
                writers.append(TensorBoardWriter(run_dir / "tensorboard", resume_step=resume_step))
            else:
                writers.append(WandbWriter(run_dir, project=wandb_project, name=run_name,
                                           config=config, mode=wandb_mode))
    except BaseException:
        for writer in writers:
            writer.close()
        raise
    return MetricLoggers(writers)


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def read_metrics(path: str | os.PathLike) -> list[dict[str, Any]]:
    """All records of a metrics file, in order.

    Lines that are not a JSON object with an integer ``"step"`` (torn by a crash) are
    skipped with one warning naming the file and line numbers.
    """
    path = Path(path)
    records, bad = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict) and isinstance(record.get("step"), int):
            records.append(record)
        else:
            bad.append(number)
    if bad:
        warnings.warn(
            f"{path}: skipped {len(bad)} unreadable line(s) (torn writes?): {bad[:10]}",
            stacklevel=2,
        )
    return records


def _series(records: Iterable[Mapping[str, Any]], key: str) -> tuple[list[int], list[float]]:
    xs, ys = [], []
    for r in records:
        value = r.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            xs.append(r["step"])
            ys.append(value)
    return xs, ys


def plot_learning_curve(
    metrics_path: str | os.PathLike,
    png_path: str | os.PathLike,
    keys: Iterable[str] = DEFAULT_PLOT_KEYS,
    *,
    title: str | None = None,
) -> Path:
    """Plot ``keys`` against ``step`` from a metrics file into a PNG, one panel per key.

    Keys absent from the file are skipped; sparse keys (evaluations every N steps) are
    drawn with markers. Uses matplotlib's Agg canvas directly (no pyplot, no global
    backend change), imported only here.

    Raises:
        ImportError: matplotlib is not installed (with the pip command to fix it).
        ValueError: none of ``keys`` has a numeric value in the file.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(
            "plot_learning_curve needs matplotlib: pip install 'verimath[plot]' "
            "(or pip install matplotlib)"
        ) from exc
    records = read_metrics(metrics_path)
    panels = [(k, *_series(records, k)) for k in keys]
    panels = [p for p in panels if p[1]]
    if not panels:
        raise ValueError(f"none of the keys {list(keys)} has a numeric value in {metrics_path}")
    fig = Figure(figsize=(4.0 * min(len(panels), 3), 3.0 * math.ceil(len(panels) / 3)))
    FigureCanvasAgg(fig)
    n_steps = len({r["step"] for r in records})
    for index, (key, xs, ys) in enumerate(panels, start=1):
        ax = fig.add_subplot(math.ceil(len(panels) / 3), min(len(panels), 3), index)
        sparse = len(xs) < max(2, n_steps // 2)
        ax.plot(xs, ys, marker="o" if sparse else None, markersize=3, linewidth=1.2)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    png_path = Path(png_path)
    png_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png_path, dpi=110)
    return png_path
