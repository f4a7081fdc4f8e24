"""Multi-node training as users launch it, on one machine: two launchers (``verimath train
--nnodes 2 --node-rank 0|1 --rdzv-endpoint``, and the README's plain torchrun command) meet
through torchrun's c10d rendezvous at 127.0.0.1, train, and resume from a checkpoint as the
uninterrupted run went on; and the resume commands such a run prints."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
import torch
from two_nodes import TINY, steps, torchrun_node, two_nodes, verimath_node
from verimath.trainer.run.cli import add_arguments
from verimath.trainer.run.launch import (
    ENDPOINT_ENV,
    TORCHRUN_ENV,
    check_node_arguments,
    resume_command,
    torchrun_command,
)


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


@pytest.fixture(scope="module")
def sync_run(tmp_path_factory, warm_tiny_model) -> Path:
    """2 steps on two nodes of one process each, a checkpoint after each step."""
    out = tmp_path_factory.mktemp("rdzv")
    two_nodes(verimath_node, ["--output-dir", str(out / "run"), *TINY,
                              f"model.path={warm_tiny_model}", "optim.steps=2"], cwd=out)
    return out / "run"


@pytest.mark.slow
def test_two_launchers_train_the_same_steps_on_both_ranks(sync_run):
    records = steps(sync_run)
    assert sorted(records) == [1, 2]
    assert all(r["sampling/kept_groups"] > 0 for r in records.values())  # (seeded: it trains)
    for name in ("step_00000001", "step_00000002"):
        ckpt = sync_run / "checkpoints" / name
        assert json.loads((ckpt / "checkpoint.json").read_text())["ranks"] == 2
        # each rank saved its own problem stream at every step, and the two differ
        ranks = [torch.load(ckpt / f"rank_{r}.pt", weights_only=True)["state"]["episodes"]
                 for r in (0, 1)]
        assert ranks[0] != ranks[1]
    assert (sync_run / "checkpoints" / "step_00000002" / "model" / "config.json").is_file()


@pytest.mark.slow
def test_two_launchers_resume_as_the_uninterrupted_run_went_on(sync_run, tmp_path):
    part = tmp_path / "run"
    shutil.copytree(sync_run, part)
    shutil.rmtree(part / "checkpoints" / "step_00000002")
    two_nodes(torchrun_node, ["--resume", str(part / "checkpoints" / "step_00000001")],
              cwd=tmp_path)
    assert steps(part) == steps(sync_run)  # step 2 again, the same metrics to the bit


def test_a_multi_node_launch_meets_at_the_endpoint():
    args = _args(["--nnodes", "2", "--node-rank", "1", "--nproc", "4", "--rdzv-endpoint",
                  "node0:29500", "--output-dir", "shared/run"])
    check_node_arguments(args)
    command = torchrun_command(args, ["--output-dir", "shared/run"])
    joined = " ".join(command)
    assert "--standalone" not in command
    assert ("--nproc-per-node 4 --nnodes 2 --rdzv-backend c10d "
            "--rdzv-endpoint node0:29500") in joined
    assert joined.endswith("-m verimath.trainer.worker --output-dir shared/run")
    one_node = torchrun_command(_args(["--nproc", "2"]), [])
    assert "--standalone" in one_node and "--nnodes" not in one_node


@pytest.mark.parametrize(("argv", "names"), [
    (["--nnodes", "2", "--output-dir", "r"], "--rdzv-endpoint"),
    (["--nnodes", "2", "--rdzv-endpoint", "h:1"], "--output-dir"),
    (["--nnodes", "2", "--node-rank", "2", "--rdzv-endpoint", "h:1", "--output-dir", "r"],
     "--node-rank 2"),
    (["--nnodes", "0"], "--nnodes"),
])
def test_multi_node_options_that_do_not_fit_are_named(argv, names):
    with pytest.raises(ValueError, match=names):
        check_node_arguments(_args(argv))


def test_resume_commands_of_a_multi_node_run_name_the_nodes(monkeypatch):
    monkeypatch.delenv(ENDPOINT_ENV, raising=False)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    monkeypatch.delenv(TORCHRUN_ENV, raising=False)  # outside torchrun the variable is not read
    assert resume_command(Path("r"), 8) == "verimath train --nproc 8 --resume r"
    monkeypatch.setenv(TORCHRUN_ENV, "run")  # a rank of torchrun's group
    assert resume_command(Path("r"), 8) == ("verimath train --nnodes 2 --node-rank R --nproc 4 "
                                            "--rdzv-endpoint HOST:PORT --resume r (on each "
                                            "node, R = 0 .. 1)")
    monkeypatch.setenv(ENDPOINT_ENV, "node0:29500")
    assert "--rdzv-endpoint node0:29500 --resume r" in resume_command(Path("r"), 8)
    assert resume_command(Path("r"), 4) == "verimath train --nproc 4 --resume r"  # one node
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    assert resume_command(Path("r"), 2) == "verimath train --nproc 2 --resume r"
    assert resume_command(Path("r"), 1) == "verimath train --resume r"
    assert resume_command(Path("r"), 6, local=3, endpoint="h:1").startswith(
        "verimath train --nnodes 2 --node-rank R --nproc 3 --rdzv-endpoint h:1 --resume r")
