"""Adapters for other trainers. PLACEHOLDER: comes with the rewards work."""

from __future__ import annotations


def make_trl_reward(gold_key: str = "answer", **kwargs):
    raise NotImplementedError("make_trl_reward is not written yet")


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    raise NotImplementedError("compute_score is not written yet")
