"""Evaluation: the trainer's held-out evaluation and the `verimath eval` command (inputs, sampling, estimators, report)."""
