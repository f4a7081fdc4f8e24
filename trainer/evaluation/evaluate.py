"""Held-out evaluation: avg@k at the sampling temperature, and greedy accuracy.

``avg@k`` is the mean correctness over ``k`` independent samples per problem, averaged over
problems (the DAPO paper reports AIME avg@32)::

    avg@k = (1 / (n k)) * sum_i sum_j 1[response_ij is correct]

``greedy`` is the accuracy of one deterministic (argmax) response per problem. Both are
fractions in [0, 1]. Correctness is the same verifier as the training reward
(``verimath.rewards.score_batch``), without length shaping.

Sampling is seeded on its own: problem ``i`` gets the seed :func:`problem_seed` ``(seed, i)``
and, with an engine that takes ``seeds`` (the Hugging Face one), each of its samples draws
from its own RNG. Torch's global RNG (the training RNG) is neither read nor advanced, so the
same model gives the same evaluation whatever ran before it and however it is batched.
"""

from __future__ import annotations

import inspect

import numpy as np
from verimath.envs import Problem
from verimath.rewards import score_batch
from verimath.trainer.core.protocols import RolloutEngine, SamplingParams
from verimath.trainer.rollout.episodes import build_prompt_ids, format_prompts


def problem_seed(seed: int, index: int) -> int:
    """The sampling seed of problem ``index``: ``SeedSequence([seed, index])``'s first word."""
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0])


def generate_seeded(engine: RolloutEngine, prompt_ids: list[list[int]], params: SamplingParams,
                    *, n: int, seeds: list[int]):
    """``engine.generate`` with one seed per prompt, leaving torch's global RNG as it was.

    Engines whose ``generate`` takes ``seeds`` draw each sample from its own RNG; others
    sample from torch's RNG seeded with ``seeds[0]`` (their result then depends on which
    prompts share the call).
    """
    import torch

    if "seeds" in inspect.signature(engine.generate).parameters:
        with torch.random.fork_rng(devices=[]):  # seeded rows never draw from torch's RNGs
            return engine.generate(prompt_ids, params, n=n, seeds=seeds)
    # CUDA RNGs of a process that has not initialized CUDA hold nothing worth keeping (and
    # touching them would create a context beside an engine that owns the GPU)
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    with torch.random.fork_rng(devices=list(range(torch.cuda.device_count())) if cuda else []):
        torch.manual_seed(seeds[0])
        return engine.generate(prompt_ids, params, n=n)


def evaluate(engine: RolloutEngine, tokenizer, problems: list[Problem], *, k: int,
             temperature: float, top_p: float, max_new_tokens: int, template: str,
             use_chat_template: bool, answer_style: str = "auto", mode: str = "symbolic",
             timeout: float = 5.0, conventions: str = "default", batch_size: int = 256,
             seed: int = 0) -> dict[str, float]:
    """``{"eval/avg@k": ..., "eval/greedy": ..., "eval/problems": n}`` on ``problems``.

    ``seed`` seeds the samples (see the module docstring); ``answer_style``, ``mode``,
    ``timeout`` and ``conventions`` go to ``verimath.rewards.score_batch``. Returns an empty
    dict when ``problems`` is empty.
    """
    if not problems:
        return {}
    prompt_ids = build_prompt_ids(tokenizer, format_prompts(problems, template),
                                  use_chat_template=use_chat_template)
    golds = [p.answer for p in problems]
    sampled = SamplingParams(temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens)
    greedy = SamplingParams(max_new_tokens=max_new_tokens, greedy=True)
    score = {"style": answer_style, "mode": mode, "timeout": timeout, "conventions": conventions}
    per_batch = max(1, batch_size // k)
    sampled_correct, greedy_correct = [], []
    for start in range(0, len(problems), per_batch):
        ids = prompt_ids[start:start + per_batch]
        gold = golds[start:start + per_batch]
        seeds = [problem_seed(seed, start + i) for i in range(len(ids))]
        out = generate_seeded(engine, ids, sampled, n=k, seeds=seeds)
        repeated = [g for g in gold for _ in range(k)]
        sampled_correct.append(score_batch(out.texts, repeated, **score).correct)
        out = generate_seeded(engine, ids, greedy, n=1, seeds=seeds)
        greedy_correct.append(score_batch(out.texts, gold, **score).correct)
    return {
        f"eval/avg@{k}": float(np.concatenate(sampled_correct).mean()),
        "eval/greedy": float(np.concatenate(greedy_correct).mean()),
        "eval/problems": float(len(problems)),
    }
