"""The `verimath` command: subcommands are wired and bad input fails cleanly, without a
traceback."""

from __future__ import annotations

import importlib.util

import pytest
import yaml
from verimath.trainer.cli import SUBCOMMANDS, build_parser, main


def test_every_subcommand_is_registered():
    parser = build_parser()
    written = [name for name, (module, _) in SUBCOMMANDS.items()
               if importlib.util.find_spec(module) is not None]
    assert {"score", "prep", "train"} <= set(written)
    for name in written:
        args = parser.parse_args([name] + _minimal_args(name))
        assert args.command == name


def _minimal_args(name: str) -> list[str]:
    return {"score": ["--input", "a.jsonl", "--output", "b.jsonl"],
            "prep": ["gsm8k", "--input", "a.jsonl", "--output", "b.jsonl"],
            "eval": ["--model", "m", "--data", "d.jsonl"],
            "plot": ["runs/x"],
            "train": []}.get(name, [])


def test_no_subcommand_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


def test_train_with_a_missing_model_dir_names_it_and_writes_nothing(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = main(["train", "--config", "dapo", f"model.path={tmp_path / 'missing'}",
                 "--output-dir", str(run_dir)])
    assert code == 2
    err = capsys.readouterr().err
    assert "model.path" in err and "missing" in err and "Traceback" not in err
    assert not run_dir.exists()


def test_train_with_an_unknown_override_key_fails_cleanly(capsys):
    assert main(["train", "algo.not_a_field=1", "--print-config"]) == 2
    assert "not_a_field" in capsys.readouterr().err


@pytest.mark.parametrize("preset", ["tiny", "dapo", "grpo"])
def test_presets_resolve(preset, capsys):
    assert main(["train", "--config", preset, "--print-config"]) == 0
    assert "algo:" in capsys.readouterr().out


def test_train_with_a_missing_data_file_names_the_setting(tmp_path, capsys):
    code = main(["train", f"data.train_file={tmp_path / 'nope.jsonl'}",
                 "--output-dir", str(tmp_path / "run")])
    assert code == 2
    assert "data.train_file" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_overrides_may_stand_before_and_after_options(tmp_path, capsys):
    assert main(["train", "optim.steps=3", "--print-config", "algo.eps_high=0.3",
                 "--output-dir", str(tmp_path / "r"), "eval.k=2"]) == 0
    config = yaml.safe_load(capsys.readouterr().out)
    got = (config["optim"]["steps"], config["algo"]["eps_high"], config["eval"]["k"])
    assert got == (3, 0.3, 2)
    assert not (tmp_path / "r").exists()


def test_an_unknown_option_shows_the_subcommand_usage(capsys):
    with pytest.raises(SystemExit) as info:
        main(["train", "optim.steps=3", "--no-such-option"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "usage: verimath train" in err and "unrecognized arguments: --no-such-option" in err


def test_list_presets_gives_each_a_purpose(capsys):
    assert main(["train", "--list-presets"]) == 0
    lines = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert {"tiny", "dapo", "grpo"} <= set(lines) and "GRPO" in lines["grpo"]
    assert all(len(purpose) > 20 for purpose in lines.values())


def test_print_config_documents_every_field_and_loads_back(tmp_path, capsys):
    from verimath.trainer.config.files import load_config

    assert main(["train", "--config", "dapo", "--print-config", "model.path=m"]) == 0
    text = capsys.readouterr().out
    assert "  # Upper clip range" in text and "  # Peak AdamW learning rate." in text
    (tmp_path / "printed.yaml").write_text(text)
    assert load_config(str(tmp_path / "printed.yaml")) == load_config("dapo", ["model.path=m"])
    assert main(["train", "--config", "dapo", "--print-config"]) == 0  # inspection needs no model
    assert "# model.path must be set to train with this config" in capsys.readouterr().out


def test_a_preset_for_a_real_model_does_not_start_without_it(tmp_path, capsys):
    assert main(["train", "--config", "dapo", "--output-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "preset 'dapo' needs model.path" in err and "model.path=" in err
    assert not (tmp_path / "run").exists()
