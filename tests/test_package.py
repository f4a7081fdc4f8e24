"""The package maps four folders into one namespace and keeps torch out of envs/rewards."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path


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


def test_regular_install_wheel_holds_only_the_verimath_namespace(tmp_path):
    """A regular (non-editable) install: the built wheel maps the folders under verimath/."""
    root = Path(__file__).resolve().parents[1]
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(root)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("verimath-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"verimath", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    for part in ("envs", "rewards", "trainer", "datasets_prep"):
        assert f"verimath/{part}/__init__.py" in names
    assert "verimath/trainer/configs/tiny.yaml" in names or not (root / "trainer/configs/tiny.yaml").exists()
