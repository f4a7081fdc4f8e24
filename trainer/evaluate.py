"""Held-out evaluation: avg@k at the sampling temperature, and greedy accuracy.

``avg@k`` is the mean correctness over ``k`` independent samples per problem, averaged over
problems (the DAPO paper reports AIME avg@32)::

    avg@k = (1 / (n k)) * sum_i sum_j 1[response_ij is correct]

``greedy`` is the accuracy of one deterministic (argmax) response per problem. Both are
fractions in [0, 1]. Correctness is the same verifier as the training reward
(``verimath.rewards.score_batch``), without length shaping.
"""

from __future__ import annotations

import numpy as np
from verimath.envs import Problem
from verimath.rewards import score_batch
from verimath.trainer.episodes import build_prompt_ids, format_prompts
from verimath.trainer.rollout import RolloutEngine, SamplingParams


def evaluate(engine: RolloutEngine, tokenizer, problems: list[Problem], *, k: int,
             temperature: float, top_p: float, max_new_tokens: int, template: str,
             use_chat_template: bool, answer_style: str = "auto", mode: str = "symbolic",
             timeout: float = 5.0, batch_size: int = 256) -> dict[str, float]:
    """``{"eval/avg@k": ..., "eval/greedy": ..., "eval/problems": n}`` on ``problems``.

    Returns an empty dict when ``problems`` is empty.
    """
    if not problems:
        return {}
    prompt_ids = build_prompt_ids(tokenizer, format_prompts(problems, template),
                                  use_chat_template=use_chat_template)
    golds = [p.answer for p in problems]
    sampled = SamplingParams(temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens)
    greedy = SamplingParams(max_new_tokens=max_new_tokens, greedy=True)
    score = {"style": answer_style, "mode": mode, "timeout": timeout}
    per_batch = max(1, batch_size // k)
    sampled_correct, greedy_correct = [], []
    for start in range(0, len(problems), per_batch):
        ids = prompt_ids[start:start + per_batch]
        gold = golds[start:start + per_batch]
        out = engine.generate(ids, sampled, n=k)
        repeated = [g for g in gold for _ in range(k)]
        sampled_correct.append(score_batch(out.texts, repeated, **score).correct)
        out = engine.generate(ids, greedy, n=1)
        greedy_correct.append(score_batch(out.texts, gold, **score).correct)
    return {
        f"eval/avg@{k}": float(np.concatenate(sampled_correct).mean()),
        "eval/greedy": float(np.concatenate(greedy_correct).mean()),
        "eval/problems": float(len(problems)),
    }
