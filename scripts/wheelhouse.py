"""A folder of wheels for a GPU node without network, and the offline install from it.

A cluster node often has a CUDA torch and transformers in its own Python but no way to reach
a package index. verimath needs little more: its core dependencies (gymnasium, math-verify
with latex2sympy2_extended and the antlr4 runtime, numba with llvmlite, ...). Three commands,
all standard library only, so the node's Python runs this file as it is::

    # on a connected machine (any OS; the wheels are for the node's platform and Python)
    python scripts/wheelhouse.py prepare WHEELS [--python-version 3.12] [--node-freeze FILE]
    # on the node (scripts/gpu_check.sh --offline WHEELS runs these two)
    python3 scripts/wheelhouse.py mode --wheels WHEELS      # node, setup, or exit 2: why not
    python3 scripts/wheelhouse.py install WHEELS --venv .venv-node

``prepare`` builds verimath's wheel (``pip wheel --no-deps``), resolves its core dependencies
for the target (``pip install --dry-run --report`` with ``--platform``, ``--python-version``,
``--only-binary=:all:``), leaves out what the node already has (the requirements of torch
and transformers, :data:`NODE_PROVIDES`, or every package of ``--node-freeze``, the output of
``pip freeze`` on the node, whose versions then constrain the resolution: numba must accept
the node's numpy), downloads the rest (``pip download --no-deps``) and fails if the folder
passes ``--max-mib`` (64). numba and llvmlite are binary wheels (llvmlite is most of the
size): they are built for one Python version and glibc, hence ``--python-version`` and
``--platform``. ``--from-installed`` builds the same folder without network from the
packages installed here (same platform and Python only; the tests use it).

``install`` creates a virtual environment with ``--system-site-packages`` (the node's torch,
transformers and numpy stay visible and are used) and installs verimath from the folder with
``--no-index``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = "wheelhouse.json"
# Requirements of torch and transformers (and theirs) that verimath's core shares: a node
# that imports both has them, so the folder leaves them out (numpy and sympy alone would
# add ~22 MiB).
NODE_PROVIDES = ("numpy", "sympy", "mpmath", "pyyaml", "tqdm", "typing-extensions",
                 "packaging", "filelock", "fsspec", "jinja2", "markupsafe", "networkx",
                 "huggingface-hub", "regex", "safetensors", "tokenizers", "requests")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux2014_x86_64")
SITE = """
import sys
print("\\n".join(p for p in sys.path if p.endswith(("site-packages", "dist-packages"))))
"""
PROBE = """
import json, platform, sys
out = {"python": "%d.%d" % sys.version_info[:2], "machine": platform.machine(), "torch": None,
       "cuda": False, "transformers": None, "vllm": False}
try:
    import torch
    out["torch"], out["cuda"] = torch.__version__, bool(torch.cuda.is_available())
except Exception as e:
    out["torch_error"] = repr(e)[:200]
try:
    import transformers
    out["transformers"] = transformers.__version__
except Exception as e:
    out["transformers_error"] = repr(e)[:200]
import importlib.util
out["vllm"] = importlib.util.find_spec("vllm") is not None
print(json.dumps(out))
"""


def canonical(name: str) -> str:
    """The PEP 503 form of a distribution name (``PyYAML`` -> ``pyyaml``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


# ---- on the node: which mode, and the offline install --------------------------------------

def probe(python: str) -> dict:
    """What ``python`` has: its version, torch (and whether it sees a GPU), transformers,
    vLLM."""
    done = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"wheelhouse: {python} could not run: {done.stderr.strip()[-300:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def choose_mode(found: dict, wheels: str | None, manifest: dict | None = None) -> str:
    """``"node"`` (use ``found``'s Python and install verimath from ``wheels``), or
    ``"setup"`` (no wheel folder: set up .venv from the network). Raises ``ValueError``
    naming what is missing when a wheel folder is given but cannot be used."""
    if not wheels:
        return "setup"
    missing = [name for name in ("torch", "transformers") if not found.get(name)]
    if missing:
        raise ValueError(f"--offline {wheels}: this Python ({found.get('python')}) cannot import "
                         f"{' and '.join(missing)}; offline mode installs neither (they are "
                         "the node's own); pick a Python that has them with --python")
    manifest = manifest or {}
    wanted = manifest.get("python_version")
    if wanted and wanted != found.get("python"):
        raise ValueError(f"--offline {wheels}: the wheels are for Python {wanted}, this Python "
                         f"is {found.get('python')}; prepare the folder again with "
                         f"--python-version {found.get('python')}")
    machine = found.get("machine")
    tags = manifest.get("platforms") or []
    if machine and tags and not manifest.get("from_installed") and \
            not any(tag.endswith(machine) for tag in tags):
        raise ValueError(f"--offline {wheels}: the wheels are for {', '.join(tags)}, this "
                         f"machine is {machine}; prepare the folder again with "
                         f"--platform manylinux_2_28_{machine}")
    return "node"


def read_manifest(wheels: str | Path) -> dict:
    """The folder's ``wheelhouse.json`` ({} when absent); a missing folder is an error."""
    folder = Path(wheels)
    if not folder.is_dir():
        raise ValueError(f"--offline {wheels}: no such folder (prepare it with "
                         "scripts/gpu_check.sh --prepare-wheels DIR on a connected machine)")
    path = folder / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else {}


def install(wheels: Path, venv: Path, python: str, pip: list[str] | None = None) -> Path:
    """A fresh venv at ``venv`` over ``python``'s packages (``--system-site-packages``) with
    verimath installed from ``wheels`` alone; returns the venv's Python."""
    outer = pip_supports_python(python)  # pip >= 22.3: no pip needed inside the venv
    made = subprocess.run([python, "-m", "venv", "--clear", "--system-site-packages", str(venv),
                           *(["--without-pip"] if outer else [])], check=False)
    if made.returncode != 0:
        raise SystemExit(f"wheelhouse: {python} -m venv {venv} failed; a Python whose pip is "
                         "22.3 or newer needs no ensurepip (Debian: python3-venv)")
    target = venv / "bin" / "python"
    # --system-site-packages reaches the base interpreter's packages only; when ``python`` is
    # itself a venv, its own site-packages come through this file
    site = subprocess.run([python, "-c", SITE], capture_output=True, text=True, check=True)
    (venv_site(target) / "_verimath_node.pth").write_text(site.stdout)
    pip = pip or ([python, "-m", "pip", "--python", str(target)] if outer
                  else [str(target), "-m", "pip"])
    env = offline_env()
    base = [*pip, "install", "-q", "--no-index", "--find-links", str(wheels),
            "--disable-pip-version-check"]
    # the dependencies, then verimath itself again: the node may hold another verimath
    for extra in ([], ["--no-deps", "--force-reinstall"]):
        done = subprocess.run([*base, *extra, "verimath"], capture_output=True, text=True,
                              check=False, env=env)
        if done.returncode != 0:
            raise SystemExit(f"wheelhouse: installing verimath from {wheels} failed:\n"
                             f"{done.stderr.strip()[-2000:]}")
    return target


def venv_site(python: Path) -> Path:
    done = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())


def offline_env() -> dict[str, str]:
    """This environment without pip's configuration (files and ``PIP_*`` variables): no
    index, find-links or constraints but those given on the command line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {**env, "PIP_CONFIG_FILE": os.devnull}


def pip_supports_python(python: str) -> bool:
    """Whether ``python -m pip`` has ``--python`` (pip 22.3 and later)."""
    done = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True,
                          check=False)
    m = re.match(r"pip (\d+)\.(\d+)", done.stdout)
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (22, 3)


# ---- on a connected machine: the folder -----------------------------------------------------

def build_verimath(folder: Path, offline: bool = False) -> Path:
    """verimath's own wheel, built from this checkout into ``folder``; ``offline``: the
    build backend (setuptools, wheel) comes from wheels of the newest installed copies."""
    with tempfile.TemporaryDirectory() as backend:
        flags = []
        if offline:
            from wheel_repack import installed_requirements, newest, repack

            for name in installed_requirements("setuptools", "wheel"):
                repack(newest(name), Path(backend))
            flags = ["--no-index", "--find-links", backend]
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *flags, "-w",
                        str(folder), str(ROOT)], check=True,
                       env=offline_env() if offline else None)
    return max(folder.glob("verimath-*.whl"), key=lambda p: p.stat().st_mtime)


def node_freeze(path: str | None) -> dict[str, str]:
    """``{canonical name: version}`` from a ``pip freeze`` file (lines ``name==version``)."""
    if not path:
        return {}
    pins = {}
    for line in Path(path).read_text().splitlines():
        m = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)", line)
        if m:
            pins[canonical(m.group(1))] = m.group(2)
    if not pins:
        raise ValueError(f"--node-freeze {path}: no 'name==version' line (write it on the node "
                         "with: python3 -m pip freeze > node-freeze.txt)")
    return pins


def target_flags(python_version: str, platforms: list[str]) -> list[str]:
    return ["--only-binary=:all:", "--python-version", python_version, "--implementation",
            "cp", *(f"--platform={p}" for p in platforms)]


def resolve(wheel: Path, flags: list[str], pins: dict[str, str], tmp: Path) -> dict[str, str]:
    """``{name: version}`` of verimath's core dependencies for the target (pip's resolver,
    nothing installed), the node's versions (``pins``) as constraints."""
    constraints = tmp / "constraints.txt"
    constraints.write_text("".join(f"{n}=={v}\n" for n, v in pins.items()
                                   if "+" not in v and n != "verimath"))
    report = tmp / "report.json"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--dry-run",
                    "--ignore-installed", "--target", str(tmp / "target"), "--report",
                    str(report), "-c", str(constraints), *flags, str(wheel)], check=True)
    found = json.loads(report.read_text())["install"]
    return {i["metadata"]["name"]: i["metadata"]["version"] for i in found
            if canonical(i["metadata"]["name"]) != "verimath"}


def download(folder: Path, wanted: dict[str, str], flags: list[str]) -> None:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d",
                    str(folder), *flags, *(f"{n}=={v}" for n, v in sorted(wanted.items()))],
                   check=True)


def folder_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.glob("*.whl")) / 2**20


def leave_out(names, pins: dict[str, str]) -> set[str]:
    """The canonical names among ``names`` that the node already has."""
    have = set(pins) if pins else {canonical(n) for n in NODE_PROVIDES}
    return {canonical(n) for n in names} & have


def prepare(folder: Path, *, python_version: str, platforms: list[str], freeze: str | None,
            max_mib: float, from_installed: bool) -> dict:
    """Fill ``folder``; returns (and writes as ``wheelhouse.json``) what it holds."""
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.glob("*.whl")):
        raise SystemExit(f"wheelhouse: {folder} holds wheels already; remove them or name an "
                         "empty folder (the folder's wheels are what the node installs from)")
    pins = node_freeze(freeze)
    wheel = build_verimath(folder, offline=from_installed)
    if from_installed:
        from wheel_repack import installed_requirements, newest, repack

        needed = installed_requirements("verimath") - {"verimath"}
        dropped = leave_out(needed, pins)
        for name in sorted(needed):
            if canonical(name) not in dropped:
                repack(newest(name), folder)
        python_version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    else:
        flags = target_flags(python_version, platforms)
        with tempfile.TemporaryDirectory() as tmp:
            needed = resolve(wheel, flags, pins, Path(tmp))
        dropped = leave_out(needed, pins)
        download(folder, {n: v for n, v in needed.items() if canonical(n) not in dropped}, flags)
    manifest = {"python_version": python_version, "platforms": platforms,
                "from_installed": from_installed, "verimath_commit": git_commit(),
                "left_out_node_has": sorted(dropped),
                "wheels": sorted(p.name for p in folder.glob("*.whl")),
                "mib": round(folder_mib(folder), 1)}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    if manifest["mib"] > max_mib:
        raise SystemExit(f"wheelhouse: {folder} holds {manifest['mib']} MiB of wheels, over "
                         f"--max-mib {max_mib}; the largest: {largest(folder)}")
    return manifest


def largest(folder: Path, n: int = 3) -> str:
    files = sorted(folder.glob("*.whl"), key=lambda p: -p.stat().st_size)[:n]
    return ", ".join(f"{p.name} ({p.stat().st_size / 2**20:.1f} MiB)" for p in files)


def git_commit() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="fill a wheel folder (connected machine)")
    p.add_argument("folder", type=Path)
    p.add_argument("--python-version", default="3.12", help="the node's python3 --version "
                   "(major.minor; default 3.12)")
    p.add_argument("--platform", action="append", default=None,
                   help=f"wheel platform tag (repeatable; default {' '.join(PLATFORMS)}; "
                   "an ARM node (GH200): manylinux_2_28_aarch64)")
    p.add_argument("--node-freeze", default=None, metavar="FILE",
                   help="`pip freeze` of the node's Python: leave these out, match versions")
    p.add_argument("--max-mib", type=float, default=64.0)
    p.add_argument("--from-installed", action="store_true",
                   help="no network: wheels of the packages installed here")
    m = sub.add_parser("mode", help="node or setup (prints it; exit 2 with the reason)")
    m.add_argument("--wheels", default=None)
    m.add_argument("--python", default=sys.executable)
    i = sub.add_parser("install", help="venv over this Python + verimath from the folder")
    i.add_argument("folder", type=Path)
    i.add_argument("--venv", type=Path, default=ROOT / ".venv-node")
    i.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    return {"prepare": _prepare, "mode": _mode, "install": _install}[args.command](args)


def _prepare(args) -> int:
    import time

    start = time.perf_counter()
    manifest = prepare(args.folder, python_version=args.python_version,
                       platforms=args.platform or list(PLATFORMS), freeze=args.node_freeze,
                       max_mib=args.max_mib, from_installed=args.from_installed)
    print(f"{args.folder}: {len(manifest['wheels'])} wheels, {manifest['mib']} MiB, for Python "
          f"{manifest['python_version']} ({', '.join(manifest['platforms'])}), in "
          f"{time.perf_counter() - start:.0f} s; left out (the node has "
          f"them): {', '.join(manifest['left_out_node_has']) or 'nothing'}")
    print(f"copy it to the node, then: scripts/gpu_check.sh --offline {args.folder}")
    return 0


def _mode(args) -> int:
    try:
        manifest = read_manifest(args.wheels) if args.wheels else None
        print(choose_mode(probe(args.python), args.wheels, manifest))
    except ValueError as e:
        print(f"gpu_check: {e}", file=sys.stderr)
        return 2
    return 0


def _install(args) -> int:
    manifest = read_manifest(args.folder)
    if manifest.get("verimath_commit") not in (None, "unknown", git_commit()):
        print(f"wheelhouse: the folder's verimath wheel is commit {manifest['verimath_commit']}, "
              f"this checkout is {git_commit()}: the checks run the wheel's code",
              file=sys.stderr)
    print(install(args.folder, args.venv, args.python))
    return 0


if __name__ == "__main__":
    sys.exit(main())
