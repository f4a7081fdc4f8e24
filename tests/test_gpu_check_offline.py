"""scripts/gpu_check.sh on an air-gapped node: which mode a Python and a wheel folder give,
the folder's pieces (node freeze, what it leaves out, wheels of installed packages), and the
offline install into a fresh venv from a folder built here without network."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from script_modules import load_script

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"


wh = load_script("wheelhouse")
repack = load_script("wheel_repack")
NODE = {"python": "3.11", "machine": "x86_64", "torch": "2.11.0+cu128", "cuda": True,
        "transformers": "5.17.0", "vllm": False}
# The interpreter this venv was made from: no torch, and not this venv's packages.
BASE = getattr(sys, "_base_executable", sys.executable)


def test_mode_node_needs_a_folder_torch_and_transformers():
    assert wh.choose_mode(NODE, None) == "setup"
    assert wh.choose_mode(NODE, "wheels", {"python_version": "3.11"}) == "node"
    assert wh.choose_mode({**NODE, "cuda": False}, "wheels") == "node"  # runs the quick sizes
    for missing in ("torch", "transformers"):
        with pytest.raises(ValueError, match=f"cannot import {missing}; offline mode"):
            wh.choose_mode({**NODE, missing: None}, "wheels")
    with pytest.raises(ValueError, match="wheels are for Python 3.12.*--python-version 3.11"):
        wh.choose_mode(NODE, "wheels", {"python_version": "3.12"})
    arm = {"python_version": "3.11", "platforms": list(wh.PLATFORMS)}
    with pytest.raises(ValueError, match="this machine is aarch64.*manylinux_2_28_aarch64"):
        wh.choose_mode({**NODE, "machine": "aarch64"}, "wheels", arm)


@given(st.dictionaries(st.sampled_from(["torch", "transformers", "cuda", "vllm"]),
                       st.one_of(st.none(), st.booleans(), st.just("2.11.0")), max_size=4),
       st.one_of(st.none(), st.just("wheels")))
def test_mode_is_node_exactly_when_a_folder_meets_torch_and_transformers(found, wheels):
    try:
        mode = wh.choose_mode(found, wheels)
    except ValueError:
        mode = "error"
    usable = bool(found.get("torch")) and bool(found.get("transformers"))
    assert mode == ("setup" if not wheels else "node" if usable else "error")


def test_mode_command_names_a_missing_folder_and_a_python_without_torch(tmp_path):
    def mode(*args):
        return subprocess.run([sys.executable, str(SCRIPTS / "wheelhouse.py"), "mode", *args],
                              capture_output=True, text=True, check=False)

    done = mode("--wheels", str(tmp_path / "nope"))
    assert done.returncode == 2 and "no such folder" in done.stderr
    done = mode("--wheels", str(tmp_path), "--python", BASE)
    if wh.probe(BASE)["torch"] is None:
        assert done.returncode == 2 and "cannot import torch" in done.stderr
    shell = subprocess.run([str(SCRIPTS / "gpu_check.sh"), "--offline", str(tmp_path / "nope")],
                           capture_output=True, text=True, check=False)
    assert shell.returncode == 2 and "no such folder" in shell.stderr


def test_node_freeze_pins_and_names_a_file_without_pins(tmp_path):
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("PyYAML==6.0.3\ntorch==2.11.0+cu128\n-e git+https://x/y#egg=z\n"
                      "numpy==2.1.0 ; python_version >= '3.10'\nfoo @ file:///tmp/foo\n")
    pins = wh.node_freeze(str(freeze))
    assert pins == {"pyyaml": "6.0.3", "torch": "2.11.0+cu128", "numpy": "2.1.0"}
    assert wh.leave_out(["PyYAML", "gymnasium", "NumPy"], pins) == {"pyyaml", "numpy"}
    assert wh.leave_out(["numpy", "sympy", "numba", "tqdm"], {}) == {"numpy", "sympy", "tqdm"}
    freeze.write_text("# nothing\n")
    with pytest.raises(ValueError, match="no 'name==version' line"):
        wh.node_freeze(str(freeze))


def test_repacked_wheel_records_each_file_with_its_hash(tmp_path):
    dist = repack.newest("cloudpickle")
    wheel = repack.repack(dist, tmp_path)
    assert wheel.name == f"cloudpickle-{dist.version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as zf:
        (record,) = [n for n in zf.namelist() if n.endswith(".dist-info/RECORD")]
        rows = [line.split(",") for line in zf.read(record).decode().splitlines()]
        assert {r[0] for r in rows} == set(zf.namelist())
        for path, digest, size in rows:
            if path == record:
                continue
            data = zf.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == "sha256=" + expected.decode() and int(size) == len(data)
        assert not any("__pycache__" in n or n.endswith("/INSTALLER") for n in zf.namelist())


@pytest.mark.slow
def test_offline_install_from_a_folder_built_without_network(tmp_path):
    """The folder from the packages installed here (``--from-installed``, no network), the
    node's packages (``pip freeze`` of the base interpreter) left out; a fresh venv over the
    base interpreter gets verimath from it alone (``--no-index``) and scores."""
    listed = subprocess.run([BASE, "-m", "pip", "freeze"], capture_output=True, text=True,
                            check=False)
    if listed.returncode != 0:
        pytest.skip(f"{BASE} has no pip to install with")
    freeze = tmp_path / "freeze.txt"
    freeze.write_text(listed.stdout or "pip==0\n")
    wheels, venv = tmp_path / "wheels", tmp_path / "node"
    subprocess.run([sys.executable, str(SCRIPTS / "wheelhouse.py"), "prepare", str(wheels),
                    "--from-installed", "--node-freeze", str(freeze), "--max-mib", "200"],
                   check=True, capture_output=True, timeout=300)
    manifest = json.loads((wheels / "wheelhouse.json").read_text())
    assert manifest["from_installed"] and any(w.startswith("verimath-") for w in manifest["wheels"])
    left_out = set(manifest["left_out_node_has"])
    assert not left_out & {wh.canonical(w.split("-")[0]) for w in manifest["wheels"]}
    done = subprocess.run([BASE, str(SCRIPTS / "wheelhouse.py"), "install", str(wheels),
                           "--venv", str(venv), "--python", BASE],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    probe = ("import verimath, numba, math_verify; from verimath.rewards.shaping import overlong; "
             "print(verimath.__path__[0]); "
             "print(overlong.overlong_penalty([1, 20], max_length=16, cache_length=4).tolist())")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True,
                         text=True, check=True, cwd=tempfile.gettempdir()).stdout.splitlines()
    assert out[0].startswith(str(venv)) and out[1] == "[0.0, -1.0]"
