"""The package's four folders import in one direction only, function-level imports included:

    datasets_prep -> envs -> rewards          trainer -> envs, rewards

and no module imports a private (``_name``) name from another folder. Every import statement
of every module counts, wherever it sits (module level, inside a function, under
``TYPE_CHECKING``): a cycle hidden behind a function-level import is still a cycle.
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
