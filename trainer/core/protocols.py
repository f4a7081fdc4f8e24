"""The contracts between the trainer's parts: what a rollout engine and an episode source do.

``RolloutEngine`` is token ids in, token ids out (``verimath.trainer.rollout.hf_engine`` and
``vllm_engine`` implement it); ``GroupSource`` is what the RL step asks of its episode source
(``verimath.trainer.rollout.episodes.EpisodeSource`` in one process, ``async_source`` with a
generator process). The typed run state (``verimath.trainer.core.state``) holds one of each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from verimath.trainer.core.groups import Group, RoundStats

__all__ = ["GroupSource", "RolloutEngine", "Rollouts", "SamplingParams", "WeightSync"]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample: ``greedy`` ignores temperature and top-p."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 256
    greedy: bool = False

    def __post_init__(self) -> None:
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")


@dataclass(frozen=True)
class Rollouts:
    """``B = len(prompt_ids) * n`` sampled responses; sample ``i`` answers prompt ``i // n``."""

    prompt_ids: list[list[int]]
    """Token ids of each sample's prompt (repeated ``n`` times)."""
    response_ids: list[list[int]]
    """Generated ids, EOS included when generation stopped on it, no padding."""
    texts: list[str]
    """Decoded responses without special tokens."""
    truncated: np.ndarray
    """``(B,)`` bool: hit ``max_new_tokens`` without emitting EOS."""
    logprobs: list[np.ndarray] | None = None
    """Behaviour log-probs: one float32 array per response, aligned with ``response_ids``
    (EOS included), or None when the engine does not report them. Entry ``t`` is the log of
    the probability with which the engine drew token ``t``: under ``softmax(logits / T)``
    restricted to the top-p nucleus and renormalised (:func:`sampling_logits`); greedy
    decoding reports ``log_softmax(logits)``. With ``top_p = 1`` this is exactly what
    ``verimath.trainer.core.logprobs.token_logprobs(..., temperature=T)`` recomputes, up to the
    engine's numerics."""

    @property
    def lengths(self) -> np.ndarray:
        """``(B,)`` response lengths in tokens (EOS counted)."""
        return np.array([len(r) for r in self.response_ids], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.response_ids)


@dataclass(frozen=True)
class WeightSync:
    """What one ``sync_weights`` call pushed into an engine (zeros when weights are shared)."""

    seconds: float = 0.0
    """Wall time of the push."""
    bytes: int = 0
    """Bytes of the tensors pushed, in the engine's dtype."""
    tensors: int = 0
    """Named tensors pushed (tied weights counted once)."""


@runtime_checkable
class RolloutEngine(Protocol):
    """What the trainer needs from a generator of responses."""

    def generate(self, prompt_ids: list[list[int]], params: SamplingParams, *, n: int = 1,
                 seeds: list[int] | None = None) -> Rollouts:
        """``n`` samples of each prompt, in prompt-major order. Without ``seeds`` sampling
        draws from torch's global RNG (which the trainer seeds and checkpoints); with one
        seed per prompt, a prompt's samples depend only on its seed, not on its batch. The
        same seed gives the same samples in one engine, not across engines."""

    def sync_weights(self, model) -> WeightSync:
        """Make the engine sample from ``model``'s current weights; says what was pushed."""

    def close(self) -> None:
        """Release the engine's resources; idempotent."""


class GroupSource(Protocol):
    """Where the RL step's groups come from: generation rounds, and the hooks of a source
    that generates in another process (no-ops in one process)."""

    def start_step(self, step: int, model) -> None:
        """Step ``step`` begins with ``model``'s weights (an asynchronous source tags what it
        generates from now on with this policy version)."""

    def next_round(self, round_index: int, num_prompts: int | None = None
                   ) -> tuple[list[Group], np.ndarray]:
        """Generation round ``round_index`` of the step: ``(groups, correct (P, G))`` for
        ``num_prompts`` problems (default: the source's round size)."""

    def after_collection(self) -> None:
        """The step holds its groups; an asynchronous source starts the next rounds."""

    def step_metrics(self, trained: list[Group]) -> dict[str, float]:
        """The source's own metrics of this step (staleness, queue...)."""

    def pop_stats(self) -> RoundStats:
        """Compute accounting of the rounds since the last call."""

    def state_dict(self) -> dict:
        """What a checkpoint saves to continue the stream exactly."""

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict`."""

    def close(self) -> None:
        """End the source (and its generator process); idempotent."""
