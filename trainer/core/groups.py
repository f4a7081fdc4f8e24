"""The payload of dynamic sampling: a :class:`Group` of ``G`` scored responses to one problem,
and the compute accounting of generation rounds (:class:`RoundStats`).

Episode sources build them (``verimath.trainer.rollout``), the RL step keeps or drops them
(``verimath.trainer.algo.dynamic_sampling``) and trains on them; checkpoints save the
surplus ones (``to_dict``/``from_dict``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Group", "RoundStats"]


@dataclass
class Group:
    """``G`` responses to one problem, with their scores (one dynamic-sampling payload)."""

    problem_id: str
    prompt_ids: list[int]
    response_ids: list[list[int]]
    rewards: np.ndarray
    """``(G,)`` shaped rewards (correctness +-1 plus the overlong penalty)."""
    correct: np.ndarray
    """``(G,)`` bool."""
    truncated: np.ndarray
    """``(G,)`` bool: cut off at ``max_new_tokens``."""
    logprobs: list[np.ndarray] | None = None
    """Per response, the rollout engine's log-prob of each sampled token (None when the
    engine gives none)."""
    step: int | None = None
    """The RL step whose rollouts generated the group (set by the step)."""
    old_logprobs: list[np.ndarray] | None = None
    """Per response, the log-probs of the policy that sampled it, for a group trained at a
    later step (kept from a surplus); None for a group trained when it was generated."""
    padding: bool = False
    """An empty stand-in (zero loss mask) that keeps the ranks' batches the same size."""

    @classmethod
    def padding_group(cls, group_size: int, token: int) -> Group:
        """A padding group: ``group_size`` one-token responses to a one-token prompt."""
        zeros = np.zeros(group_size)
        return cls(problem_id="", prompt_ids=[token], response_ids=[[token]] * group_size,
                   rewards=zeros, correct=zeros.astype(bool), truncated=zeros.astype(bool),
                   padding=True)

    def to_dict(self) -> dict:
        """Plain lists and numbers (JSON), for checkpoints."""
        def arrays(values):
            return None if values is None else [np.asarray(v).tolist() for v in values]

        return {"problem_id": self.problem_id, "prompt_ids": [int(t) for t in self.prompt_ids],
                "response_ids": [[int(t) for t in r] for r in self.response_ids],
                "rewards": self.rewards.tolist(), "correct": self.correct.tolist(),
                "truncated": self.truncated.tolist(), "logprobs": arrays(self.logprobs),
                "step": self.step, "old_logprobs": arrays(self.old_logprobs)}

    @classmethod
    def from_dict(cls, d: dict) -> Group:
        def arrays(values):
            return None if values is None else [np.asarray(v, dtype=np.float32) for v in values]

        return cls(problem_id=d["problem_id"], prompt_ids=list(d["prompt_ids"]),
                   response_ids=[list(r) for r in d["response_ids"]],
                   rewards=np.asarray(d["rewards"], dtype=np.float64),
                   correct=np.asarray(d["correct"], dtype=bool),
                   truncated=np.asarray(d["truncated"], dtype=bool),
                   logprobs=arrays(d["logprobs"]), step=d["step"],
                   old_logprobs=arrays(d["old_logprobs"]))


@dataclass
class RoundStats:
    """Compute accounting of the rounds run in one step (kept and discarded alike)."""

    generated_tokens: int = 0
    responses: int = 0
    seconds_generate: float = 0.0
    seconds_score: float = 0.0
    lengths: list[int] = field(default_factory=list)
    truncated: int = 0
    correct: int = 0
    correct_tokens: int = 0
    """Generated tokens of the correct responses (the rest are the wrong ones')."""
    reward_sum: float = 0.0
    """Sum of the shaped rewards of every response (correctness plus length penalty)."""
    paths: list[str] = field(default_factory=list)
    """Per response, where its answer was found
    (``verimath.rewards.extraction.final_answer.PATHS``)."""
    rules: list[str] = field(default_factory=list)
    """Per response, the rule that decided its reward (``verimath.rewards.batch.RULES``)."""
    curriculum: list = field(default_factory=list)
    """The env's ``curriculum/`` metrics after each round, as ``[key, value]`` pairs (a
    list, so that adding two stats concatenates them and JSON keeps them): the latest pair
    of a key is the current value (empty without a curriculum)."""
