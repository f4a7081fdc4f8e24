"""Old module paths that keep working for one release after a module moved.

A package lists its moved modules (``{"verimath.rewards.extract":
"verimath.rewards.extraction.final_answer"}``) and calls :func:`alias_moved_modules` when it is
imported. Importing an old path then gives the new module itself (the same object, so
``mock.patch`` and ``isinstance`` see one module) and emits a ``DeprecationWarning`` that names
the new path. Nothing is imported until an old path is asked for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Mapping

__all__ = ["alias_moved_modules"]


class _Alias(importlib.abc.Loader):
    def __init__(self, old: str, new: str, removed_in: str):
        self.old, self.new, self.removed_in = old, new, removed_in

    def create_module(self, spec):
        warnings.warn(f"{self.old} moved to {self.new}; the old path stops working in "
                      f"verimath {self.removed_in}", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        """The new module ran when it was imported: give it back its own spec, which the
        import system replaced with the old path's."""
        module.__spec__ = self.spec


class _MovedModules(importlib.abc.MetaPathFinder):
    def __init__(self, moved: Mapping[str, str], removed_in: str):
        self.moved, self.removed_in = dict(moved), removed_in

    def find_spec(self, fullname, path=None, target=None):
        new = self.moved.get(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(fullname, new, self.removed_in))


def alias_moved_modules(moved: Mapping[str, str], *, removed_in: str) -> None:
    """Make each old module path of ``moved`` import its new module, with a warning.

    Installed ahead of the path finders, so an old path inside a package that still exists
    (``verimath.trainer.run.state``) resolves to the new module rather than to nothing.
    Calling it again with the same table installs nothing more.
    """
    for finder in sys.meta_path:
        if isinstance(finder, _MovedModules) and finder.moved == dict(moved):
            return
    sys.meta_path.insert(0, _MovedModules(moved, removed_in))
