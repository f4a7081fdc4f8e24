"""What a checkpoint directory is called and how to find one.

A complete checkpoint is a directory ``step_<step:08d>/`` holding its manifest
(:data:`MANIFEST`, written last); :func:`list_checkpoints`, :func:`latest_checkpoint` and
:func:`resolve_checkpoint` (what ``--resume PATH`` means) look only at complete ones.
Writing and reading them is :mod:`verimath.trainer.checkpoint.files`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

FORMAT_VERSION = 1
MANIFEST = "checkpoint.json"
_NAME = re.compile(r"^step_(\d+)$")


def checkpoint_name(step: int) -> str:
    """Directory name of the checkpoint of ``step``: ``step_00000042``."""
    return f"step_{int(step):08d}"


def is_checkpoint(path: str | os.PathLike) -> bool:
    """True for a complete checkpoint directory (its manifest exists)."""
    return (Path(path) / MANIFEST).is_file()


def list_checkpoints(directory: str | os.PathLike) -> list[Path]:
    """Complete checkpoints directly under ``directory``, oldest step first."""
    root = Path(directory)
    if not root.is_dir():
        return []
    found = []
    for child in root.iterdir():
        match = _NAME.match(child.name)
        if match and child.is_dir() and is_checkpoint(child):
            found.append((int(match.group(1)), child))
    return [path for _, path in sorted(found)]


def latest_checkpoint(run_dir: str | os.PathLike) -> Path | None:
    """The complete checkpoint of the highest step directly under ``run_dir``, or None."""
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


def resolve_checkpoint(path: str | os.PathLike) -> Path:
    """What ``--resume PATH`` means: PATH itself when it is a checkpoint, else the latest
    checkpoint in PATH, else in PATH/checkpoints.

    Raises:
        FileNotFoundError: none of those holds a complete checkpoint.
    """
    path = Path(path)
    if is_checkpoint(path):
        return path
    for root in (path, path / "checkpoints"):
        latest = latest_checkpoint(root)
        if latest is not None:
            return latest
    raise FileNotFoundError(
        f"no complete checkpoint at {path} (looked for {MANIFEST} in it, in its step_* "
        "subdirectories and in checkpoints/step_*)"
    )
