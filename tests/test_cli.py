"""The `verimath` command: subcommands are wired and bad input fails cleanly, without a traceback."""

from __future__ import annotations

import pytest
from verimath.trainer.cli import SUBCOMMANDS, build_parser, main


def test_every_subcommand_is_registered():
    parser = build_parser()
    for name in SUBCOMMANDS:
        args = parser.parse_args([name] + _minimal_args(name))
        assert args.command == name


def _minimal_args(name: str) -> list[str]:
    return {"score": ["--input", "a.jsonl", "--output", "b.jsonl"],
            "prep": ["gsm8k", "--input", "a.jsonl", "--output", "b.jsonl"],
            "train": []}[name]


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
