"""Smoke test of the whole trainer on a very small model: a few steps on CPU, then resume."""

from __future__ import annotations

import json
import math

import pytest
import torch
from smoke_config import SMOKE
from verimath.trainer.checkpoint.files import latest_checkpoint, load_checkpoint
from verimath.trainer.config.files import load_config
from verimath.trainer.run.cli import main as cli_main
from verimath.trainer.run.loop import train
from verimath.trainer.run.metrics import read_metrics
from verimath.trainer.run.setup import open_state

REQUIRED_KEYS = [
    "compute/generated_tokens", "compute/trained_tokens", "sampling/generated_groups",
    "sampling/kept_groups", "sampling/rounds", "sampling/hit_cap", "time/generate", "time/score",
    "time/update", "reward/accuracy", "length/mean", "length/max", "length/truncated_frac",
    "length/correct_mean", "length/wrong_mean", "clip/frac_low", "clip/frac_high",
    "policy/entropy", "optim/grad_norm", "optim/lr",
    "loss/policy", "loss/kl",
]


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    config = load_config("tiny", SMOKE + ["optim.steps=2"])
    with open_state(config, run_dir, echo=lambda _: None) as state:
        before = {k: v.detach().clone() for k, v in state.model.state_dict().items()}
        summary = train(state)
        after = {k: v.detach().clone() for k, v in state.model.state_dict().items()}
    return run_dir, summary, before, after


@pytest.mark.slow
def test_steps_update_the_model_and_write_everything(smoke_run):
    run_dir, summary, before, after = smoke_run
    assert any(not torch.equal(before[k], after[k]) for k in before), "parameters did not move"
    records = read_metrics(run_dir / "metrics.jsonl")
    assert [r["step"] for r in records] == [0, 1, 2]  # eval before RL, 2 steps (+ eval after)
    assert records[0]["eval/avg@2"] == summary["heldout_acc_before_rl"]
    assert records[-1]["eval/greedy"] == summary["heldout_greedy_acc_after_rl"]
    records = [r for r in records if "compute/generated_tokens" in r]
    trained = [r for r in records if r["sampling/kept_groups"] > 0]
    assert trained, "no step found an informative group"
    for record in trained:
        missing = [k for k in REQUIRED_KEYS if k not in record]
        assert not missing, f"metrics lack {missing}"
        assert math.isfinite(record["loss/policy"])
        assert record["compute/trained_tokens"] > 0
        acc = record["reward/accuracy"]  # the mean length splits into right and wrong ones'
        split = acc * record["length/correct_mean"] + (1 - acc) * record["length/wrong_mean"]
        assert split == pytest.approx(record["length/mean"])
    for record in records:
        assert record["compute/generated_tokens"] >= record["sampling/generated_groups"] * 8
    assert (run_dir / "config.yaml").is_file()
    assert (run_dir / "learning_curve.png").stat().st_size > 1000
    assert list((run_dir / "tensorboard").glob("events.out.tfevents.*"))
    saved = json.loads((run_dir / "summary.json").read_text())
    assert saved == summary
    for key in ("heldout_acc_before_rl", "heldout_acc_after_rl",
                "heldout_greedy_acc_before_rl", "heldout_greedy_acc_after_rl"):
        assert 0.0 <= saved[key] <= 1.0
    assert saved["generated_tokens"] == sum(r["compute/generated_tokens"] for r in records)
    assert saved["trained_tokens"] == sum(r["compute/trained_tokens"] for r in records)


@pytest.mark.slow
def test_checkpoint_holds_model_optimizer_and_stream_state(smoke_run):
    run_dir = smoke_run[0]
    ckpt = latest_checkpoint(run_dir / "checkpoints")
    assert ckpt is not None and ckpt.name == "step_00000002"
    meta = load_checkpoint(ckpt, restore_rng=False)
    assert meta["step"] == 2
    assert meta["config"]["optim"]["steps"] == 2
    episodes = meta["extra_state"]["episodes"]
    assert episodes["started"] and episodes["env"]["source"]["index"] > 0
    for name in ("optimizer.pt", "scheduler.pt", "rng.pt"):
        assert (ckpt / name).is_file()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    AutoTokenizer.from_pretrained(meta["model_dir"])  # an ordinary HF directory
    AutoModelForCausalLM.from_pretrained(meta["model_dir"])


@pytest.mark.slow
def test_resume_continues_from_the_right_step(smoke_run, tmp_path):
    import shutil

    run_dir = tmp_path / "copy"
    shutil.copytree(smoke_run[0], run_dir)
    step1 = run_dir / "checkpoints" / "step_00000001"
    assert step1.is_dir(), "keep_checkpoints=2 keeps steps 1 and 2"
    first = load_checkpoint(step1, restore_rng=False)["extra_state"]["episodes"]["env"]
    first = first["source"]["index"]
    # Resume from step 1 of a 2-step run, now extended to 3 steps.
    code = cli_main(_args(["--resume", str(step1), "optim.steps=3"]))
    assert code == 0
    records = read_metrics(run_dir / "metrics.jsonl")
    assert [r["step"] for r in records] == [0, 1, 2, 3]
    records = [r for r in records if "compute/generated_tokens" in r]
    # Model, optimizer, RNG, problem stream and KL reference restored: step 2 is the
    # original step 2 (its grad norm and KL would differ with the wrong reference).
    original = read_metrics(smoke_run[0] / "metrics.jsonl")[2]
    for key in ("compute/generated_tokens", "reward/accuracy", "sampling/kept_groups",
                "loss/policy", "loss/kl", "optim/grad_norm"):
        assert records[1][key] == pytest.approx(original[key], rel=1e-5, abs=1e-7), key
    assert latest_checkpoint(run_dir / "checkpoints").name == "step_00000003"
    meta = load_checkpoint(latest_checkpoint(run_dir / "checkpoints"), restore_rng=False)
    assert meta["config"]["optim"]["steps"] == 3
    # The problem stream continued where step 1 left it, not from the start.
    assert meta["extra_state"]["episodes"]["env"]["source"]["index"] > first


@pytest.mark.slow
def test_resume_keeps_the_rl_start_model_as_kl_reference(smoke_run, tmp_path):
    import shutil

    run_dir = tmp_path / "copy"
    shutil.copytree(smoke_run[0], run_dir)
    start = smoke_run[2]  # the policy when RL started (after the warm start)
    config = load_config("tiny", SMOKE + ["optim.steps=2"])
    with open_state(config, run_dir, resume=str(run_dir / "checkpoints" / "step_00000001"),
                    echo=lambda _: None) as state:
        reference = state.ref_model.state_dict()
        policy = state.model.state_dict()
        frozen = not any(p.requires_grad for p in state.ref_model.parameters())
        origin = state.record.reference
    assert any(not torch.equal(policy[k], start[k]) for k in start), "policy did not move"
    for name, value in reference.items():
        torch.testing.assert_close(value, start[name], rtol=0, atol=0, msg=name)
    assert frozen and origin == "reference"  # a copy in the run directory, found again


@pytest.mark.slow
def test_resuming_a_finished_run_changes_nothing(smoke_run, tmp_path):
    import shutil

    run_dir = tmp_path / "copy"
    shutil.copytree(smoke_run[0], run_dir)
    files = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    assert cli_main(_args(["--resume", str(run_dir)])) == 0  # its final checkpoint
    now = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    changed = sorted(str(p.relative_to(run_dir)) for p in now if files.get(p) != now[p])
    assert changed == ["config.yaml"] or not changed, changed  # summary.json not rewritten
    assert json.loads((run_dir / "summary.json").read_text()) == smoke_run[1]


def _args(argv):
    import argparse

    from verimath.trainer.run.cli import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_cli_reports_bad_overrides(capsys):
    assert cli_main(_args(["algo.eps_hihg=1"])) == 2
    assert "unknown key algo.eps_hihg" in capsys.readouterr().err
    assert cli_main(_args(["--config", "nope"])) == 2
    assert "unknown preset" in capsys.readouterr().err


def test_cli_prints_config_and_presets(capsys):
    assert cli_main(_args(["--print-config", "algo.eps_high=0.3"])) == 0
    assert "eps_high: 0.3" in capsys.readouterr().out
    assert cli_main(_args(["--list-presets"])) == 0
    assert "tiny" in capsys.readouterr().out.split()


def test_device_auto_is_cpu_float32_without_a_gpu():
    from verimath.trainer.model.policy import resolve_device

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    assert resolve_device("auto", "auto") == (torch.device("cpu"), torch.float32)
    assert resolve_device("cpu", "bfloat16") == (torch.device("cpu"), torch.bfloat16)
    with pytest.raises(ValueError, match="no CUDA device"):
        resolve_device("cuda", "auto")


@pytest.mark.slow
def test_any_hf_directory_works_as_model_path(smoke_run, tmp_path):
    from verimath.trainer.config import ModelConfig
    from verimath.trainer.model.policy import load_policy

    model_dir = latest_checkpoint(smoke_run[0] / "checkpoints") / "model"
    model, tokenizer = load_policy(ModelConfig(path=str(model_dir)), device=torch.device("cpu"),
                                   dtype=torch.float32)
    trained = smoke_run[3]
    for name, value in model.state_dict().items():
        assert torch.equal(value, trained[name]), name
    assert tokenizer("12")["input_ids"] == [tokenizer.convert_tokens_to_ids(c) for c in "12"]
    with pytest.raises(ValueError, match="no such directory"):
        load_policy(ModelConfig(path=str(tmp_path / "nowhere")), device=torch.device("cpu"),
                    dtype=torch.float32)


@pytest.mark.slow  # it reads the smoke run
def test_reward_workers_sizes_the_shared_scoring_pool(smoke_run):
    from verimath.rewards import default_pool

    assert default_pool().workers == 1
