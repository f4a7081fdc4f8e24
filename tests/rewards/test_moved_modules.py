"""Module paths that moved keep working for one release: the same module, with a warning."""

import importlib
import subprocess
import sys

import pytest
from verimath.rewards.moved_modules import alias_moved_modules

OLD_TO_NEW = {
    "verimath.rewards.extract": "verimath.rewards.extraction.final_answer",
    "verimath.rewards.equivalence": "verimath.rewards.equality.equivalence",
    "verimath.rewards.pool_worker": "verimath.rewards.pool.worker",
    "verimath.rewards.overlong": "verimath.rewards.shaping.overlong",
    "verimath.envs.gen_chain": "verimath.envs.generators.chain",
    "verimath.envs.curriculum_level": "verimath.envs.curriculum",
}


@pytest.mark.parametrize(("old", "new"), sorted(OLD_TO_NEW.items()))
def test_an_old_path_imports_the_new_module_itself_and_warns(old, new):
    """In a fresh interpreter: the alias is the new module object (one module, one set of
    classes), keeps the new module's own spec, and its warning names the new path."""
    code = (f"import warnings, importlib; warnings.simplefilter('error')\n"
            f"new = importlib.import_module('{new}')\n"
            f"try:\n    importlib.import_module('{old}')\nexcept DeprecationWarning as w:\n"
            f"    print(w)\nwarnings.simplefilter('ignore')\n"
            f"old = importlib.import_module('{old}')\n"
            f"print(old is new, old.__spec__.name, old.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert f"{old} moved to {new}" in out[0]
    assert out[1] == f"True {new} {new}"


def test_from_import_of_an_old_path_gives_the_new_names():
    sys.modules.pop("verimath.rewards.extract", None)  # an earlier import would not warn again
    with pytest.deprecated_call(match="moved to verimath.rewards.extraction.final_answer"):
        from verimath.rewards.extract import extract_answer  # noqa: F401
    from verimath.rewards import extract_answer as public

    assert extract_answer is public


def test_unknown_paths_still_fail_and_the_table_installs_once():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("verimath.rewards.no_such_module")
    before = len(sys.meta_path)
    alias_moved_modules({"verimath.rewards.a": "verimath.rewards.b"}, removed_in="0.3")
    alias_moved_modules({"verimath.rewards.a": "verimath.rewards.b"}, removed_in="0.3")
    try:
        assert len(sys.meta_path) == before + 1
    finally:
        sys.meta_path.pop(0)
