"""Reward terms added to correctness: DAPO's soft overlong punishment (``overlong``)."""

from verimath.rewards.shaping.overlong import overlong_penalty

__all__ = ["overlong_penalty"]
