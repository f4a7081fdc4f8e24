"""Wheels of installed distributions, without network (``wheelhouse.py prepare
--from-installed``): each distribution's files as its ``RECORD`` lists them, under the tag its
``WHEEL`` file names, with a fresh ``RECORD``. For the same platform and Python only (a
binary package's compiled files are this machine's); files installed outside site-packages
(console scripts, data) are left out, and pip writes console scripts again from
``entry_points.txt``.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import re
import zipfile
from pathlib import Path

# Written by the installer, not part of a wheel.
INSTALL_ONLY = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


def requirement_name(requirement: str) -> str:
    return re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)


def installed_requirements(*names: str) -> set[str]:
    """The installed distributions that the core requirements of ``names`` pull in,
    transitively, with ``names`` themselves (requirements of an extra are left out; one
    whose marker excludes this machine is not installed and so not found)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        try:
            dist = newest(todo.pop())
        except md.PackageNotFoundError:
            continue
        key = dist.metadata["Name"]
        if key not in seen:
            seen.add(key)
            todo += [requirement_name(r) for r in dist.requires or []
                     if "extra ==" not in r.replace("'", '"')]
    return seen


def wheel_tag(dist: md.Distribution) -> str:
    """The first ``Tag:`` of the distribution's ``WHEEL`` file (``py3-none-any`` when it has
    none)."""
    text = dist.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in text.splitlines()
            if line.startswith("Tag:")]
    return tags[0] if tags else "py3-none-any"


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
        b"=").decode()


def newest(name: str) -> md.Distribution:
    """The newest installed copy of ``name`` on ``sys.path`` (a venv that chains to another
    may hold an older one first)."""
    found = [d for d in md.distributions() if d.metadata["Name"].lower() == name.lower()]
    if not found:
        raise md.PackageNotFoundError(name)
    return max(found, key=lambda d: [int(x) for x in re.findall(r"\d+", d.version)[:3]])


def repack(name: str | md.Distribution, folder: Path) -> Path:
    """``folder/<name>-<version>-<tag>.whl`` from an installed distribution."""
    dist = md.distribution(name) if isinstance(name, str) else name
    stem = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    version = dist.version
    out = folder / f"{stem}-{version}-{wheel_tag(dist)}.whl"
    info = None
    rows = []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for file in dist.files or []:
            path = file.as_posix()
            if path.startswith("..") or "__pycache__" in path:
                continue
            top, _, leaf = path.partition("/")
            if top.endswith(".dist-info"):
                info = top
                if leaf in INSTALL_ONLY:
                    continue
            data = Path(dist.locate_file(file)).read_bytes()
            zf.writestr(path, data)
            rows.append(f"{path},{_digest(data)},{len(data)}")
        if info is None:
            raise ValueError(f"{name}: no .dist-info among its installed files")
        rows.append(f"{info}/RECORD,,")
        zf.writestr(f"{info}/RECORD", "\n".join(rows) + "\n")
    return out
