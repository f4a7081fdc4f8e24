"""MkDocs hook: lets mkdocstrings read ``verimath`` from the source folders.

pyproject.toml maps the import names onto folders (``verimath.envs`` is ``envs/``,
``verimath.trainer`` is ``trainer/``), which griffe cannot follow when it looks for
``verimath`` on disk. At start-up this hook makes a temporary folder holding ``verimath/``
with one link per mapped package and puts it first on ``sys.path``; griffe then reads the
sources statically, so nothing is imported and torch is not needed to build the reference.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path

from mkdocs.plugins import event_priority

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

FOLDERS = {"verimath.envs": "envs", "verimath.rewards": "rewards",
           "verimath.trainer": "trainer", "verimath.datasets_prep": "datasets_prep"}


def package_folders(root: Path) -> dict[str, str]:
    """``{"verimath.envs": "envs", ...}``: the top-level packages and their folders."""
    if tomllib is None:
        return FOLDERS
    setuptools = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = setuptools["tool"]["setuptools"]["package-dir"]
    return {name: folder for name, folder in mapping.items() if name.count(".") == 1}


@event_priority(100)  # before mkdocstrings sets up its handlers and their search path
def on_config(config):
    root = Path(config.config_file_path).resolve().parent
    search = Path(tempfile.mkdtemp(prefix="verimath-docs-"))
    atexit.register(shutil.rmtree, search, ignore_errors=True)
    for name, folder in package_folders(root).items():
        link = search.joinpath(*name.split("."))
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(root / folder, target_is_directory=True)
    sys.path.insert(0, str(search))
    return config
