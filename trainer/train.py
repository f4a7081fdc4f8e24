"""Deprecated: ``verimath.trainer.train`` was both the ``train`` command and the torchrun
module. The command is ``verimath.trainer.run.cli``; torchrun runs
``verimath.trainer.worker``. This module keeps ``python -m verimath.trainer.train`` and its
names working, with a DeprecationWarning, until verimath 0.3."""

import sys
import warnings

from verimath.trainer.run.cli import *  # noqa: F403
from verimath.trainer.run.cli import TRAINED_NOTHING, add_arguments, main  # noqa: F401
from verimath.trainer.worker import run_process

warnings.warn("verimath.trainer.train is deprecated: the train command is "
              "verimath.trainer.run.cli and the torchrun module verimath.trainer.worker; the "
              "old path stops working in verimath 0.3", DeprecationWarning, stacklevel=2)

if __name__ == "__main__":
    sys.exit(run_process())
