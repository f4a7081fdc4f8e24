"""``verimath eval`` end to end on a tiny model: tables, resume, checkpoints, user errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import verimath.trainer.evaluation.run as eval_run
from tiny_models import TEMPLATE, fit_seven_or_eight, seven_or_eight_problems
from verimath.trainer.cli import main as verimath
from verimath.trainer.evaluation.metrics import pass_at_k


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("seven-or-eight")
    fit_seven_or_eight(folder)
    return folder


@pytest.fixture(scope="module")
def problems_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "problems.jsonl"
    seven_or_eight_problems(path, count=20)
    return path


def eval_args(model_dir, data, output, *extra):
    return ["eval", "--model", str(model_dir), "--data", str(data), "--output", str(output),
            "--k", "4", "--template", TEMPLATE, "--answer-style", "dapo", "--mode", "integer",
            "--max-new-tokens", "12", "--batch-size", "8", "--no-progress", *extra]


def read_samples(output):
    records = [json.loads(line) for line in open(output / "samples.jsonl")]
    return sorted(records, key=lambda r: (r["index"], r["sample"]))


@pytest.fixture(scope="module")
def uninterrupted(model_dir, problems_file, tmp_path_factory):
    output = tmp_path_factory.mktemp("eval") / "out"
    assert verimath(eval_args(model_dir, problems_file, output)) == 0
    return output


@pytest.mark.slow
def test_twenty_problems_end_to_end(uninterrupted):
    records = read_samples(uninterrupted)
    assert len(records) == 80 and {r["sample"] for r in records} == {0, 1, 2, 3}
    assert set(records[0]) >= {"index", "id", "source", "response", "extracted", "correct",
                               "length", "truncated", "timed_out"}
    for r in records:  # the verdict is the verifier's: "Answer: g" with g the gold
        assert r["correct"] == (r["extracted"] == str(7 + r["index"] % 2))
    correct = np.array([r["correct"] for r in records]).reshape(20, 4)
    summary = json.loads((uninterrupted / "summary.json").read_text())
    overall = summary["overall"]
    assert 0 < overall["avg@4"] < 1 and overall["avg@4"] == pytest.approx(correct.mean())
    low, high = overall["avg@4_ci95"]
    assert low < overall["avg@4"] < high
    assert overall["pass@2"] == pytest.approx(pass_at_k(correct, 2))
    assert overall["pass@1"] <= overall["pass@2"] <= overall["pass@4"]
    assert overall["truncated_frac"] == pytest.approx(np.mean([r["truncated"] for r in records]))
    assert set(summary["by_source"]) == {"a", "b"} and summary["by_source"]["a"]["problems"] == 10
    table = (uninterrupted / "results.md").read_text()
    assert table.count("\n") == 5 and "| all | 20 |" in table and "maj@4" in table


@pytest.mark.slow
def test_an_interrupted_eval_resumes_to_the_same_table(model_dir, problems_file, uninterrupted,
                                                       tmp_path, monkeypatch):
    output = tmp_path / "out"
    calls = {"n": 0}
    real_score = eval_run.score_batch

    def interrupt_on_fourth_chunk(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real_score(*args, **kwargs)

    monkeypatch.setattr(eval_run, "score_batch", interrupt_on_fourth_chunk)
    assert verimath(eval_args(model_dir, problems_file, output)) == 130
    lines = (output / "samples.jsonl").read_text().splitlines(keepends=True)
    assert len(lines) == 3 * 2 * 4  # three chunks of two problems, four samples each
    # a crash in the middle of a chunk: problem 5 half written, then a torn line
    (output / "samples.jsonl").write_text("".join(lines[:-2]) + lines[-2][:15])
    calls["n"] = -100
    assert verimath(eval_args(model_dir, problems_file, output)) == 0
    assert calls["n"] == -100 + 8  # chunks 3..10 sampled again, chunks 1-2 kept
    assert read_samples(output) == read_samples(uninterrupted)
    assert (output / "results.md").read_text() == (uninterrupted / "results.md").read_text()
    assert json.loads((output / "summary.json").read_text()) == json.loads(
        (uninterrupted / "summary.json").read_text())


@pytest.mark.slow
def test_samples_do_not_depend_on_the_batch_size(model_dir, problems_file, uninterrupted,
                                                 tmp_path):
    output = tmp_path / "out"
    args = eval_args(model_dir, problems_file, output)
    args[args.index("--batch-size") + 1] = "20"
    assert verimath(args) == 0
    assert read_samples(output) == read_samples(uninterrupted)


@pytest.mark.slow
def test_a_training_checkpoint_brings_its_templates(model_dir, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM
    from verimath.trainer.checkpoint.files import save_checkpoint
    from verimath.trainer.config.files import load_config
    from verimath.trainer.model.policy import load_tokenizer

    config = load_config("tiny", ["model.prompt_template='{prompt}!'", "rollout.max_new_tokens=6",
                                  "reward.overlong_buffer=2", "data.level=1", "eval.seed=77",
                                  "eval.num_problems=5"])
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    run = tmp_path / "run"
    save_checkpoint(run / "checkpoints", model=model, tokenizer=load_tokenizer(model_dir),
                    optimizer=torch.optim.SGD(model.parameters(), lr=0.1), step=3,
                    config=config.to_dict())
    output = tmp_path / "out"
    assert verimath(["eval", "--model", str(run), "--data", "verimath/Arithmetic-v0",
                     "--preset", "greedy", "--output", str(output), "--no-progress"]) == 0
    settings = json.loads((output / "settings.json").read_text())
    assert settings["model"].endswith("step_00000003/model")
    assert (settings["template"], settings["max_new_tokens"]) == ("{prompt}!", 6)
    assert (settings["answer_style"], settings["mode"]) == ("dapo", "integer")
    assert (settings["level"], settings["problem_seed"], settings["num_problems"]) == (1, 77, 5)
    assert not settings["use_chat_template"] and settings["greedy"] and settings["k"] == 1
    records = read_samples(output)
    assert [r["id"] for r in records] == [f"gen/Arithmetic/L1/77/{i}" for i in range(5)]


@pytest.mark.parametrize("extra, message", [
    (["--k", "0"], "--k must be >= 1"),
    (["--top-p", "1.5"], "--top-p must be in (0, 1]"),
    (["--temperature", "0"], "--temperature must be > 0"),
    (["--preset", "greedy"], "--k must be 1"),
    (["--level", "2"], "apply to procedural env ids only"),
    (["--batch-size", "0"], "--batch-size must be >= 1"),
    (["--template", "nothing"], "--template must be one of"),
    (["--max-new-tokens", "500"], "with --max-new-tokens (500) a sequence reaches"),
])
def test_bad_options_exit_2_before_writing(model_dir, problems_file, tmp_path, capsys,
                                           extra, message):
    output = tmp_path / "out"
    assert verimath(eval_args(model_dir, problems_file, output, *extra)) == 2
    assert message in capsys.readouterr().err
    assert not output.exists()


def test_bad_model_and_data_exit_2(model_dir, problems_file, tmp_path, capsys):
    output = tmp_path / "out"
    assert verimath(eval_args(tmp_path / "missing", problems_file, output)) == 2
    assert "no such directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert verimath(eval_args(tmp_path / "empty", problems_file, output)) == 2
    assert "neither a Hugging Face model directory" in capsys.readouterr().err
    assert verimath(eval_args(model_dir, tmp_path / "nope.jsonl", output)) == 2
    assert "no such file, and not a procedural env id" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(problems_file.read_text().splitlines()[0] + "\n{\"id\": \"x\"}\n")
    assert verimath(eval_args(model_dir, bad, output)) == 2
    assert "bad.jsonl:2" in capsys.readouterr().err
    assert not output.exists()


def test_vllm_without_vllm_names_the_extra(model_dir, problems_file, tmp_path, capsys,
                                           monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm -> ImportError
    monkeypatch.setitem(sys.modules, "verimath.trainer.rollout.vllm_engine", None)
    output = tmp_path / "out"
    assert verimath(eval_args(model_dir, problems_file, output, "--engine", "vllm")) == 2
    assert "pip install 'verimath[vllm]'" in capsys.readouterr().err
    assert not output.exists()


@pytest.mark.slow
def test_other_settings_in_the_output_directory_exit_2(model_dir, problems_file, uninterrupted,
                                                       capsys):
    before = (uninterrupted / "samples.jsonl").read_text()
    args = eval_args(model_dir, problems_file, uninterrupted, "--seed", "1")
    assert verimath(args) == 2
    assert "other settings (seed: 0 -> 1)" in capsys.readouterr().err
    assert (uninterrupted / "samples.jsonl").read_text() == before


@pytest.mark.slow
def test_eval_of_a_run_equals_the_trainers_heldout_evaluation(model_dir, problems_file, tmp_path):
    """From a run, ``verimath eval`` samples with the run's eval.seed, so its avg@4 is the
    trainer's ``evaluate`` on the same weights and problems (whatever the batch size), and
    its results land inside the run."""
    import torch
    from transformers import AutoModelForCausalLM
    from verimath.envs import read_problems
    from verimath.trainer.checkpoint.files import save_checkpoint
    from verimath.trainer.config.files import load_config
    from verimath.trainer.evaluation.evaluate import evaluate
    from verimath.trainer.model.policy import load_tokenizer
    from verimath.trainer.rollout.hf_engine import HFRolloutEngine

    config = load_config("tiny", [f"model.prompt_template={json.dumps(TEMPLATE)}",
                                  "model.use_chat_template=false", "rollout.max_new_tokens=12",
                                  "reward.overlong_buffer=2", "reward.answer_style=dapo",
                                  "reward.mode=integer", "eval.seed=77", "eval.k=4",
                                  f"data.heldout_file={problems_file}"])
    model, tokenizer = AutoModelForCausalLM.from_pretrained(model_dir), load_tokenizer(model_dir)
    run = tmp_path / "run"
    save_checkpoint(run / "checkpoints", model=model, tokenizer=tokenizer,
                    optimizer=torch.optim.SGD(model.parameters(), lr=0.1), step=3,
                    config=config.to_dict())
    assert verimath(["eval", "--model", str(run), "--data", str(problems_file), "--k", "4",
                     "--top-p", "1.0", "--batch-size", "8", "--no-progress"]) == 0
    output = run / "eval" / "step_00000003-problems-aime-avg32-k4-p1.0"
    summary = json.loads((output / "summary.json").read_text())
    assert summary["settings"]["seed"] == 77
    with HFRolloutEngine(model, tokenizer) as engine:
        trainer = evaluate(engine, tokenizer, read_problems(problems_file), k=4, temperature=1.0,
                           top_p=1.0, max_new_tokens=12, template=TEMPLATE,
                           use_chat_template=False, answer_style="dapo", mode="integer",
                           seed=77, batch_size=256)
    overall = summary["overall"]
    assert 0 < trainer["eval/avg@4"] < 1
    assert overall["avg@4"] == pytest.approx(trainer["eval/avg@4"])


def test_options_that_override_the_preset_name_their_own_default_folder(tmp_path):
    """An eval with ``--k 4`` and a later plain one must not share a folder (the plain one
    would find other settings there and stop); the same command maps to the same folder."""
    import argparse

    from verimath.trainer.evaluation.cli import add_arguments, default_output
    from verimath.trainer.evaluation.inputs import ModelSource

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    source = ModelSource(tmp_path / "model", checkpoint=tmp_path / "run" / "checkpoints" / "s")

    def folder(*options):
        return default_output(source, parser.parse_args(
            ["--model", "m", "--data", "verimath/Arithmetic-v0", *options]))

    plain = folder()
    assert plain == tmp_path / "run" / "eval" / "s-Arithmetic-v0-aime-avg32"
    overridden = {folder("--k", "4"), folder("--k", "4", "--temperature", "0.6"),
                  folder("--max-new-tokens", "64"), folder("--template", "{prompt}\n"),
                  folder("--template", "boxed"), folder("--engine", "vllm"),
                  folder("--no-chat-template"), folder("--preset", "greedy")}
    assert len(overridden) == 8 and plain not in overridden
    assert folder("--k", "4") == folder("--k", "4") and folder("--k", "4").name.endswith("-k4")
