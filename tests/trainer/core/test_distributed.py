"""Data parallelism for real: torchrun with 2 CPU processes over gloo and FSDP2.

- one update on a fixed global batch gives the same parameters with 2 ranks as with 1;
- dynamic sampling with an uneven spread of informative groups across ranks ends with the
  same decisions on both ranks and the kept count of the target;
- a 2-rank tiny run saves a sharded checkpoint, resumes with 2 ranks (sampling from the
  resumed weights), then with 1 rank;
- a colocated vLLM engine per rank samples the pushed weights; the same run resumed with
  asynchronous rollouts runs a vLLM generator process per rank within the staleness bound.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from verimath.trainer.algo.dynamic_sampling import allocate_quotas
from verimath.trainer.core.distributed import Comm
from verimath.trainer.run.metrics import read_metrics

HERE = Path(__file__).parent
pytestmark = pytest.mark.slow


def torchrun(args: list[str], *, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
               "--standalone", *args]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    torchrun([str(HERE / "dist_worker.py"), str(out)], cwd=out)
    return out


def test_one_update_with_two_ranks_equals_one_rank(two_ranks, tmp_path):
    sys.path.insert(0, str(HERE))
    try:
        import dist_worker
    finally:
        sys.path.remove(str(HERE))
    dist_worker.one_update(Comm(), tmp_path)
    single = torch.load(tmp_path / "update_rank0.pt", weights_only=True)
    for rank in (0, 1):
        sharded = torch.load(two_ranks / f"update_rank{rank}.pt", weights_only=True)
        assert sharded["params"].keys() == single["params"].keys()
        for name, value in single["params"].items():  # AdamW steps of lr 1e-2: agree to 0.2%
            torch.testing.assert_close(sharded["params"][name], value, atol=2e-5, rtol=1e-5,
                                       msg=name)
        for key in ("loss/policy", "optim/grad_norm", "compute/trained_tokens",
                    "policy/entropy", "clip/frac_high"):
            assert sharded["metrics"][key] == pytest.approx(single["metrics"][key], rel=1e-5,
                                                            abs=1e-7), key


def test_uneven_dynamic_sampling_agrees_on_every_rank(two_ranks):
    records = [json.loads((two_ranks / f"sampling_rank{r}.json").read_text()) for r in (0, 1)]
    assert records[0]["stats"] == records[1]["stats"]  # the same global decisions
    assert records[0]["round_sizes"] == records[1]["round_sizes"]
    kept = [r["kept"] for r in records]
    assert sum(kept) == records[0]["stats"]["sampling/kept_groups"]
    assert sum(kept) == 10 or records[0]["stats"]["sampling/hit_cap"] == 1.0
    assert kept[0] > kept[1]  # rank 0 found most informative groups and trains on them
    for key in ("generated", "informative"):  # the global counts are the ranks' sums, once
        assert records[0]["stats"][f"sampling/{key}_groups"] == sum(r[key] for r in records)
    assert sum(kept) + sum(r["surplus"] for r in records) == sum(r["informative"]
                                                                for r in records)


def test_quotas_add_up_and_never_exceed_what_a_rank_holds():
    rng = np.random.default_rng(0)
    for _ in range(200):
        counts = list(rng.integers(0, 20, size=rng.integers(1, 6)))
        target = int(rng.integers(1, 40))
        quotas = allocate_quotas(counts, target)
        assert sum(quotas) == min(target, sum(counts))
        assert all(0 <= q <= c for q, c in zip(quotas, counts))
    assert allocate_quotas([8, 1], 6) == [5, 1]
    assert allocate_quotas([4, 4], 6) == [3, 3]


# The shared warm-started tiny model ("Answer: 123" and EOS fit in 12 tokens) answers about a
# third right, so steps train
TINY = ["warmstart.steps=0", "rollout.gen_prompts=4", "rollout.group_size=4",
        "rollout.max_new_tokens=12", "reward.overlong_buffer=2", "algo.train_prompts=2",
        "algo.mini_batch_prompts=2", "algo.max_gen_rounds=2", "eval.num_problems=6", "eval.k=2",
        "logging.progress=false", "logging.plot=false", "logging.save_every=1",
        "reward.workers=1"]


def test_two_rank_run_resumes_with_two_ranks_then_with_one(tmp_path, warm_tiny_model):
    run = tmp_path / "run"
    torchrun(["-m", "verimath.trainer.worker", "--output-dir", str(run), *TINY,
              f"model.path={warm_tiny_model}", "optim.steps=2"], cwd=tmp_path)
    step2 = run / "checkpoints" / "step_00000002"
    assert (step2 / "dcp").is_dir() and (step2 / "rank_1.pt").is_file()
    assert (step2 / "model" / "config.json").is_file()  # the final export, for eval and users
    assert [r["step"] for r in read_metrics(run / "metrics.jsonl")] == [0, 1, 2]
    trained = read_metrics(run / "metrics.jsonl")[-1]["rollout/logp_abs_diff"]
    # the same ranks again: each rank's sampling copy must hold the resumed shards, not the
    # weights the run started from (the engine's log-probs then match the trainer's)
    torchrun(["-m", "verimath.trainer.worker", "--resume", str(run), "optim.steps=3"],
             cwd=tmp_path)
    step3 = read_metrics(run / "metrics.jsonl")[-1]
    assert step3["step"] == 3 and step3["sampling/kept_groups"] > 0  # (seeded: it trains)
    assert step3["rollout/logp_abs_diff"] < max(1e-4, 10 * trained)
    done = subprocess.run([sys.executable, "-m", "verimath.trainer.worker", "--resume", str(run),
                           "optim.steps=4", "--allow-config-change"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resumed from" in done.stdout + done.stderr
    records = read_metrics(run / "metrics.jsonl")
    assert [r["step"] for r in records] == [0, 1, 2, 3, 4]
    assert records[-1]["compute/generated_tokens"] > 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["rl_steps"] == 4


@pytest.fixture(scope="module")
def vllm_two_ranks(tmp_path_factory, warm_tiny_model) -> Path:
    """A synchronous 2-step run with a colocated vLLM engine on each of 2 ranks."""
    out = tmp_path_factory.mktemp("vllm_dist")
    vllm_tiny = [o for o in TINY if not o.startswith("algo.")]
    torchrun(["-m", "verimath.trainer.worker", "--output-dir", str(out / "run"), *vllm_tiny,
              f"model.path={warm_tiny_model}", "rollout.engine=vllm",
              "rollout.vllm_enforce_eager=true",
              "algo.dynamic_sampling=false", "algo.train_prompts=4", "algo.mini_batch_prompts=2",
              "algo.overlong_filtering=false", "optim.steps=2",
              # no length penalty on a 12-token answer: the policy keeps answering right, so
              # the asynchronous steps below find informative groups
              "rollout.max_new_tokens=16", "reward.overlong_buffer=4"], cwd=out)
    return out / "run"


@pytest.mark.vllm
def test_two_ranks_with_a_vllm_engine_each_push_the_gathered_weights(vllm_two_ranks):
    """Colocated vLLM: one engine per rank, fed the sharded policy's parameters one at a
    time after each update; the next rollouts sample the updated policy (the engine's
    log-probs match the trainer's)."""
    records = [r for r in read_metrics(vllm_two_ranks / "metrics.jsonl") if 0 < r["step"] <= 2]
    assert [r["step"] for r in records] == [1, 2]
    for record in records:
        assert record["compute/trained_tokens"] > 0 and record["optim/updates"] == 2
        assert record["compute/weight_push_bytes"] > 0
        assert record["rollout/logp_abs_diff"] < 1e-4  # step 2 samples the pushed weights


@pytest.mark.vllm
def test_two_ranks_continue_the_vllm_run_asynchronously(vllm_two_ranks, tmp_path):
    """The synchronous checkpoint resumed with ``rollout.async_steps=1``: each rank's
    generator process runs its own vLLM engine on the rank's gathered weights; every step
    trains groups at most one version (plus the surplus' ``algo.max_staleness``) behind."""
    run = tmp_path / "run"
    shutil.copytree(vllm_two_ranks, run)
    torchrun(["-m", "verimath.trainer.worker", "--resume", str(run), "optim.steps=4",
              "rollout.async_steps=1", "--allow-config-change"], cwd=tmp_path)
    records = {r["step"]: r for r in read_metrics(run / "metrics.jsonl") if r["step"] > 2}
    assert sorted(records) == [3, 4]
    for step, record in records.items():
        assert record["async/version"] == step - 1  # the weights pushed after each update
        assert 0 <= record["async/staleness_max"] <= 1 + 1
        assert "rollout/logp_abs_diff" not in record  # pi_old is vLLM's own log-probs
        assert record["compute/generated_tokens"] > 0
    assert sum(r["compute/trained_tokens"] for r in records.values()) > 0
    assert all(math.isfinite(r["loss/policy"]) for r in records.values() if "loss/policy" in r)
    assert (run / "checkpoints" / "step_00000004" / "rank_1.pt").is_file()
