"""metrics.jsonl writing/reading and the learning-curve plot."""

from __future__ import annotations

import builtins
import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.trainer.run.metrics import MetricsWriter, plot_learning_curve, read_metrics


def test_writes_one_flushed_line_per_step_with_plain_scalars(tmp_path):
    path = tmp_path / "run" / "metrics.jsonl"
    writer = MetricsWriter(path)
    writer.write(
        0,
        {
            "loss/policy": torch.tensor(0.5, requires_grad=True) * 1,
            "reward/correct_mean": np.float32(0.25),
            "sampling/kept_groups": np.int64(7),
            "sampling/hit_cap": True,
            "policy/ratio_max": float("nan"),
            "grad/norm": float("inf"),
            "note": "cap hit",
            "eval/accuracy": None,
        },
    )
    # flushed: readable before close
    (line,) = path.read_text().splitlines()
    assert json.loads(line) == {
        "step": 0,
        "loss/policy": 0.5,
        "reward/correct_mean": 0.25,
        "sampling/kept_groups": 7,
        "sampling/hit_cap": True,
        "policy/ratio_max": None,
        "grad/norm": None,
        "note": "cap hit",
        "eval/accuracy": None,
    }
    assert isinstance(json.loads(line)["sampling/kept_groups"], int)
    writer.write(1, {"loss/policy": 0.25})
    writer.close()
    writer.close()  # idempotent
    assert writer.closed
    assert [r["step"] for r in read_metrics(path)] == [0, 1]
    with pytest.raises(ValueError, match="closed"):
        writer.write(2, {})


def test_context_manager_appends_across_runs(tmp_path):
    path = tmp_path / "m.jsonl"
    with MetricsWriter(path) as w:
        w.write(0, {"a/b": 1})
    with MetricsWriter(path) as w:
        w.write(1, {"a/b": 2})
    assert w.closed
    assert [r["a/b"] for r in read_metrics(path)] == [1, 2]


@pytest.mark.parametrize(
    "metrics, match",
    [
        ({"loss/policy": torch.ones(3)}, r"'loss/policy' has shape \(3,\)"),
        ({"x/y": [1, 2]}, "unsupported type list"),
        ({"step": 3}, "other than 'step'"),
        ({1: 0.5}, "strings"),
    ],
)
def test_bad_metrics_are_named(tmp_path, metrics, match):
    with MetricsWriter(tmp_path / "m.jsonl") as w, pytest.raises(ValueError, match=match):
        w.write(0, metrics)


def test_bad_step(tmp_path):
    with MetricsWriter(tmp_path / "m.jsonl") as w:
        for step in (-1, 1.5, True):
            with pytest.raises(ValueError, match="step"):
                w.write(step, {})


def test_resume_drops_steps_after_the_checkpoint_and_torn_lines(tmp_path):
    path = tmp_path / "m.jsonl"
    with MetricsWriter(path) as w:
        for step in range(6):
            w.write(step, {"loss/policy": step / 10})
    with open(path, "a") as f:
        f.write('{"step": 6, "loss/pol')  # a crash mid-line
    with pytest.warns(UserWarning, match="skipped 1 unreadable"):
        assert [r["step"] for r in read_metrics(path)] == list(range(6))
    with pytest.warns(UserWarning), MetricsWriter(path, resume_step=3) as w:
        w.write(4, {"loss/policy": 0.0})
    assert [r["step"] for r in read_metrics(path)] == [0, 1, 2, 3, 4]


def test_append_after_a_torn_line_keeps_new_records_readable(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 0, "a": 1}\n{"step": 1, "a"')
    with MetricsWriter(path) as w:
        w.write(1, {"a": 2})
    with pytest.warns(UserWarning, match=r"\[2\]"):
        assert read_metrics(path) == [{"step": 0, "a": 1}, {"step": 1, "a": 2}]


@settings(deadline=None, max_examples=60)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=12).filter(lambda k: k != "step"),
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.integers(-(2**62), 2**62),
            st.booleans(),
            st.text(max_size=8),
        ),
        max_size=6,
    )
)
def test_round_trip_of_any_scalars(tmp_path_factory, metrics):
    path = tmp_path_factory.mktemp("m") / "metrics.jsonl"
    with MetricsWriter(path) as w:
        written = w.write(3, metrics)
    (record,) = read_metrics(path)
    assert record == written
    for key, value in metrics.items():
        if isinstance(value, float) and not math.isfinite(value):
            assert record[key] is None
        else:
            assert record[key] == value and type(record[key]) is type(value)


def test_plot_learning_curve(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "metrics.jsonl"
    with MetricsWriter(path) as w:
        for step in range(10):
            extra = {"eval/avg@4": step / 10} if step % 5 == 0 else {}
            w.write(step, {"reward/accuracy": step / 20, "loss/policy": 1 / (step + 1), **extra})
    png = plot_learning_curve(path, tmp_path / "plots" / "curve.png", title="tiny")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    with pytest.raises(ValueError, match="none of the keys"):
        plot_learning_curve(path, tmp_path / "x.png", keys=("nothing/here",))


def test_plot_without_matplotlib_says_how_to_install(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 0, "loss/policy": 1.0}\n')
    with pytest.raises(ImportError, match=r"verimath\[plot\]"):
        plot_learning_curve(path, tmp_path / "x.png")
