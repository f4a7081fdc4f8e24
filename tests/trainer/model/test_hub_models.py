"""Hub model ids (``model.path=org/name``) through huggingface_hub's cache: a cache laid out by
the test (``models--org--name/snapshots/<rev>/`` and ``refs/main``), ``HF_HUB_OFFLINE=1``, no
network. ``train``, ``eval`` and ``--estimate`` all resolve an id to the cached snapshot."""

from __future__ import annotations

import json

import pytest
import torch
from verimath.trainer.cli import main as verimath
from verimath.trainer.config import ModelConfig
from verimath.trainer.model.hub import is_hub_id, resolve_model_dir

REPO = "verimath-test/tiny-qwen2"
REVISION = "0123456789abcdef0123456789abcdef01234567"


def snapshot_dir(cache, repo=REPO, revision=REVISION):
    return cache / f"models--{repo.replace('/', '--')}" / "snapshots" / revision


def lay_out(cache, repo=REPO, *, config_only=False):
    """A cache entry of ``repo`` as huggingface_hub writes it (files in the snapshot folder,
    the revision in refs/main); the tiny model and tokenizer unless ``config_only``."""
    from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model

    folder = snapshot_dir(cache, repo)
    folder.mkdir(parents=True)
    (folder.parents[1] / "refs").mkdir()
    (folder.parents[1] / "refs" / "main").write_text(REVISION)
    tokenizer = make_char_tokenizer()
    model = make_tiny_model(tokenizer, hidden_size=16, num_layers=1, num_heads=2, seed=3)
    if config_only:
        model.config.to_json_file(folder / "config.json")
    else:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    return model


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    cache = tmp_path / "hub-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


@pytest.mark.parametrize(("text", "expected"), [
    ("Qwen/Qwen2.5-Math-7B", True), ("gpt2", True), ("org/name.v1_2", True),
    ("/abs/model", False), ("./model", False), ("~/model", False), ("a/b/c", False),
    ("runs/x/checkpoints/step_2", False), ("org--x/y", False), ("org/../x", False)])
def test_hub_ids_and_paths_are_told_apart(text, expected):
    assert is_hub_id(text) is expected


def test_an_id_in_the_cache_loads_its_snapshot_offline(hub_cache):
    from verimath.trainer.model.policy import load_policy

    built = lay_out(hub_cache)
    assert resolve_model_dir(REPO) == snapshot_dir(hub_cache)
    model, tokenizer = load_policy(ModelConfig(path=REPO), device=torch.device("cpu"),
                                   dtype=torch.float32)
    for name, value in built.state_dict().items():
        assert torch.equal(model.state_dict()[name], value), name
    assert tokenizer.decode(tokenizer("1 + 2")["input_ids"]) == "1 + 2"


def test_hf_home_places_the_cache_under_hub(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    lay_out(tmp_path / "hub", config_only=True)
    assert resolve_model_dir(REPO, config_only=True) == snapshot_dir(tmp_path / "hub")


def test_an_id_in_neither_cache_nor_directory_names_both(hub_cache):
    with pytest.raises(ValueError) as info:
        resolve_model_dir("verimath-test/absent")
    message = str(info.value)
    assert "model.path='verimath-test/absent'" in message and str(hub_cache) in message
    assert "HF_HUB_OFFLINE" in message
    with pytest.raises(ValueError, match="no such directory, and not a Hugging Face hub id"):
        resolve_model_dir("/no/such/model")


def test_a_directory_wins_over_an_id_of_the_same_name(hub_cache, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org" / "model").mkdir(parents=True)
    with pytest.raises(ValueError, match="a directory without config.json"):
        resolve_model_dir("org/model")


def test_a_mistyped_local_path_is_a_missing_directory_not_a_hub_id(tmp_path, monkeypatch,
                                                                    capsys):
    """``runs/nope`` where ``runs/`` exists is a typo of a local path: the error says so rather
    than that a hub repository is not in the cache; the hub is never asked."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    with pytest.raises(ValueError, match=r"model.path='runs/nope': no such directory \(runs/"):
        resolve_model_dir("runs/nope")
    assert verimath(["eval", "--model", "runs/nope", "--data", "verimath/Arithmetic-v0"]) == 2
    err = capsys.readouterr().err
    assert "'runs/nope': no such directory" in err and "cache" not in err


def test_train_refuses_a_missing_id_before_writing(hub_cache, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert verimath(["train", "--config", "tiny", "--output-dir", str(run_dir),
                     "model.path=verimath-test/absent"]) == 2
    err = capsys.readouterr().err
    assert "verimath-test/absent" in err and str(hub_cache) in err and "Traceback" not in err
    assert not run_dir.exists()


def test_estimate_reads_the_shape_from_the_cached_config(hub_cache, capsys):
    built = lay_out(hub_cache, config_only=True)
    assert verimath(["train", "--config", "tiny", "--estimate", f"model.path={REPO}",
                     "--nproc", "1"]) == 0
    out = capsys.readouterr().out
    model_line = " ".join(out.split("GPUs")[0].split())
    assert f"model {REPO}:" in model_line
    assert "hidden 16" in model_line and f"vocab {built.config.vocab_size}" in model_line


def test_eval_takes_an_id(hub_cache, tmp_path):
    from verimath.trainer.evaluation.inputs import resolve_model

    lay_out(hub_cache)
    source = resolve_model(REPO)
    assert source.model_dir == snapshot_dir(hub_cache) and source.run_config == {}
    problems = tmp_path / "p.jsonl"
    problems.write_text("".join(json.dumps({"id": str(i), "prompt": f"{i} + 1 = ?",
                                            "answer": str(i + 1), "source": "t"}) + "\n"
                                for i in range(3)))
    output = tmp_path / "out"
    assert verimath(["eval", "--model", REPO, "--data", str(problems), "--output", str(output),
                     "--k", "1", "--max-new-tokens", "4", "--no-progress", "--template", "raw",
                     "--answer-style", "dapo", "--mode", "integer"]) == 0
    assert (output / "samples.jsonl").is_file()


def test_a_run_from_an_id_trains_and_keeps_the_snapshot_as_kl_reference(hub_cache, tmp_path):
    from verimath.trainer.checkpoint.files import latest_checkpoint
    from verimath.trainer.config.files import load_config
    from verimath.trainer.run.loop import train
    from verimath.trainer.run.setup import open_state

    lay_out(hub_cache)
    config = load_config("tiny", [
        f"model.path={REPO}", "model.threads=0", "warmstart.steps=0", "rollout.gen_prompts=2",
        "rollout.group_size=2", "rollout.max_new_tokens=4", "reward.overlong_buffer=2",
        "algo.dynamic_sampling=false", "algo.train_prompts=2", "algo.mini_batch_prompts=2",
        "algo.kl_coef=0.1", "eval.num_problems=0", "optim.steps=1", "logging.progress=false",
        "logging.plot=false"])
    with open_state(config, tmp_path / "run", echo=lambda _: None) as state:
        train(state)
        assert state.record.reference == str(snapshot_dir(hub_cache).resolve())
    assert (latest_checkpoint(tmp_path / "run" / "checkpoints") / "model" / "config.json").is_file()


def _hub_error(cls, message: str):
    """A huggingface_hub HTTP error without an HTTP response (its constructor wants one)."""
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    return exc


def test_online_an_id_is_downloaded_into_the_cache(hub_cache, monkeypatch):
    import huggingface_hub

    calls = []

    def fake_download(repo_id, **kwargs):  # what a download leaves: the snapshot folder
        calls.append((repo_id, kwargs))
        folder = snapshot_dir(kwargs["cache_dir"], repo_id)
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}")
        return str(folder)

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    assert resolve_model_dir("org/online") == snapshot_dir(hub_cache, "org/online")
    (repo_id, kwargs), = calls
    assert repo_id == "org/online" and kwargs["local_files_only"] is False
    assert kwargs["cache_dir"] == hub_cache and "*.safetensors" in kwargs["allow_patterns"]


@pytest.mark.parametrize(("error", "message"), [
    ("RepositoryNotFoundError", "no such repository on the hub"),
    ("GatedRepoError", "a gated repository")])
def test_hub_refusals_name_the_id_and_what_to_do(hub_cache, monkeypatch, error, message):
    import huggingface_hub
    from huggingface_hub import errors

    def refuse(repo_id, **kwargs):
        raise _hub_error(getattr(errors, error), f"{repo_id}: 404")

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", refuse)
    with pytest.raises(ValueError, match=message) as info:
        resolve_model_dir("org/private")
    assert "model.path='org/private'" in str(info.value) and str(hub_cache) in str(info.value)
