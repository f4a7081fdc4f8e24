"""How ``verimath train`` starts and leaves runs: ``--nproc N`` launches torchrun with its
ranks tied to the launcher (:mod:`verimath.trainer.run.guard`), and the resume command an
interrupted run prints (with ``--nproc N`` when it ran on N processes)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


def launch(args: argparse.Namespace, run_dir: Path) -> int:
    """``verimath train --nproc N``: the same command on N torchrun processes (one node)."""
    argv = ["--output-dir", str(run_dir), *(["--config", args.config] if args.config else []),
            *(["--resume", args.resume] if args.resume else []),
            *(["--overwrite"] if args.overwrite else []),
            *(["--allow-config-change"] if args.allow_config_change else []), *args.overrides]
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
               str(args.nproc), "--standalone", "-m", "verimath.trainer.train", *argv]
    from verimath.trainer.run.guard import LAUNCHER_ENV, die_with_parent

    print(f"verimath train: launching {args.nproc} processes: {' '.join(command[2:])}",
          file=sys.stderr)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", LAUNCHER_ENV: str(os.getpid())}
    process = subprocess.Popen(command, env=env, preexec_fn=die_with_parent)  # noqa: PLW1509
    try:
        return process.wait()
    except KeyboardInterrupt:  # the ranks got it too: let them stop, then speak once for them
        try:
            process.wait(timeout=60)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            process.kill()
        print(f"\nverimath train: {interrupted_message(run_dir, nproc=args.nproc)}",
              file=sys.stderr)
        return 130


def launched_by_verimath() -> bool:
    """True in a rank started by ``verimath train --nproc N`` (the launcher speaks for it)."""
    from verimath.trainer.run.guard import LAUNCHER_ENV

    return bool(os.environ.get(LAUNCHER_ENV))


def interrupted_message(run_dir: Path, *, nproc: int = 1) -> str:
    """What an interrupted run left: its latest complete checkpoint and how to continue
    (on ``nproc`` processes)."""
    from verimath.trainer.checkpoint.files import latest_checkpoint

    command = resume_command(run_dir, nproc)
    latest = latest_checkpoint(Path(run_dir) / "checkpoints")
    if latest is None:
        return (f"interrupted before the first checkpoint; `{command}` starts the run again "
                "from step 0 with its config.yaml (lower logging.save_every to checkpoint "
                "more often)")
    return (f"interrupted; the latest complete checkpoint is {latest} (metrics.jsonl lines after "
            f"it are replaced on resume); continue with: {command}")


def resume_command(run_dir: Path, nproc: int = 1) -> str:
    """``verimath train [--nproc N] --resume DIR``: the same number of processes continues
    the run exactly."""
    return f"verimath train {f'--nproc {nproc} ' if nproc > 1 else ''}--resume {run_dir}"


def checkpoint_ranks(checkpoint: Path) -> int:
    """How many processes wrote ``checkpoint`` (its manifest's ``ranks``; 1 when absent)."""
    from verimath.trainer.checkpoint.files import MANIFEST

    try:
        return int(json.loads((Path(checkpoint) / MANIFEST).read_text()).get("ranks", 1))
    except (OSError, ValueError, AttributeError):
        return 1


def clear_dir(run_dir: Path) -> None:
    """Delete what ``run_dir`` holds, keeping the directory (and the lock held on it)."""
    for child in Path(run_dir).iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
