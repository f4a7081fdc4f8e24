"""What a user sees when something is wrong: bad settings, corrupt checkpoints, bad data
files, Ctrl-C. Each error names the setting or file, comes without a traceback (exit code 2,
130 for an interruption), and leaves what was already on disk as it was."""

from __future__ import annotations

import argparse
import json
import shutil

import pytest
import torch
from verimath.trainer.checkpoint.files import latest_checkpoint, load_checkpoint, save_checkpoint
from verimath.trainer.config.files import load_config
from verimath.trainer.run.cli import TRAINED_NOTHING, add_arguments
from verimath.trainer.run.cli import main as train_main
from verimath.trainer.run.launch import interrupted_message

# A run that takes about a second: tiny model, no warm start, no evaluation.
QUICK = ["model.tiny_hidden_size=32", "model.tiny_layers=1", "model.tiny_heads=2",
         "model.threads=0", "warmstart.steps=0", "rollout.gen_prompts=2", "rollout.group_size=2",
         "rollout.max_new_tokens=4", "reward.overlong_buffer=2", "algo.train_prompts=2",
         "algo.mini_batch_prompts=2", "algo.max_gen_rounds=1", "algo.dynamic_sampling=false",
         "eval.num_problems=0", "logging.progress=false", "logging.plot=false",
         "logging.save_every=1"]


FINISHED = (0, TRAINED_NOTHING)
"""A QUICK run finishes; its untrained model may well get every answer wrong (exit code 3)."""


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return train_main(parser.parse_args(argv))


@pytest.mark.parametrize("override, setting", [
    ("data.family=Algebra", "data.family"),
    ("reward.mode=exact", "reward.mode"),
    ("model.prompt_template=chatml", "model.prompt_template"),
])
def test_unknown_names_are_rejected_with_the_setting(override, setting, capsys):
    with pytest.raises(ValueError, match=setting):
        load_config("tiny", [override])
    assert _cli([override, "--print-config"]) == 2  # before any run directory exists
    err = capsys.readouterr().err
    assert setting in err and "Traceback" not in err


def test_an_unreachable_train_prompts_target_is_refused():
    with pytest.raises(ValueError, match=r"algo.train_prompts \(32\) can never be collected"):
        load_config("tiny", ["rollout.gen_prompts=8", "algo.max_gen_rounds=3"])
    load_config("tiny", ["rollout.gen_prompts=8", "algo.max_gen_rounds=4"])  # 32: fine


def test_float16_on_the_cpu_is_refused():
    from verimath.trainer.model.policy import resolve_device

    with pytest.raises(ValueError, match="model.dtype='float16'"):
        resolve_device("cpu", "float16")


@pytest.fixture
def checkpoint(tmp_path):
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    return save_checkpoint(tmp_path / "ckpts", model=model, optimizer=optimizer, step=3,
                           config={"a": 1}, extra_state={"run": {}, "episodes": {}})


@pytest.mark.parametrize("name", ["optimizer.pt", "model/model.pt", "checkpoint.json",
                                  "config.json", "extra_state.json"])
def test_a_corrupt_checkpoint_file_is_named(checkpoint, name):
    (checkpoint / name).write_bytes(b"{ not what was written")
    model = torch.nn.Linear(3, 2)
    with pytest.raises(ValueError, match=f"{name}.* corrupt|corrupt.*{name}"):
        load_checkpoint(checkpoint, model=model,
                        optimizer=torch.optim.AdamW(model.parameters()))


def test_corrupt_safetensors_weights_are_named(tmp_path):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(vocab_size=16, hidden_size=8, intermediate_size=8, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2)
    model = Qwen2ForCausalLM(cfg)
    path = save_checkpoint(tmp_path, model=model, step=1, config={})
    (weights,) = (path / "model").glob("*.safetensors")
    weights.write_bytes(weights.read_bytes()[:50])
    with pytest.raises(ValueError, match="model.safetensors are corrupt"):
        load_checkpoint(path, model=Qwen2ForCausalLM(cfg))


def test_a_checkpoint_without_trainer_state_is_refused(checkpoint):
    from verimath.trainer.run.checkpoints import _trainer_state

    meta = load_checkpoint(checkpoint, restore_rng=False)
    assert _trainer_state(meta) == {"run": {}, "episodes": {}}
    with pytest.raises(ValueError, match="holds no trainer state"):
        _trainer_state({**meta, "extra_state": {"episodes": {}}})


@pytest.mark.parametrize("text, expected", [
    ('{"id": "a", "prompt": "1+1?", "answer": "2", "source": "t"}\n'
     '{"id": "b", "prompt": "2+2?", "source": "t"}\n',
     "bad.jsonl:2: missing field 'answer'"),
    ("not json\n", "bad.jsonl:1: invalid JSON"),
    ("", "holds no problems"),
    ('{"id": "a", "prompt": "1+1?", "answer": "2", "source": "t"}\n'
     '{"id": "b", "prompt": "caf\udce9?", "answer": "2", "source": "t"}\n',
     "bad.jsonl:2: not UTF-8 text (byte 0xe9 at column 27)"),
    ('{"question": "Tom has 3 apples and buys 2. How many?", "answer": "3 + 2 = 5\\n#### 5"}\n',
     "bad.jsonl:1: missing field 'id' (the row has 'question', 'answer': it looks like raw data; "
     "convert it first: verimath prep gsm8k --input"),
])
def test_a_bad_problems_file_fails_before_the_run_starts(tmp_path, capsys, text, expected):
    (tmp_path / "bad.jsonl").write_bytes(text.encode("utf-8", "surrogateescape"))
    for key in ("train_file", "heldout_file"):
        code = _cli([f"data.{key}={tmp_path / 'bad.jsonl'}", "--output-dir",
                     str(tmp_path / "run")])
        err = capsys.readouterr().err
        assert code == 2 and f"data.{key}" in err and expected in err
        assert "Traceback" not in err and not (tmp_path / "run").exists()


def test_a_directory_as_a_problems_file_is_named_as_such(tmp_path, capsys):
    assert _cli([f"data.train_file={tmp_path}", "--output-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"data.train_file={str(tmp_path)!r} is a directory" in err
    assert "verimath prep" in err and not (tmp_path / "run").exists()


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A one-step run made by the command line (one checkpoint, step_00000001)."""
    run_dir = tmp_path_factory.mktemp("quick") / "run"
    assert _cli(["--output-dir", str(run_dir), *QUICK, "optim.steps=1"]) in FINISHED
    return run_dir


def test_resume_records_the_effective_config(finished_run, tmp_path):
    out = tmp_path / "continued"
    resumed = _cli(["--resume", str(finished_run), "--output-dir", str(out), "optim.steps=2"])
    assert resumed in FINISHED
    assert load_config(str(out / "config.yaml")).optim.steps == 2
    assert [json.loads(line)["step"] for line in open(out / "metrics.jsonl")] == [2]
    assert load_config(str(finished_run / "config.yaml")).optim.steps == 1


def test_resume_from_a_corrupt_checkpoint_changes_nothing(finished_run, tmp_path, capsys):
    run_dir = tmp_path / "copy"
    shutil.copytree(finished_run, run_dir)
    (run_dir / "checkpoints" / "step_00000001" / "optimizer.pt").write_bytes(b"truncated")
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    assert _cli(["--resume", str(run_dir), "optim.steps=2"]) == 2
    err = capsys.readouterr().err
    assert "optimizer.pt is corrupt" in err and "Traceback" not in err
    after = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    assert after == before


def test_ctrl_c_exits_130_and_says_how_to_resume(tmp_path, capsys, monkeypatch):
    import verimath.trainer.run.loop as train_module

    def interrupted(state):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_module, "train", interrupted)
    assert _cli(["--output-dir", str(tmp_path / "run"), *QUICK, "optim.steps=1"]) == 130
    err = capsys.readouterr().err
    assert "interrupted before the first checkpoint" in err and "Traceback" not in err


def test_interrupted_message_points_at_the_latest_checkpoint(finished_run):
    message = interrupted_message(finished_run)
    assert "step_00000001" in message
    assert f"verimath train --resume {finished_run}" in message


def _files(run_dir) -> dict:
    return {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}


def test_an_existing_run_is_never_mixed_with_a_new_one(finished_run, capsys):
    before = _files(finished_run)
    assert _cli(["--output-dir", str(finished_run), *QUICK, "optim.steps=1"]) == 2
    err = capsys.readouterr().err
    assert f"--output-dir {finished_run} already holds a run" in err
    assert f"verimath train --resume {finished_run}" in err and "--overwrite" in err
    assert _files(finished_run) == before


def test_overwrite_deletes_the_old_run_first(finished_run, tmp_path, capsys):
    run_dir = tmp_path / "copy"
    shutil.copytree(finished_run, run_dir)
    (run_dir / "stale.txt").write_text("from the old run")
    assert _cli(["--output-dir", str(run_dir), "--overwrite", *QUICK, "optim.steps=1"]) in FINISHED
    assert not (run_dir / "stale.txt").exists()
    assert [json.loads(line)["step"] for line in open(run_dir / "metrics.jsonl")] == [1]
    assert "deleting the run" in capsys.readouterr().err


def test_a_directory_that_holds_no_run_is_never_deleted(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert _cli(["--output-dir", str(tmp_path), "--overwrite", *QUICK]) == 2
    assert "holds no verimath run" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_overwrite_never_deletes_the_run_being_resumed(finished_run, capsys):
    before = _files(finished_run)
    assert _cli(["--resume", str(finished_run), "--overwrite", "optim.steps=2"]) == 2
    assert "holds the checkpoint being resumed" in capsys.readouterr().err
    assert _files(finished_run) == before


@pytest.mark.parametrize("argv, changed", [
    (["algo.eps_high=0.3", "optim.steps=2"], ["algo.eps_high: 0.28 -> 0.3"]),
    (["--config", "grpo", *QUICK], ["algo.clip_higher: true -> false",
                                    "reward.overlong_punishment: true -> false"]),
])
def test_resume_says_what_changed_and_refuses_to_change_the_experiment(
        finished_run, tmp_path, capsys, argv, changed):
    run_dir = tmp_path / "copy"
    shutil.copytree(finished_run, run_dir)
    before = _files(run_dir)
    assert _cli(["--resume", str(run_dir), *argv]) == 2
    err = capsys.readouterr().err
    assert "with changed settings:" in err and "--allow-config-change" in err
    assert all(f"  {line}" in err for line in changed)
    assert _files(run_dir) == before


def test_resume_with_safe_or_allowed_changes_prints_them(finished_run, tmp_path, capsys):
    run_dir = tmp_path / "copy"
    shutil.copytree(finished_run, run_dir)
    assert _cli(["--resume", str(run_dir), "optim.steps=2", "logging.save_every=5",
                 "algo.eps_high=0.3", "--allow-config-change"]) in FINISHED
    err = capsys.readouterr().err
    for line in ("optim.steps: 1 -> 2", "logging.save_every: 1 -> 5", "algo.eps_high: 0.28 -> 0.3"):
        assert f"  {line}" in err
    assert load_config(str(run_dir / "config.yaml")).algo.eps_high == 0.3


def test_a_corrupt_optimizer_file_is_described_in_whole_words(finished_run, tmp_path):
    ckpt = tmp_path / "ckpt"
    shutil.copytree(finished_run / "checkpoints" / "step_00000001", ckpt)
    data = (ckpt / "optimizer.pt").read_bytes()
    (ckpt / "optimizer.pt").write_bytes(data[: len(data) // 2])
    try:
        torch.load(ckpt / "optimizer.pt", weights_only=True)
    except Exception as exc:  # what torch itself says
        original = str(exc).strip()
    model = torch.nn.Linear(3, 2)
    with pytest.raises(ValueError) as info:
        load_checkpoint(ckpt, optimizer=torch.optim.AdamW(model.parameters()))
    message = str(info.value)
    assert "optimizer.pt is corrupt" in message and message.endswith("checkpoint directory")
    cause = message.split("Error: ", 1)[1].rsplit("); resume", 1)[0].removesuffix(" ...")
    assert original.startswith(cause)
    assert len(cause) == len(original) or original[len(cause)] in " .", cause


def test_load_tokenizer_takes_a_string_path(finished_run):
    from verimath.trainer.model.policy import load_tokenizer

    folder = str(finished_run / "checkpoints" / "step_00000001" / "model")
    tokenizer = load_tokenizer(folder)
    assert tokenizer.decode(tokenizer.encode("1 + 2\nAnswer: 3")) == "1 + 2\nAnswer: 3"
    with pytest.raises(ValueError, match="is not a model directory"):
        load_tokenizer(folder + "-missing")


def test_errors_found_when_the_run_starts_leave_no_directory(tmp_path, capsys, monkeypatch):
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",  # as on a machine without vLLM
                        lambda name, *a: None if name == "vllm" else real_find_spec(name, *a))
    for override, message in (("rollout.engine=vllm", "verimath[vllm]"),
                              ("model.device=cuda", "no CUDA device")):
        if override == "model.device=cuda" and torch.cuda.is_available():
            continue
        run_dir = tmp_path / override.split("=")[0]
        assert _cli(["--output-dir", str(run_dir), *QUICK, override]) == 2
        assert message in capsys.readouterr().err
        assert not run_dir.exists()


def test_a_loaded_model_starts_rl_as_given(finished_run, tmp_path, capsys):
    """The tiny preset's noisy warm start is for the built model: model.path skips it (and
    says so) unless warmstart.pretrained asks for it."""
    model = finished_run / "checkpoints" / "step_00000001" / "model"
    given = tmp_path / "given"
    assert _cli(["--output-dir", str(given), *QUICK, f"model.path={model}",
                 "warmstart.steps=50", "optim.steps=0"]) == 0
    assert "warm start (warmstart.steps=50) is for the built tiny model" in capsys.readouterr().out
    assert (given / "summary.json").is_file()
    from verimath.trainer.model.policy import load_pretrained

    saved = load_pretrained(latest_checkpoint(given / "checkpoints") / "model",
                            dtype=torch.float32)[0].state_dict()
    original = load_pretrained(model, dtype=torch.float32)[0].state_dict()
    assert all(torch.equal(saved[k], original[k]) for k in original)  # untouched
    asked = tmp_path / "asked"
    assert _cli(["--output-dir", str(asked), *QUICK, f"model.path={model}",
                 "warmstart.steps=5", "warmstart.pretrained=true", "optim.steps=0"]) == 0
    warmed = load_pretrained(latest_checkpoint(asked / "checkpoints") / "model",
                             dtype=torch.float32)[0].state_dict()
    assert any(not torch.equal(warmed[k], original[k]) for k in original)


def test_the_same_model_gives_the_same_evaluation_before_and_after(tmp_path):
    run_dir = tmp_path / "run"
    assert _cli(["--output-dir", str(run_dir), *QUICK, "optim.steps=0", "eval.num_problems=12",
                 "eval.k=2", "rollout.max_new_tokens=6"]) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["heldout_problems"] == 12
    assert summary["heldout_acc_before_rl"] == summary["heldout_acc_after_rl"]
    assert summary["heldout_greedy_acc_before_rl"] == summary["heldout_greedy_acc_after_rl"]
