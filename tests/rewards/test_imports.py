"""Imports inside rewards/ go one way: no cycle between modules, not even through a
function-level import, and sub-packages import only the ones below them (:data:`LAYERS`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REWARDS = Path(__file__).resolve().parents[2] / "rewards"
PACKAGE = "verimath.rewards"


def _module_name(path: Path) -> str:
    parts = path.relative_to(REWARDS).with_suffix("").parts
    return ".".join((PACKAGE, *parts[:-1], *([] if parts[-1] == "__init__" else parts[-1:])))


def _imports(path: Path) -> set[str]:
    """Every ``verimath.rewards`` module that ``path`` imports, at any depth of its AST."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == PACKAGE:  # "from verimath.rewards import pool"
                found |= {f"{PACKAGE}.{alias.name}" for alias in node.names}
            elif node.module.startswith(PACKAGE + "."):
                found.add(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.add(f"{PACKAGE}.{node.module}" if node.module else PACKAGE)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith(PACKAGE)}
    return found


GRAPH = {_module_name(p): _imports(p) - {_module_name(p)} for p in sorted(REWARDS.rglob("*.py"))}

LAYERS = {
    "text": set(),
    "extraction": {"text"},
    "equality": {"text"},
    "pool": {"equality", "text"},
    "shaping": set(),
}
"""The sub-packages each sub-package may import (the package's top modules may import all)."""


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (a list of modules), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_graph_sees_function_level_imports_and_sub_packages():
    # the pool's worker imports the default verdict inside a function; the scan must see it.
    assert f"{PACKAGE}.equality.equivalence" in GRAPH[f"{PACKAGE}.pool.worker"]
    assert {f"{PACKAGE}.{name}" for name in LAYERS} <= set(GRAPH)
    assert len(GRAPH) >= 25


def _sub_package(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in LAYERS else None


def test_sub_packages_import_only_those_below_them():
    wrong = [f"{m} -> {d}" for m, deps in GRAPH.items() for d in deps
             if _sub_package(m) and d.startswith(PACKAGE + ".")
             and _sub_package(d) != _sub_package(m)
             and _sub_package(d) not in LAYERS[_sub_package(m)]]
    assert wrong == [], "\n".join(wrong)


def test_the_layers_table_itself_has_no_cycle():
    table = {f"{PACKAGE}.{k}": {f"{PACKAGE}.{v}" for v in vs} for k, vs in LAYERS.items()}
    assert _cycle(table) is None


def test_cycle_finder_finds_a_planted_cycle():
    planted = {k: set(v) for k, v in GRAPH.items()}
    planted[f"{PACKAGE}.equality.equivalence"].add(f"{PACKAGE}.batch")
    assert _cycle(planted) is not None


def test_rewards_imports_have_no_cycle():
    assert _cycle(GRAPH) is None, f"import cycle: {' -> '.join(_cycle(GRAPH))}"


@pytest.mark.parametrize(
    ("lower", "upper"),
    [("pool.scoring_pool", "batch"), ("equality.equivalence", "pool.scoring_pool"),
     ("equality.equivalence", "correctness"), ("pool.worker", "pool.scoring_pool"),
     ("extraction.final_answer", "equality.equivalence"),
     ("extraction.free_form", "extraction.final_answer"),
     ("extraction.chunks", "extraction.free_form"),
     ("equality.notation", "equality.equivalence")],
)
def test_a_lower_module_never_imports_an_upper_one(lower, upper):
    assert f"{PACKAGE}.{upper}" not in _reachable(f"{PACKAGE}.{lower}")


def _reachable(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in GRAPH.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_nothing_imports_the_package_root_from_inside():
    importers = [m for m, deps in GRAPH.items() if PACKAGE in deps and m != PACKAGE]
    assert importers == []
