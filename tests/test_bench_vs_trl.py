"""The pure parts of ``benchmarks/bench_vs_trl.py``: curve interpolation, budgets, seed
statistics, the run order and the table (no training here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load():
    path = ROOT / "benchmarks" / "bench_vs_trl.py"
    spec = importlib.util.spec_from_file_location("bench_vs_trl", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


bench = _load()


def _run(label, seed, points, profile=None):
    pts = [{"step": s, "wall_s": w, "cpu_s": w / 2, "tokens": t, "avg": a, "greedy": g,
            "load": 1.0} for s, w, t, a, g in points]
    return {"label": label, "seed": seed, "points": pts, "wall_s": pts[-1]["wall_s"],
            "cpu_s": pts[-1]["cpu_s"], "tokens": pts[-1]["tokens"], "load_mean": 1.0,
            "profile": profile or {"generate": 1.0, "score": 0.5, "update": 2.0}}


CURVE = [(0, 0.0, 0, 0.4, 0.8), (10, 10.0, 1000, 0.6, 0.9), (20, 30.0, 2000, 0.9, 1.0)]


def test_value_at_interpolates_linearly_between_checkpoints():
    points = _run("x", 0, CURVE)["points"]
    assert bench.value_at(points, "wall_s", 0.0, "avg") == pytest.approx(0.4)
    assert bench.value_at(points, "wall_s", 5.0, "avg") == pytest.approx(0.5)
    assert bench.value_at(points, "wall_s", 20.0, "avg") == pytest.approx(0.75)
    assert bench.value_at(points, "tokens", 1500, "greedy") == pytest.approx(0.95)
    assert bench.value_at(points, "wall_s", 30.0, "avg") == pytest.approx(0.9)


def test_value_at_beyond_the_run_is_unknown():
    points = _run("x", 0, CURVE)["points"]
    assert bench.value_at(points, "wall_s", 30.5, "avg") is None
    assert bench.value_at(points, "tokens", -1, "avg") is None


def test_stats_mean_sample_std_and_range():
    s = bench.stats([0.5, 0.7, None, 0.9])
    assert s["n"] == 3 and s["mean"] == pytest.approx(0.7)
    assert s["std"] == pytest.approx(0.2) and (s["min"], s["max"]) == (0.5, 0.9)
    assert bench.stats([0.3])["std"] == 0.0
    assert bench.stats([None]) is None


def test_budgets_are_what_every_main_run_reached():
    runs = [_run("verimath", 0, CURVE),
            _run("trl", 0, [(0, 0, 0, 0.4, 0.8), (20, 40.0, 1200, 0.8, 1.0)]),
            _run("verimath-no-ds", 0, [(0, 0, 0, 0.4, 0.8), (20, 5.0, 100, 0.5, 0.9)])]
    assert bench.budgets(runs) == {"wall_s": 30.0, "tokens": 1200, "cpu_s": 15.0}
    del runs[1]["cpu_s"]  # a run recorded without CPU time: no CPU budget
    assert "cpu_s" not in bench.budgets(runs)


def test_summarize_compares_at_the_budgets_per_label():
    runs = [_run("verimath", 0, CURVE), _run("verimath", 1, CURVE),
            _run("trl", 0, [(0, 0, 0, 0.4, 0.8), (20, 40.0, 1200, 0.8, 1.0)])]
    budget = bench.budgets(runs)
    rows = {r["label"]: r for r in bench.summarize(runs, budget)}
    assert list(rows) == ["verimath", "trl"]
    v, t = rows["verimath"], rows["trl"]
    assert v["final_avg"]["mean"] == pytest.approx(0.9) and v["final_avg"]["n"] == 2
    assert v["wall_s_avg"]["mean"] == pytest.approx(0.9)  # budget 30 s: its last point
    assert t["wall_s_avg"]["mean"] == pytest.approx(0.4 + 0.4 * 30 / 40)
    assert v["tokens_avg"]["mean"] == pytest.approx(0.6 + 0.3 * 0.2)  # 1200 tokens
    assert v["cpu_s_avg"]["mean"] == pytest.approx(0.9)  # 15 CPU s: its last point
    assert v["tokens_per_s"]["mean"] == pytest.approx(2000 / 30)
    assert v["profile"] == {"generate": 1.0, "score": 0.5, "update": 2.0}


def test_format_table_has_a_row_per_label_and_the_budgets():
    runs = [_run("verimath", 0, CURVE), _run("trl", 0, CURVE)]
    budget = bench.budgets(runs)
    table = bench.format_table(bench.summarize(runs, budget), budget)
    assert "avg@16 30 s wall" in table and "avg@16 15 s CPU" in table
    assert "avg@16 0.002M tok" in table
    assert sum(line.startswith("| verimath |") for line in table.splitlines()) == 2
    assert "| trl | 1 | 90.0 | 100.0 | 90.0 | 100.0 |" in table


def test_only_the_other_rows_give_a_table_of_their_ends():
    runs = [_run("verimath-no-ds", 0, CURVE), _run("verimath-paper-ds", 0, CURVE)]
    assert bench.budgets(runs) == {}
    table = bench.format_table(bench.summarize(runs, {}), {})
    assert "| verimath-no-ds | 1 | 90.0 | 100.0 |" in table.splitlines()
    assert "wall" not in table.splitlines()[0] and "tok" not in table.splitlines()[0]


def test_schedule_interleaves_the_trainers_then_runs_each_variant_once():
    order = bench.schedule([0, 1], ["verimath", "trl", "verimath-no-ds"], extra_seed=0)
    assert order == [("verimath", 0), ("trl", 0), ("verimath", 1), ("trl", 1),
                     ("verimath-no-ds", 0)]
    order = bench.schedule([0, 1], ["verimath", "trl", "verimath-budget"], extra_seed=0)
    assert order == [("verimath", 0), ("trl", 0), ("verimath-budget", 0),
                     ("verimath", 1), ("trl", 1), ("verimath-budget", 1)]


def test_the_budget_variant_takes_the_tokens_of_trls_run_of_its_seed():
    runs = [{**_run("trl", 0, CURVE), "tokens": 594_112},
            {**_run("trl", 1, CURVE), "tokens": 593_870}]
    variant = bench.with_budget(bench.VARIANTS["verimath-budget"], 1, runs)
    assert variant.overrides == ("optim.token_budget=593870",)
    assert bench.with_budget(bench.VARIANTS["verimath"], 1, runs) is bench.VARIANTS["verimath"]
    with pytest.raises(ValueError, match="add trl to --variants"):
        bench.with_budget(bench.VARIANTS["verimath-budget"], 2, runs)


def _load_runner():
    path = ROOT / "benchmarks" / "vs_trl_runs.py"
    spec = importlib.util.spec_from_file_location("vs_trl_runs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_runner_takes_a_variants_overrides_after_its_options(tmp_path):
    runner = _load_runner()
    variant = bench.VARIANTS["verimath-paper-ds"]
    args = runner.parse_args(["verimath", "--model", "m", "--seed", "1", "--result",
                              str(tmp_path / "r.json"), *variant.overrides])
    assert args.what == "verimath" and args.seed == 1
    assert args.overrides == list(variant.overrides)


def test_every_verimath_name_the_runner_imports_exists():
    """The runner imports inside its functions: a renamed module or function would only
    fail hours into a benchmark."""
    import ast
    import importlib

    trees = [ast.parse(path.read_text()) for path in (ROOT / "benchmarks").glob("vs_trl_*.py")]
    imports = [node for tree in trees for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("verimath")]
    assert imports
    for node in imports:
        module = importlib.import_module(node.module)
        for alias in node.names:
            assert hasattr(module, alias.name), f"{node.module}.{alias.name}"
