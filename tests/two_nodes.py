"""Two launchers on this machine meeting as two nodes (torchrun's c10d rendezvous at
127.0.0.1), for tests/trainer/test_rendezvous.py and test_async_multirank.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from verimath.trainer.run.metrics import read_metrics

# The shared warm-started tiny model answers about a third right, so steps train; 2 prompts
# of 4 responses per rank and round
TINY = ["warmstart.steps=0", "rollout.gen_prompts=4", "rollout.group_size=4",
        "rollout.max_new_tokens=12", "reward.overlong_buffer=2", "algo.train_prompts=2",
        "algo.mini_batch_prompts=2", "algo.max_gen_rounds=2", "eval.num_problems=0",
        "logging.progress=false", "logging.plot=false", "logging.save_every=1",
        "logging.keep_checkpoints=5", "reward.workers=1", "model.threads=1"]
TIMED = ("time/", "async/wait", "async/generator_busy", "async/generator_cpu_share",
         "compute/tokens_per_s")
"""Metric prefixes that measure time (they differ between two runs of the same steps)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def verimath_node(rank: int, port: int, args: list[str]) -> list[str]:
    """``verimath train --nnodes 2 --node-rank RANK ...`` (one process on this node)."""
    return [sys.executable, "-m", "verimath.trainer.cli", "train", "--nnodes", "2",
            "--node-rank", str(rank), "--nproc", "1", "--rdzv-endpoint", f"127.0.0.1:{port}",
            *args]


def torchrun_node(rank: int, port: int, args: list[str]) -> list[str]:
    """The plain torchrun command (docs/distributed.md) for node ``rank`` of 2."""
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "1",
            "--nnodes", "2", "--node-rank", str(rank), "--rdzv-backend", "c10d",
            "--rdzv-endpoint", f"127.0.0.1:{port}", "-m", "verimath.trainer.worker", *args]


def two_nodes(node, args: list[str], *, cwd: Path, timeout: float = 300) -> list[str]:
    """Run ``node(rank, port, args)`` for ranks 0 and 1 at once; both must exit 0. Returns
    their outputs."""
    port = free_port()
    procs = [subprocess.Popen(node(r, port, args), cwd=cwd, env=env(), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for r in (0, 1)]
    end, outs = time.monotonic() + timeout, []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=max(1.0, end - time.monotonic()))[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-4000:]
    return outs


def steps(run: Path) -> dict[int, dict]:
    """Metrics by RL step, without wall times and waits (they differ between runs)."""
    return {r["step"]: {k: v for k, v in r.items() if not k.startswith(TIMED)}
            for r in read_metrics(run / "metrics.jsonl") if r["step"] > 0}
