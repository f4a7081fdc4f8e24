"""Evaluation: seeded sampling and verification of problems (``evaluate``, ``run``), the
estimators (avg@k, pass@k, maj@k), and the ``verimath eval`` command (inputs, report). The
trainer's held-out evaluation during a run is ``verimath.trainer.run.heldout``."""
