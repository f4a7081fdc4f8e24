"""The package's four folders import in one direction only, function-level imports included:

    datasets_prep -> envs -> rewards          trainer -> envs, rewards

no module imports a private (``_name``) name from another folder, and inside the trainer the
sub-packages import only along the arrows of :data:`TRAINER_LAYERS` (a table without a loop).
Every import statement of every module counts, wherever it sits (module level, inside a
function, under ``TYPE_CHECKING``): a cycle hidden behind a function-level import is still a
cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {
    "datasets_prep": {"envs", "rewards"},
    "envs": {"rewards"},
    "rewards": set(),
    "trainer": {"envs", "rewards"},
}


def imports_of(path: Path, root: Path) -> list[tuple[int, str, list[str]]]:
    """``(line, imported module, imported names)`` of every import statement in ``path``
    (anywhere in its syntax tree), relative imports resolved inside ``verimath``."""
    package = ["verimath", *path.relative_to(root).with_suffix("").parts]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # from . import x, from ..y import z
                base = ".".join(package[:-node.level] + ([base] if base else []))
            out.append((node.lineno, base, [a.name for a in node.names]))
    return out


def violations(folder: str, root: Path = ROOT) -> list[str]:
    """Imports of ``folder``'s modules that go against ALLOWED or take a private name from
    another folder, one line each."""
    wrong = []
    for path in sorted((root / folder).rglob("*.py")):
        where = path.relative_to(root)
        for line, module, names in imports_of(path, root):
            parts = module.split(".")
            if parts[0] != "verimath" or len(parts) < 2 or parts[1] == folder:
                continue
            if parts[1] not in ALLOWED[folder]:
                wrong.append(f"{where}:{line} imports {module} ({folder} -> {parts[1]})")
            private = [n for n in names + parts[2:] if n.startswith("_") and n != "__init__"]
            if private:
                wrong.append(f"{where}:{line} takes private {private} from {module}")
    return wrong


@pytest.mark.parametrize("folder", sorted(ALLOWED))
def test_imports_go_one_way_and_take_no_private_names(folder):
    assert len(list((ROOT / folder).rglob("*.py"))) >= 5
    wrong = violations(folder)
    assert not wrong, "\n".join(wrong)


def test_the_check_reads_function_level_relative_and_private_imports(tmp_path):
    (tmp_path / "envs" / "sub").mkdir(parents=True)
    (tmp_path / "envs" / "sub" / "probe.py").write_text(
        "import verimath.rewards\n"
        "from verimath.envs.problem import _own_folder\n"
        "def f():\n"
        "    from verimath.trainer.config import TrainConfig\n"
        "    from ...rewards.extract import _private\n"
        "    import verimath.datasets_prep.cli\n", encoding="utf-8")
    wrong = violations("envs", tmp_path)
    assert [w.split(" ", 1)[0] for w in wrong] == ["envs/sub/probe.py:4", "envs/sub/probe.py:5",
                                                   "envs/sub/probe.py:6"]
    assert "envs -> trainer" in wrong[0] and "['_private']" in wrong[1]
    assert "verimath.rewards.extract" in wrong[1] and "envs -> datasets_prep" in wrong[2]


TRAINER_LAYERS = {
    "config": set(),
    "core": {"config"},
    "algo": {"config", "core"},
    "model": {"config", "core", "algo"},
    "checkpoint": {"core", "model"},
    "rollout": {"config", "core", "algo", "model"},
    "evaluation": {"config", "core", "model", "rollout", "checkpoint"},
    "warmstart": {"core", "rollout", "evaluation"},
    "estimate": {"config", "model", "rollout"},
    "run": {"config", "core", "algo", "model", "checkpoint", "rollout", "evaluation",
            "warmstart", "estimate"},
    "ablation": {"config", "core", "model", "rollout", "checkpoint", "evaluation", "run"},
}
"""Sub-package -> the sub-packages it may import. The modules at the top of ``trainer/``
(``cli``, ``worker``, the package ``__init__``) may import any; no sub-package imports them."""


def trainer_arrows(root: Path = ROOT) -> dict[tuple[str, str], list[str]]:
    """``(from, to) -> [where]`` for every import from one trainer sub-package (or top
    module, as ``"<top>"``) into another sub-package or top module."""
    arrows: dict[tuple[str, str], list[str]] = {}
    top = root / "trainer"
    for path in sorted(top.rglob("*.py")):
        rel = path.relative_to(top).parts
        source = rel[0] if len(rel) > 1 else "<top>"
        for line, module, names in imports_of(path, root):
            parts = module.split(".")
            if parts[:2] != ["verimath", "trainer"]:
                continue
            targets = [parts[2]] if len(parts) > 2 else names  # "from verimath.trainer import x"
            for target in targets:
                kind = target if (top / target).is_dir() else "<top>"
                if kind != source or kind == "<top>" and source != "<top>":
                    where = f"{path.relative_to(root)}:{line}"
                    arrows.setdefault((source, kind), []).append(where)
    return arrows


def layer_violations(root: Path = ROOT) -> list[str]:
    return [f"{where[0]}: trainer/{a} -> trainer/{b} ({len(where)} import(s))"
            for (a, b), where in sorted(trainer_arrows(root).items())
            if a != "<top>" and b not in TRAINER_LAYERS.get(a, set())]


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of nodes (first == last), or None."""
    state: dict[str, int] = {}
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


def test_every_trainer_sub_package_is_in_the_table():
    folders = {p.name for p in (ROOT / "trainer").iterdir()
               if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(TRAINER_LAYERS)


def test_the_table_of_trainer_layers_has_no_loop():
    assert find_cycle(TRAINER_LAYERS) is None


def test_trainer_sub_packages_import_only_along_the_table():
    wrong = layer_violations()
    assert not wrong, "\n".join(wrong)


def test_the_layer_check_sees_a_loop_behind_a_function_level_import(tmp_path):
    for folder in ("core", "run"):
        (tmp_path / "trainer" / folder).mkdir(parents=True)
        (tmp_path / "trainer" / folder / "__init__.py").write_text("")
    (tmp_path / "trainer" / "cli.py").write_text("import verimath.trainer.run.loop\n")
    (tmp_path / "trainer" / "run" / "loop.py").write_text(
        "from verimath.trainer.core.state import TrainState\n")
    (tmp_path / "trainer" / "core" / "state.py").write_text(
        "def f():\n    from verimath.trainer.run import loop\n"
        "    from verimath.trainer import cli\n")
    wrong = layer_violations(tmp_path)
    assert [w.split(":")[0] for w in wrong] == ["trainer/core/state.py"] * 2
    assert "trainer/core -> trainer/run" in wrong[1] and "trainer/<top>" in wrong[0]
    arrows = {k: set() for k in ("core", "run")}
    for a, b in trainer_arrows(tmp_path):
        if a in arrows and b in arrows:
            arrows[a].add(b)
    assert find_cycle(arrows) == ["core", "run", "core"]
