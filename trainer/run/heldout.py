"""The training run's held-out evaluation: ``eval/avg@k``, ``eval/greedy`` and
``eval/problems`` of the policy on the run's held-out problems, before RL, every
``eval.every`` steps and after the last step (``verimath.trainer.run.loop``).

The metrics and their seeding are :func:`verimath.trainer.evaluation.evaluate.evaluate`'s;
with several ranks each evaluates its share of the problems and the results are combined.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verimath.envs import Problem
from verimath.trainer.config import TrainConfig
from verimath.trainer.core.distributed import Comm
from verimath.trainer.core.protocols import RolloutEngine
from verimath.trainer.core.state import TrainState
from verimath.trainer.evaluation.evaluate import evaluate

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def heldout_metrics(engine: RolloutEngine, tokenizer: PreTrainedTokenizerBase,
                    problems: list[Problem], config: TrainConfig,
                    comm: Comm | None = None) -> dict[str, float]:
    """Held-out metrics of the policy behind ``engine`` ({} without problems); sampling is
    seeded by ``eval.seed`` (plus the rank) alone, never by the training RNG."""
    cfg, comm = config, comm or Comm()
    if not problems:
        return {}
    mine = problems[comm.rank::comm.world]
    out = evaluate(engine, tokenizer, mine, k=cfg.eval.k,
                   temperature=cfg.rollout.temperature, top_p=cfg.rollout.top_p,
                   max_new_tokens=cfg.rollout.max_new_tokens,
                   template=cfg.model.prompt_template,
                   use_chat_template=cfg.model.use_chat_template,
                   answer_style=cfg.reward.answer_style, mode=cfg.reward.mode,
                   timeout=cfg.reward.timeout, conventions=cfg.reward.conventions,
                   batch_size=cfg.eval.batch_size,
                   seed=cfg.eval.seed + comm.rank)
    if not comm.enabled:
        return out
    keys = [f"eval/avg@{cfg.eval.k}", "eval/greedy"]
    n = float(len(mine))
    total = comm.all_sum([out.get(k, 0.0) * n for k in keys] + [n])
    return {**{k: float(v / total[-1]) for k, v in zip(keys, total)},
            "eval/problems": float(total[-1])}


def evaluate_heldout(state: TrainState) -> dict[str, float]:
    """:func:`heldout_metrics` of the run's policy on its held-out problems."""
    return heldout_metrics(state.engine, state.tokenizer, state.heldout, state.config,
                           state.comm)


def format_metrics(metrics: dict[str, float]) -> str:
    """``avg@4 0.375, greedy 0.500``: held-out metrics on one line."""
    return ", ".join(f"{k.split('/')[-1]} {v:.3f}" for k, v in metrics.items()
                     if k != "eval/problems")
