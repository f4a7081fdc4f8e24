"""How ``verimath train`` starts and leaves runs: ``--nproc N`` launches torchrun with its
ranks tied to the launcher (:mod:`verimath.trainer.core.processes`), on one node (``--standalone``)
or, with ``--nnodes M --node-rank R --rdzv-endpoint HOST:PORT`` on each of M nodes, meeting
through torchrun's c10d rendezvous; and the resume command an interrupted run prints (with
the same ``--nproc``/``--nnodes`` options as the run)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

ENDPOINT_ENV = "VERIMATH_RDZV_ENDPOINT"
TORCHRUN_ENV = "TORCHELASTIC_RUN_ID"  # set in every process torchrun starts
"""Set by ``verimath train --nnodes M`` for its ranks: the rendezvous endpoint, for the resume
command they print."""

RDZV_ID = "verimath"
"""torchrun's ``--rdzv-id`` of a multi-node launch (the same on every node)."""


def add_node_arguments(parser: argparse.ArgumentParser) -> None:
    """``--nnodes``, ``--node-rank`` and ``--rdzv-endpoint`` of ``verimath train``."""
    parser.add_argument("--nnodes", type=int, default=1, metavar="M",
                        help="nodes of a multi-node run: run the same command on each, with "
                             "--node-rank and --rdzv-endpoint (--nproc per node)")
    parser.add_argument("--node-rank", type=int, default=0, metavar="R",
                        help="this node's place among --nnodes (0 .. M-1; node 0 checks the "
                             "run directory, torchrun numbers the ranks as the nodes join)")
    parser.add_argument("--rdzv-endpoint", default=None, metavar="HOST:PORT",
                        help="with --nnodes > 1: where the nodes meet (torchrun's c10d "
                             "rendezvous, hosted by the node whose address it is)")


def check_node_arguments(args: argparse.Namespace) -> None:
    """ValueError naming the option when the multi-node options do not fit together."""
    nnodes, rank = getattr(args, "nnodes", 1), getattr(args, "node_rank", 0)
    if nnodes < 1 or (args.nproc is not None and args.nproc < 1):
        raise ValueError(f"--nnodes ({nnodes}) and --nproc ({args.nproc}) must be at least 1")
    if not 0 <= rank < nnodes:
        raise ValueError(f"--node-rank {rank} must be in 0 .. {nnodes - 1} (--nnodes {nnodes})")
    if nnodes > 1 and not getattr(args, "rdzv_endpoint", None):
        raise ValueError(f"--nnodes {nnodes} needs --rdzv-endpoint HOST:PORT, the same on "
                         "every node (an address of node 0 and a free port)")
    if nnodes > 1 and not (args.output_dir or args.resume):
        raise ValueError(f"--nnodes {nnodes} needs --output-dir (or --resume): one run "
                         "directory that every node sees (a shared file system)")


def is_launch(args: argparse.Namespace) -> bool:
    """True when ``verimath train`` starts torchrun (``--nproc`` > 1 or ``--nnodes`` > 1)."""
    return (args.nproc or 1) > 1 or getattr(args, "nnodes", 1) > 1


def launched_ranks(args: argparse.Namespace) -> int:
    """The ranks of the run: ``--nproc`` times ``--nnodes`` for a launch, else torchrun's
    ``WORLD_SIZE`` (1 in a plain process)."""
    if is_launch(args):
        return (args.nproc or 1) * getattr(args, "nnodes", 1)
    return int(os.environ.get("WORLD_SIZE", "1"))


def torchrun_command(args: argparse.Namespace, argv: list[str]) -> list[str]:
    """``python -m torch.distributed.run`` for this node: ``--standalone`` on one node, the
    c10d rendezvous at ``--rdzv-endpoint`` on several (which numbers the nodes as they join:
    torchrun ignores ``--node-rank`` there, so only this launcher reads it)."""
    nnodes = getattr(args, "nnodes", 1)
    where = ["--standalone"] if nnodes == 1 else [
        "--nnodes", str(nnodes), "--rdzv-backend", "c10d", "--rdzv-endpoint",
        args.rdzv_endpoint, "--rdzv-id", RDZV_ID]
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
            str(args.nproc or 1), *where, "-m", "verimath.trainer.worker", *argv]


def launch(args: argparse.Namespace, run_dir: Path) -> int:
    """``verimath train --nproc N [--nnodes M ...]``: the same command on N torchrun
    processes of this node."""
    argv = ["--output-dir", str(run_dir), *(["--config", args.config] if args.config else []),
            *(["--resume", args.resume] if args.resume else []),
            *(["--overwrite"] if args.overwrite else []),
            *(["--allow-config-change"] if args.allow_config_change else []), *args.overrides]
    command = torchrun_command(args, argv)
    from verimath.trainer.core.processes import LAUNCHER_ENV, die_with_parent

    nproc, nnodes = args.nproc or 1, getattr(args, "nnodes", 1)
    where = f" (node {args.node_rank} of {nnodes})" if nnodes > 1 else ""
    print(f"verimath train: launching {nproc} processes{where}: {' '.join(command[2:])}",
          file=sys.stderr)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", LAUNCHER_ENV: str(os.getpid()),
           **({ENDPOINT_ENV: args.rdzv_endpoint} if nnodes > 1 else {})}
    process = subprocess.Popen(command, env=env, preexec_fn=die_with_parent)  # noqa: PLW1509
    previous = _forward_sigterm(process)
    try:
        return process.wait()
    except KeyboardInterrupt:  # the ranks got it too: let them stop, then speak once for them
        try:
            process.wait(timeout=60)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            process.kill()
        message = interrupted_message(run_dir, nproc=nproc * nnodes, local=nproc,
                                      endpoint=getattr(args, "rdzv_endpoint", None))
        print(f"\nverimath train: {message}", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _forward_sigterm(torchrun: subprocess.Popen):
    """SIGTERM to the launcher (a scheduler, ``kill PID``, a container being stopped) goes
    to the ranks themselves: each finishes its step, they save a checkpoint together and exit
    0 (sent to torchrun it would reach them too, but torchrun kills them 30 s later, mid-save
    on a large model). Before the ranks exist it goes to torchrun. Returns the previous
    handler (None when this is not the main thread)."""

    from verimath.trainer.core.processes import children_of

    def forward(signum, frame) -> None:
        ranks = children_of(torchrun.pid)
        for pid in ranks or [torchrun.pid]:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    try:
        return signal.signal(signal.SIGTERM, forward)
    except ValueError:
        return None


def launched_by_verimath() -> bool:
    """True in a rank started by ``verimath train --nproc N`` (the launcher speaks for it)."""
    from verimath.trainer.core.processes import LAUNCHER_ENV

    return bool(os.environ.get(LAUNCHER_ENV))


def interrupted_message(run_dir: Path, *, nproc: int = 1, local: int | None = None,
                        endpoint: str | None = None) -> str:
    """What an interrupted run left: its latest complete checkpoint and how to continue
    (on ``nproc`` processes, ``local`` of them per node; see :func:`resume_command`)."""
    from verimath.trainer.checkpoint.files import latest_checkpoint

    command = resume_command(run_dir, nproc, local=local, endpoint=endpoint)
    latest = latest_checkpoint(Path(run_dir) / "checkpoints")
    if latest is None:
        return (f"interrupted before the first checkpoint; `{command}` starts the run again "
                "from step 0 with its config.yaml (lower logging.save_every to checkpoint "
                "more often)")
    return (f"interrupted; the latest complete checkpoint is {latest} (metrics.jsonl lines after "
            f"it are replaced on resume); continue with: {command}")


def resume_command(run_dir: Path, nproc: int = 1, *, local: int | None = None,
                   endpoint: str | None = None) -> str:
    """``verimath train [--nproc N] --resume DIR``: the same number of processes continues the run
    exactly. A run of ``nproc`` ranks with ``local`` per node (default: torchrun's
    ``LOCAL_WORLD_SIZE`` inside torchrun's processes; outside them, e.g. after an in-process vLLM
    CPU engine rewrote it, the variable is not read) on several nodes gets the command for each
    node, with the rendezvous ``endpoint`` (default: ``$VERIMATH_RDZV_ENDPOINT``, else
    ``HOST:PORT``)."""
    if local is None and TORCHRUN_ENV in os.environ:  # a rank of torchrun's group
        local = int(os.environ.get("LOCAL_WORLD_SIZE", nproc) or nproc)
    local = local or nproc
    if local >= nproc or nproc % local:
        return f"verimath train {f'--nproc {nproc} ' if nproc > 1 else ''}--resume {run_dir}"
    nnodes = nproc // local
    endpoint = endpoint or os.environ.get(ENDPOINT_ENV) or "HOST:PORT"
    return (f"verimath train --nnodes {nnodes} --node-rank R --nproc {local} --rdzv-endpoint "
            f"{endpoint} --resume {run_dir} (on each node, R = 0 .. {nnodes - 1})")


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
