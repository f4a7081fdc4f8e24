"""The benchmarks that need the real datasets skip with the reason on a clone without them,
so that ``make bench`` runs the others."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load(relative: str):
    spec = importlib.util.spec_from_file_location(Path(relative).stem, ROOT / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_prep_without_real_data_skips_with_the_reason(tmp_path, monkeypatch, capsys):
    bench = _load("benchmarks/bench_prep.py")
    monkeypatch.setattr(bench, "DATA", tmp_path)
    (tmp_path / "gsm8k").mkdir()  # a partial copy is not enough either
    (tmp_path / "gsm8k" / "train.jsonl").write_text("")
    assert bench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert f"skipped: real data not found at {tmp_path}" in out
    assert "gsm8k/test.jsonl" in out and "gsm8k/train.jsonl" not in out
    assert "VERIMATH_DATA_DIR" in out


def test_make_bench_runs_every_benchmark():
    makefile = (ROOT / "Makefile").read_text()
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        assert f"benchmarks/{script.name} $(BENCH_ARGS)" in makefile, script.name
