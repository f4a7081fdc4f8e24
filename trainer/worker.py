"""One torchrun process of ``verimath train``: ``python -m verimath.trainer.worker ARGS``.

``verimath train --nproc N`` launches ``torch.distributed.run`` with this module, and
``torchrun --nproc-per-node N -m verimath.trainer.worker ARGS`` does the same by hand. Each
process joins the process group, runs the ``verimath train`` arguments as its rank
(``verimath.trainer.run.cli.main``) and leaves the group.
"""

from __future__ import annotations

import argparse
import os
import sys

from verimath.trainer.core.distributed import close_distributed, init_distributed
from verimath.trainer.core.processes import watch_parent
from verimath.trainer.run.cli import add_arguments, main


def run_process(argv: list[str] | None = None) -> int:
    """Join the process group, run ``argv`` (``verimath train`` arguments) as this rank,
    leave the group; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m verimath.trainer.worker",
                                     description="verimath train, as one torchrun process")
    add_arguments(parser)
    args = parser.parse_intermixed_args(argv)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # a torchrun rank (not a lone process)
        watch_parent()  # ends at once when torchrun or the launcher is gone
    comm = init_distributed()
    try:
        return main(args, comm=comm)
    finally:
        close_distributed()


if __name__ == "__main__":
    sys.exit(run_process())
