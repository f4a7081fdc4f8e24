"""Evaluation: the trainer's held-out evaluation (`heldout`, on `evaluate`) and the `verimath eval` command (inputs, sampling, estimators, report)."""
