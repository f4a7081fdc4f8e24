"""The `verimath` command: one entry point, subcommands from each part of the package.

Each subcommand lives beside the code it drives and provides ``add_arguments(parser)``
and ``main(args) -> int`` (optionally ``claim_extra(args, extra) -> rest``, which takes
arguments the parser left over, such as positionals after an option); modules import heavy
dependencies (torch) inside ``main`` so that ``verimath score --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

SUBCOMMANDS = {
    "score": ("verimath.rewards.cli", "score a jsonl file of responses against gold answers"),
    "prep": ("verimath.datasets_prep.cli", "convert a math dataset into verimath problems"),
    "train": ("verimath.trainer.run.cli", "train a model with DAPO (default: tiny CPU run)"),
    "eval": ("verimath.trainer.evaluation.cli",
             "sample and verify a model on problems: avg@k, pass@k, maj@k"),
    "plot": ("verimath.trainer.run.plot_cli", "overlay the learning curves of training runs (PNG)"),
    "ablate": ("verimath.trainer.ablation.cli",
               "seeded runs of DAPO's controls switched on and off: a table and a chart"),
}
# Subcommands that need the `verimath[train]` extra (torch, transformers); a core install
# (`pip install verimath`) has rewards, envs and prep only.
NEEDS_TRAIN_EXTRA = ("train", "eval", "ablate")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="verimath", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        sp = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(sp)
        sp.set_defaults(_module=module, _parser=sp)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    claim = getattr(args._module, "claim_extra", None)  # e.g. overrides after an option
    if extra and claim is not None:
        extra = claim(args, extra)
    if extra:
        args._parser.error(f"unrecognized arguments: {' '.join(extra)}")
    missing = [m for m in ("torch", "transformers")
               if args.command in NEEDS_TRAIN_EXTRA and importlib.util.find_spec(m) is None]
    if missing:
        print(f"verimath {args.command}: needs {' and '.join(missing)}; install them with: "
              "pip install 'verimath[train]'", file=sys.stderr)
        return 2
    return int(args._module.main(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
