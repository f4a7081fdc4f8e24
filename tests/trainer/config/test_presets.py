"""The presets: each prints a config that loads back, the recipe presets carry the paper's
settings and fit the GPUs they are sized for, and ``--estimate`` runs on every one."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from verimath.trainer.cli import main
from verimath.trainer.config.files import load_config, preset_names, required_settings
from verimath.trainer.estimate.budget import GPUS, KNOWN_SHAPES, estimate_run, model_shape
from verimath.trainer.estimate.cli import PRESET_GPUS, PRESET_MODELS, run_shape

RECIPES_PAGE = Path(__file__).resolve().parents[3] / "docs" / "recipes.md"
RECIPES = ("dapo-qwen2.5-32b", "dapo-qwen2.5-math-7b", "dapo-qwen2.5-1.5b")


def test_the_recipes_are_presets():
    assert set(RECIPES) <= set(preset_names())
    assert set(PRESET_MODELS) == set(PRESET_GPUS) == set(RECIPES)


@pytest.mark.parametrize("name", preset_names())
def test_print_config_loads_back(name, tmp_path, capsys):
    assert main(["train", "--config", name, "--print-config"]) == 0
    printed = tmp_path / "printed.yaml"
    printed.write_text(capsys.readouterr().out, encoding="utf-8")
    assert load_config(str(printed)) == load_config(name, check_required=False)


def test_the_32b_preset_is_the_papers_run():
    c = load_config("dapo-qwen2.5-32b", check_required=False)
    r, a, o = c.rollout, c.algo, c.optim
    assert (r.gen_prompts, r.group_size, a.train_prompts) == (512, 16, 512)
    assert r.max_new_tokens == 20480 and c.reward.overlong_buffer == 4096
    assert r.max_new_tokens - c.reward.overlong_buffer == 16384  # L_max
    assert c.reward.overlong_punishment and a.overlong_filtering
    assert (a.eps_low, a.eps_high, a.clip_higher) == (0.2, 0.28, True)
    assert a.dynamic_sampling and a.aggregation == "token-mean" and a.kl_coef == 0
    assert (o.lr, o.warmup_steps, o.schedule) == (1e-6, 20, "constant")
    # mini-batch 512 responses = 32 groups of 16: 16 updates per rollout step
    assert a.mini_batch_prompts * r.group_size == 512
    assert a.train_prompts // a.mini_batch_prompts * a.ppo_epochs == 16
    assert (c.eval.k, r.temperature) == (32, 1.0)
    assert c.data.heldout_file == "aime24.jsonl" and r.engine == "vllm"
    assert set(required_settings("dapo-qwen2.5-32b")) == {"model.path", "data.train_file"}
    with pytest.raises(ValueError, match="needs model.path.*data.train_file"):
        load_config("dapo-qwen2.5-32b")


@pytest.mark.parametrize("name", RECIPES)
def test_recipes_fit_their_model_and_gpus(name):
    c = load_config(name, check_required=False)
    limit = KNOWN_SHAPES[PRESET_MODELS[name]]["max_position_embeddings"]
    assert c.rollout.vllm_max_model_len <= limit  # prompt + response within the context
    assert c.rollout.vllm_max_model_len > c.rollout.max_new_tokens
    assert c.reward.overlong_buffer < c.rollout.max_new_tokens
    run = run_shape(c, PRESET_GPUS[name])
    if name == "dapo-qwen2.5-32b":  # a 22,528-token sequence needs activation checkpointing
        assert run.activation_checkpointing
        without = dataclasses.replace(run, activation_checkpointing=False)
        assert not estimate_run(model_shape(KNOWN_SHAPES["Qwen2.5-32B"]), without,
                                GPUS["H100"]).fits
    estimate = estimate_run(model_shape(KNOWN_SHAPES[PRESET_MODELS[name]]), run, GPUS["H100"])
    assert estimate.fits and estimate.peak_gib < 0.8 * 80


@pytest.mark.parametrize("name", preset_names())
def test_estimate_runs_on_every_preset(name, capsys):
    argv = ["train", "--config", name, "--estimate"]
    if "model.path" in required_settings(name) and name not in PRESET_MODELS:
        assert main(argv) == 2
        assert "--model-shape" in capsys.readouterr().err
        argv += ["--model-shape", "Qwen2.5-Math-7B"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "memory per GPU (GiB)" in out and "per step (estimate, not measured)" in out
    assert re.search(r"peak \d+\.\d of \d+", out)


def test_estimate_inputs(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text('{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, '
                      '"intermediate_size": 256, "vocab_size": 1000}')
    argv = ["train", "--config", "dapo", "--estimate", "--nproc", "2", "--gpu", "A100",
            "--gpu-memory-gib", "40", f"model.path={tmp_path}"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "2 x A100 (40 GiB, 312 TFLOP/s" in out and "hidden 64" in out
    assert main(["train", "--estimate", "--model-shape", "nope"]) == 2
    assert "neither a known shape" in capsys.readouterr().err


@pytest.mark.parametrize("name", RECIPES)
def test_the_recipes_page_shows_each_recipes_estimate(name, capsys):
    assert main(["train", "--config", name, "--estimate"]) == 0
    out = capsys.readouterr().out
    assert f"```text\n{out}```" in RECIPES_PAGE.read_text(encoding="utf-8"), (
        f"docs/recipes.md is stale: paste `verimath train --config {name} --estimate`")


@pytest.mark.parametrize("name", preset_names())
def test_a_preset_header_is_a_purpose_line_and_a_pointer_to_its_page(name):
    """At most four comment lines before the settings: the purpose (``--list-presets``), then
    where the preset's reasons and measurements are written (a docs page that exists)."""
    from verimath.trainer.config.files import presets_folder

    root = Path(__file__).resolve().parents[3]
    lines = (presets_folder() / f"{name}.yaml").read_text(encoding="utf-8").splitlines()
    header = [line for line in lines[:next(i for i, t in enumerate(lines)
                                           if not t.startswith("#"))]]
    assert 1 <= len(header) <= 4, header
    pages = re.findall(r"docs/[\w./-]+\.md", " ".join(header))
    assert pages and all((root / page).is_file() for page in pages), pages
