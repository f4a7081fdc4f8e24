"""Asynchronous rollouts on several ranks, for real: two launchers meeting as two nodes
(``verimath train --nnodes 2``), one process each, ``rollout.async_steps=1``. Each rank's
generator follows that rank's (gathered) weights and the global dynamic-sampling decisions;
a generator killed with -9 on rank 1 ends the whole job within seconds, naming the cause,
with no process left behind; and a resume from a checkpoint of that run (here on one node
with ``--nproc 2``) trains the same groups as the run did, to the bit, then stops with a
checkpoint on a SIGTERM sent to its launcher alone."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from two_nodes import TINY, env, free_port, steps, verimath_node

pytestmark = pytest.mark.slow

ASYNC = [*TINY, "rollout.async_steps=1", "optim.schedule=constant", "optim.warmup_steps=0"]
"""A constant learning rate: a resume with fewer ``optim.steps`` trains as the run did."""
WORKER = "verimath.trainer.rollout.async_worker"


def _tree(roots: list[int]) -> dict[int, str]:
    """The live processes under ``roots`` (them included): pid -> command line."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = {}, list(roots)
    while todo:
        pid = todo.pop()
        try:
            found[pid] = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
        except OSError:
            continue
        todo += children.get(pid, [])
    return found


def _rank_of(pid: int) -> int | None:
    try:
        names = Path(f"/proc/{pid}/environ").read_text().split("\0")
    except OSError:
        return None
    return next((int(n[5:]) for n in names if n.startswith("RANK=")), None)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


def _last_step(run: Path) -> int:
    try:
        lines = (run / "metrics.jsonl").read_text().splitlines()
    except OSError:
        return 0
    return max((json.loads(line)["step"] for line in lines if line.endswith("}")), default=0)


@pytest.fixture(scope="module")
def killed(tmp_path_factory, warm_tiny_model) -> dict:
    """Two nodes train asynchronously until step 3 is logged; then rank 1's generator gets
    SIGKILL. What happened: the run, both outputs and exit codes, the seconds from the kill
    to the end of both launchers, the processes of the job and the one killed."""
    out = tmp_path_factory.mktemp("async2")
    run, port = out / "run", free_port()
    args = ["--output-dir", str(run), *ASYNC, f"model.path={warm_tiny_model}", "optim.steps=40"]
    logs = [open(out / f"node{r}.txt", "w+") for r in (0, 1)]  # noqa: SIM115
    procs = [subprocess.Popen(verimath_node(r, port, args), cwd=out, text=True,
                              env={**env(), "PYTHONFAULTHANDLER": "1"},  # stacks on SIGABRT
                              stdout=logs[r], stderr=subprocess.STDOUT) for r in (0, 1)]
    try:
        end = time.monotonic() + 300
        while _last_step(run) < 3 and time.monotonic() < end and \
                all(p.poll() is None for p in procs):
            time.sleep(0.2)
        job = _tree([p.pid for p in procs])
        workers = [pid for pid, cmd in job.items() if WORKER in cmd]
        target = [pid for pid in workers if _rank_of(pid) == 1]
        assert len(workers) == 2 and len(target) == 1, (job, _outputs(logs))
        os.kill(target[0], signal.SIGKILL)
        killed_at = time.monotonic()
        try:
            for p in procs:
                p.wait(timeout=120)
        except subprocess.TimeoutExpired:  # a hang: every rank prints its threads' stacks
            for pid, cmd in _tree([p.pid for p in procs]).items():
                if "verimath.trainer.worker" in cmd:
                    os.kill(pid, signal.SIGABRT)
            time.sleep(5)
            pytest.fail("the job did not end within 120 s of the kill:\n" +
                        "\n".join(_outputs(logs)))
        seconds = time.monotonic() - killed_at
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return {"run": run, "outputs": _outputs(logs), "codes": [p.returncode for p in procs],
            "seconds": seconds, "job": job, "target": target[0]}


def _outputs(logs) -> list[str]:
    texts = []
    for log in logs:
        log.flush()
        log.seek(0)
        texts.append(log.read())
    return texts


def test_each_rank_has_its_generator_and_a_kill_9_ends_the_job(killed):
    records = steps(killed["run"])
    assert {1, 2, 3} <= set(records)
    for step in (1, 2, 3):
        m = records[step]
        assert m["async/version"] == step - 1
        assert 0 <= m["async/staleness_max"] <= 2 and m["async/stale_dropped"] == 0
    # the largest staleness over both ranks: some rank trains a round of version 0 at step 2
    assert records[2]["async/staleness_max"] >= 1
    assert any(r["sampling/kept_groups"] > 0 for r in records.values())
    # rank 1 names the cause and the way on; both launchers fail, within seconds
    said = "\n".join(killed["outputs"])
    assert f"rank 1: the rollout generator process (pid {killed['target']}) was killed by " \
           "signal 9" in said
    assert "continue with: verimath train --nnodes 2 --node-rank R --nproc 1" in said
    assert killed["codes"][0] != 0 and killed["codes"][1] != 0
    assert killed["seconds"] < 60, killed["seconds"]
    time.sleep(1.0)  # orphans would have been re-parented by now; none may be left
    assert not [cmd for pid, cmd in killed["job"].items() if _alive(pid)]


def test_a_two_rank_async_resume_trains_what_the_run_trained_then_stops_on_sigterm(killed,
                                                                                   tmp_path):
    part = tmp_path / "run"
    shutil.copytree(killed["run"], part)
    for late in (part / "checkpoints").glob("step_*"):
        if late.name > "step_00000002":
            shutil.rmtree(late)
    launcher = subprocess.Popen(
        [sys.executable, "-m", "verimath.trainer.cli", "train", "--nproc", "2", "--resume",
         str(part / "checkpoints" / "step_00000002")], cwd=tmp_path, env=env(), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 300
        third = part / "checkpoints" / "step_00000003"  # saved after the resumed step 3
        while not third.exists() and launcher.poll() is None and time.monotonic() < end:
            time.sleep(0.2)
        launcher.send_signal(signal.SIGTERM)  # the launcher alone: it passes it to the ranks
        out = launcher.communicate(timeout=120)[0]
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    # every rank finished its step, they saved together and the job ended cleanly
    assert launcher.returncode == 0, out[-3000:]
    assert "SIGTERM: checkpoint" in out and "continue with: verimath train --nproc 2" in out
    resumed, whole = steps(part), steps(killed["run"])
    assert {1, 2, 3} <= set(resumed) and max(resumed) < 40
    # each rank's waiting rounds, stream and RNG came back: step 3 is the run's, to the bit
    assert resumed[3] == whole[3]
