"""The package maps four folders into one namespace and keeps torch out of envs/rewards.

The core install (``pip install verimath``) has no torch: ``test_core_install_...`` builds a
fresh virtual environment (no system site-packages), installs the wheel with its core
dependencies from the package index (or, offline, from ``$VERIMATH_WHEELHOUSE`` with
``--no-index``) and uses it. That takes 15-45 s, mostly the download of numba, numpy and
sympy; it is skipped with a reason when no index can be reached.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str) -> str:
    # Run outside the checkout so that the repository root is not on sys.path.
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    return out.stdout.strip()


def test_envs_and_rewards_import_without_torch():
    code = (
        "import sys, verimath.envs, verimath.rewards; "
        "print(sorted(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules))"
    )
    assert _run(code) == "[]"


def test_no_generic_top_level_packages():
    code = (
        "import importlib.util as u; "
        "print([n for n in ('envs', 'rewards', 'trainer', 'datasets_prep') if u.find_spec(n)])"
    )
    assert _run(code) == "[]"


def test_all_four_parts_import_under_verimath():
    code = (
        "import verimath.envs, verimath.rewards, verimath.trainer, verimath.datasets_prep; "
        "print(verimath.rewards.__name__)"
    )
    assert _run(code) == "verimath.rewards"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The verimath wheel, built from this checkout without build isolation."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("verimath-*.whl")
    return built


def test_regular_install_wheel_holds_only_the_verimath_namespace(wheel):
    """A regular (non-editable) install: the built wheel maps the folders under verimath/."""
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"verimath", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    for part in ("envs", "rewards", "trainer", "datasets_prep"):
        assert f"verimath/{part}/__init__.py" in names
    packages = {n.rsplit("/", 1)[0] for n in names if n.endswith("/__init__.py")}
    for part in ("envs", "rewards", "trainer", "datasets_prep"):  # and every sub-package
        for init in (ROOT / part).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT).as_posix()
            assert f"verimath/{rel}" in packages, f"{rel} is not in the wheel"
    assert "verimath/trainer/config/presets/tiny.yaml" in names


def _index_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
        return True
    except OSError:
        return False


def test_wheel_metadata_keeps_torch_in_the_train_extra(wheel):
    meta = zipfile.ZipFile(wheel).read("verimath-0.1.0.dist-info/METADATA").decode()
    requires = [line for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    core = [r for r in requires if "extra ==" not in r]
    assert not any(name in r for r in core for name in ("torch", "transformers", "trl"))
    assert any(r.startswith("Requires-Dist: torch") and "extra == \"train\"" in r for r in requires)
    assert any(r.startswith("Requires-Dist: math-verify") for r in core)


@pytest.mark.slow
def test_core_install_scores_without_torch(wheel, tmp_path):
    """Fresh venv, core install only: rewards and envs import, `verimath score` runs,
    `verimath train` names the extra, and torch was never downloaded."""
    wheelhouse = os.environ.get("VERIMATH_WHEELHOUSE")
    if not wheelhouse and not _index_reachable():
        pytest.skip("no package index reachable; set VERIMATH_WHEELHOUSE to a folder of wheels")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python, report = venv / "bin" / "python", tmp_path / "report.json"
    source = ["--no-index", "--find-links", wheelhouse] if wheelhouse else []
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile",
         "--only-binary=:all:", "--report", str(report), *source, str(wheel)],
        check=True, capture_output=True, text=True, timeout=600,
    )
    installed = {i["metadata"]["name"].lower() for i in json.loads(report.read_text())["install"]}
    assert {"verimath", "math-verify", "numba", "gymnasium"} <= installed
    assert not installed & {"torch", "transformers", "triton"}, sorted(installed)
    probe = ("import importlib.util as u, verimath.rewards, verimath.envs, verimath.datasets_prep; "
             "print(u.find_spec('torch'), u.find_spec('transformers'))")
    assert _in(venv, [str(python), "-c", probe]).stdout.split() == ["None", "None"]
    data = tmp_path / "responses.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in (
        {"response": "So 6 * 7 = 42.\nAnswer: 42", "answer": "42"},
        {"response": "The answer is 0.5", "answer": "\\frac{1}{2}"},
        {"response": "Answer: 41", "answer": "42"},
    )))
    scored = _in(venv, [str(venv / "bin" / "verimath"), "score", "--input", str(data),
                        "--output", "-", "--style", "flexible", "--no-progress"])
    verdicts = [json.loads(line)["correct"] for line in scored.stdout.splitlines()]
    assert verdicts == [True, True, False]
    train = _in(venv, [str(venv / "bin" / "verimath"), "train"], check=False)
    assert train.returncode == 2
    assert train.stderr.strip().splitlines() == [
        "verimath train: needs torch and transformers; install them with: "
        "pip install 'verimath[train]'"
    ]


def _in(venv: Path, cmd: list[str], check: bool = True) -> subprocess.CompletedProcess:
    """Run ``cmd`` outside the checkout, with only the venv's packages importable."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(cmd, capture_output=True, text=True, check=check, env=env,
                          cwd=tempfile.gettempdir(), timeout=300)


@pytest.mark.parametrize("argv", [["train"], ["eval", "--model", "m", "--data", "d.jsonl"]])
def test_torch_subcommands_without_the_extra_name_it(argv, monkeypatch, capsys):
    import importlib.util

    from verimath.trainer import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"verimath {argv[0]}: needs torch; install them with: "
                   "pip install 'verimath[train]'"]
