"""The documentation site: every page's shell commands run as shown and its annotated
snippets print what they say, ``mkdocs build --strict`` passes, the navigation lists every
page, and the printouts the pages paste are the ones the code prints today.

The commands run with the README's machinery, ``tests/test_readme.py``, whose docstring says
how each kind of command runs and why (benchmarks and the GPU check, for one, have their
arguments parsed, not run). Each page runs in a fresh copy of one folder that holds what the
pages assume is at hand, including the problems files every page's ``verimath prep`` commands
write.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from test_readme import (
    README,
    ROOT,
    annotated_blocks,
    bash_commands,
    check_page_snippets,
    make_base,
    needs_vllm,
    run_commands,
    stand_in_for_the_hub,
)

DOCS = ROOT / "docs"
PAGES = sorted(path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md"))
TEXT = {page: (DOCS / page).read_text(encoding="utf-8") for page in PAGES}
RUNNABLE = [p for p in PAGES if bash_commands(TEXT[p]) or annotated_blocks(TEXT[p])]


@pytest.fixture(scope="module")
def docs_base(tmp_path_factory):
    """The folder every page's commands start from (copied once per page)."""
    with pytest.MonkeyPatch.context() as patch:
        return make_base(tmp_path_factory.mktemp("docs") / "base", list(TEXT.values()), patch)


@pytest.fixture
def page_folder(docs_base, tmp_path, monkeypatch):
    folder = tmp_path / "page"
    shutil.copytree(docs_base, folder, symlinks=True)
    stand_in_for_the_hub(monkeypatch)
    monkeypatch.chdir(folder)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE)
def test_every_command_and_snippet_of_the_page_runs_as_shown(page, page_folder):
    commands = bash_commands(TEXT[page])
    assert run_commands(commands) == len([c for c in commands if not needs_vllm(c)])
    check_page_snippets(TEXT[page])  # after the commands, which write the files they read


@pytest.mark.slow
@pytest.mark.vllm
def test_the_commands_that_need_vllm_run_as_shown(page_folder):
    for page in PAGES:
        commands = bash_commands(TEXT[page])
        if any(map(needs_vllm, commands)):
            run_commands(commands, vllm=True)


def test_the_pages_show_commands_and_snippets():
    """The parser finds what the pages hold (a renamed fence would silently test nothing)."""
    assert len(RUNNABLE) >= 15, RUNNABLE
    assert sum(len(annotated_blocks(TEXT[p])) for p in PAGES) >= 3


def _nav_pages(nav) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_pages(value)]
    return [p for item in nav for p in _nav_pages(item)]


def test_the_navigation_lists_every_page_once():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = _nav_pages(config["nav"])
    assert sorted(listed) == PAGES, "mkdocs.yml's nav and the pages under docs/ differ"
    assert len(set(listed)) == len(listed)


def test_the_readmes_links_lead_to_pages_that_exist():
    for target in re.findall(r"\]\(((?:docs/|LICENSE)[^)#]*)", README):
        assert (ROOT / target).exists(), target


def _resolves(dotted: str) -> bool:
    """Whether ``verimath.a.b.c`` is a module, or an attribute of the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 1, -1):
        module = ".".join(parts[:cut])
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            target = importlib.import_module(module)
            for name in parts[cut:]:
                if not hasattr(target, name):
                    return False
                target = getattr(target, name)
            return True
    return False


def test_every_module_and_name_the_docs_spell_out_exists():
    """Module paths inside the package move; a page that names an old one fails here (the
    changelog names old paths on purpose)."""
    pages = [text for page, text in TEXT.items() if page != "changelog.md"]
    names = {m for text in [README, *pages]
             for m in re.findall(r"(?<![\w/])verimath(?:\.\w+)+", text)}
    assert names
    assert [n for n in sorted(names) if not _resolves(n)] == []


def test_listed_presets_match_the_training_page(capsys):
    from verimath.trainer.cli import main

    assert main(["train", "--list-presets"]) == 0
    assert f"```text\n{capsys.readouterr().out}```" in TEXT["training.md"]


@pytest.mark.parametrize("preset", ["dapo-qwen2.5-32b", "dapo-qwen2.5-math-7b",
                                    "dapo-qwen2.5-1.5b"])
def test_the_recipes_page_shows_each_recipes_estimate(preset, capsys):
    from verimath.trainer.cli import main

    assert main(["train", "--config", preset, "--estimate"]) == 0
    out = capsys.readouterr().out
    assert f"```text\n{out}```" in TEXT["recipes.md"], (
        f"docs/recipes.md is stale: paste `verimath train --config {preset} --estimate`")


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    if any(importlib.util.find_spec(m) is None for m in ("mkdocs", "mkdocstrings")):
        pytest.skip("mkdocs is not installed: the `docs` extra (make docs installs it)")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "rewards" / "index.html").is_file()
