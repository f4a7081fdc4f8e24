"""LoRA under FSDP2 for real: torchrun with 2 CPU processes (gloo). The adapters train on the
sharded policy, the KL reference is the base with the adapters off, each rank's sampling copy
receives the merged weights, every checkpoint holds the adapter and the last one the merged
model, and the run resumes on 2 ranks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from verimath.trainer.run.metrics import read_metrics

pytest.importorskip("peft", reason="LoRA needs peft: pip install 'verimath[lora]'")
pytestmark = pytest.mark.slow

TINY = ["model.tiny_hidden_size=32", "model.tiny_layers=1", "model.tiny_heads=2",
        "data.level=1", "warmstart.steps=60", "warmstart.target_accuracy=null",
        "warmstart.noise_after=0", "warmstart.lr=1e-2", "warmstart.batch_size=16",
        "rollout.gen_prompts=4", "rollout.group_size=4", "rollout.max_new_tokens=12",
        "reward.overlong_buffer=2", "algo.train_prompts=2", "algo.mini_batch_prompts=2",
        "algo.max_gen_rounds=2", "eval.num_problems=6", "eval.k=2", "logging.progress=false",
        "logging.plot=false", "logging.save_every=1", "reward.workers=1", "model.lora_rank=4",
        "algo.kl_coef=0.1", "optim.lr=2e-2"]


def torchrun(args: list[str], *, cwd: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
                           "2", "--standalone", "-m", "verimath.trainer.worker", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_two_ranks_train_lora_push_merged_weights_and_resume(tmp_path):
    from transformers import AutoModelForCausalLM

    run = tmp_path / "run"
    torchrun(["--output-dir", str(run), *TINY, "optim.steps=2"], cwd=tmp_path)
    torchrun(["--resume", str(run), "optim.steps=4"], cwd=tmp_path)
    ckpts = sorted((run / "checkpoints").glob("step_*"))
    for ckpt in ckpts:
        assert (ckpt / "dcp").is_dir() and (ckpt / "adapter" / "adapter_config.json").is_file()
    assert (ckpts[-1] / "model" / "config.json").is_file()  # the merged export
    merged = AutoModelForCausalLM.from_pretrained(ckpts[-1] / "model")
    assert not any(".lora_" in name for name, _ in merged.named_parameters())
    records = [r for r in read_metrics(run / "metrics.jsonl") if r["step"] > 0]
    assert [r["step"] for r in records] == [1, 2, 3, 4]
    trained = [r for r in records if r["sampling/kept_groups"] > 0]
    assert len(trained) >= 2, records
    # each rank's HF copy samples the merged policy: its log-probs are the trainer's
    assert max(r["rollout/logp_abs_diff"] for r in trained) < 1e-4
    assert any(r["loss/kl"] > 0 for r in trained[1:])  # the adapters moved off the base
