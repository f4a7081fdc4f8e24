"""``verimath plot``: series from metrics files, key patterns, the PNG, and user errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from verimath.trainer.cli import main as verimath
from verimath.trainer.run.plot_cli import run_series, select_keys

BLUE, ORANGE = (0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E)  # matplotlib's C0 and C1


def write_run(folder, steps: int, *, accuracy_slope: float, tokens_per_step: float):
    folder.mkdir(parents=True)
    lines = [{"step": 0, "eval/avg@4": 0.2, "eval/greedy": 0.3}]
    for step in range(1, steps + 1):
        lines.append({"step": step, "reward/accuracy": 0.2 + accuracy_slope * step,
                      "compute/generated_tokens": tokens_per_step, "policy/entropy": 1.0 / step,
                      "sampling/kept_groups": 8, "sampling/generated_groups": 16,
                      "sampling/hit_cap": step % 2 == 0, "note": "x",
                      **({"eval/avg@4": 0.2 + accuracy_slope * step} if step % 5 == 0 else {})})
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return folder


def test_series_accumulate_generated_tokens_and_derive_the_kept_fraction():
    records = [{"step": 0, "eval/avg@4": 0.1},
               {"step": 1, "compute/generated_tokens": 100, "sampling/kept_groups": 4,
                "sampling/generated_groups": 16, "flag": True, "loss/policy": None},
               {"step": 2, "compute/generated_tokens": 50, "sampling/kept_groups": 8,
                "sampling/generated_groups": 8},
               {"step": 2, "compute/generated_tokens": 60, "sampling/kept_groups": 8,
                "sampling/generated_groups": 16}]  # step 2 logged again: the last one counts
    series = run_series(records)
    assert series["eval/avg@4"] == [(0, 0.0, 0.1)]
    assert series["compute/generated_tokens"] == [(1, 100.0, 100.0), (2, 160.0, 60.0)]
    assert series["sampling/kept_frac"] == [(1, 100.0, 0.25), (2, 160.0, 0.5)]
    assert "flag" not in series and "loss/policy" not in series


def test_keys_select_by_name_and_pattern_in_order():
    available = {"eval/avg@4", "eval/greedy", "clip/frac_low", "clip/frac_high", "loss/policy"}
    assert select_keys(["clip/*", "eval/avg@*", "missing", "clip/frac_low"], available) == [
        "clip/frac_high", "clip/frac_low", "eval/avg@4"]


@pytest.mark.parametrize("x", ["step", "generated_tokens"])
def test_two_runs_overlaid_in_one_png(tmp_path, x):
    from matplotlib.image import imread

    a = write_run(tmp_path / "dapo", 20, accuracy_slope=0.02, tokens_per_step=1000)
    b = write_run(tmp_path / "grpo", 15, accuracy_slope=0.01, tokens_per_step=500)
    png = tmp_path / "out" / "curves.png"
    assert verimath(["plot", str(a), str(b / "metrics.jsonl"), "--x", x, "--output", str(png),
                     "--keys", "eval/*", "reward/accuracy", "sampling/kept_frac"]) == 0
    image = (imread(png)[..., :3] * 255).astype(int)  # (H, W, 3)
    assert image.shape[1] > 3 * image.shape[0] / 2  # four panels: 3 columns, 2 rows
    for color in (BLUE, ORANGE):  # both runs are drawn
        close = (np.abs(image - np.array(color)).sum(-1) < 40).sum()
        assert close > 500, f"few pixels of color {color}"


def test_default_keys_on_a_real_shaped_run(tmp_path, capsys):
    run = write_run(tmp_path / "run", 10, accuracy_slope=0.01, tokens_per_step=100)
    assert verimath(["plot", str(run), "--output", str(tmp_path / "p.png")]) == 0
    assert "5 panels, 1 run(s)" in capsys.readouterr().out  # the default keys present here


def test_errors_exit_2(tmp_path, capsys):
    assert verimath(["plot", str(tmp_path / "missing"), "--output", str(tmp_path / "p.png")]) == 2
    assert "no metrics.jsonl" in capsys.readouterr().err
    run = write_run(tmp_path / "run", 3, accuracy_slope=0.1, tokens_per_step=10)
    assert verimath(["plot", str(run), "--keys", "nothing/*"]) == 2
    assert "none of the keys" in capsys.readouterr().err
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "metrics.jsonl").write_text('{"step": 1, "reward/accuracy": 0.5}\n')
    assert verimath(["plot", str(bare), "--x", "generated_tokens"]) == 2
    assert "compute/generated_tokens" in capsys.readouterr().err
    assert not (tmp_path / "p.png").exists()
