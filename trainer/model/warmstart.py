"""A short supervised phase before RL: teach the answer format on procedural problems.

RL can only reinforce what the policy already does some of the time; a randomly
initialised model never writes ``Answer: 12``. The warm start trains on
``prompt -> answer_prefix + gold + EOS`` pairs drawn from a procedural family (held-out
problems excluded) with the usual next-token cross-entropy on the target tokens only::

    L = - (1 / sum_i |y_i|) * sum_i sum_t log pi(y_i,t | x_i, y_i,<t)

It is deliberately short: the model should know the format and be right part of the time,
leaving the rest to RL. ``noise`` makes it imperfect on purpose: that fraction of the targets
gets a wrong integer answer (the gold plus one of -10, -1, +1, +10), so the model learns the
arithmetic but puts only about ``1 - noise`` of its probability on the right answer; the
greedy answer is mostly right while samples at temperature 1 often are not, which is what
RL (rewarded on correctness) then fixes.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from verimath.envs import generate
from verimath.trainer.algo.logprobs import pack_sequences, token_logprobs
from verimath.trainer.rollout.episodes import ExcludingGenerator, build_prompt_ids, format_prompts

NOISE_OFFSETS = (-10, -1, 1, 10)


def noisy_answers(answers: list[str], *, noise: float, rng: np.random.Generator) -> list[str]:
    """Each integer answer replaced with probability ``noise`` by ``answer + d``, ``d`` drawn
    uniformly from :data:`NOISE_OFFSETS`; non-integer answers are kept."""
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise must be in [0, 1], got {noise}")
    flips = rng.random(len(answers)) < noise
    offsets = rng.choice(NOISE_OFFSETS, size=len(answers))
    out = []
    for answer, flip, offset in zip(answers, flips, offsets):
        is_int = answer.lstrip("-").isdigit()
        out.append(str(int(answer) + int(offset)) if flip and is_int else answer)
    return out


def supervised_pairs(problems, tokenizer, *, template: str, use_chat_template: bool,
                     answer_prefix: str, answers: list[str] | None = None
                     ) -> tuple[list[list[int]], list[list[int]]]:
    """Prompt ids and target ids (``answer_prefix + answer`` then EOS) of each problem;
    ``answers`` replaces the gold answers when given."""
    prompts = build_prompt_ids(tokenizer, format_prompts(problems, template),
                               use_chat_template=use_chat_template)
    answers = answers if answers is not None else [p.answer for p in problems]
    targets = [
        tokenizer(answer_prefix + a, add_special_tokens=False)["input_ids"]
        + [tokenizer.eos_token_id]
        for a in answers
    ]
    return prompts, targets


def warmstart(model, tokenizer, *, family: str, level: int, seed: int, excluded: set[str],
              skip_containing: tuple[str, ...] = (), steps: int, batch_size: int, lr: float, template: str, use_chat_template: bool,
              answer_prefix: str, noise: float = 0.0, progress=None) -> dict[str, float]:
    """Run ``steps`` AdamW steps of supervised training; returns final loss and time.

    Problem ``k`` of the phase is item ``k`` of the procedural stream ``seed`` (a stream of
    its own, never the RL stream), with held-out prompts redrawn; ``noise`` as in
    :func:`noisy_answers`.
    """
    if steps <= 0:
        return {"warmstart/steps": 0.0}
    device = next(model.parameters()).device
    generator = ExcludingGenerator(family, excluded, skip_containing=skip_containing)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    model.train()
    start, index, loss_value = time.perf_counter(), 0, float("nan")
    rng = np.random.default_rng([seed, 7919])
    for _ in range(steps):
        problems = [generate(generator, seed, index + i, level) for i in range(batch_size)]
        index += batch_size
        answers = noisy_answers([p.answer for p in problems], noise=noise, rng=rng)
        prompts, targets = supervised_pairs(problems, tokenizer, template=template,
                                            use_chat_template=use_chat_template,
                                            answer_prefix=answer_prefix, answers=answers)
        ids, attention, mask = pack_sequences(prompts, targets, pad_id=pad_id)
        ids, attention, mask = ids.to(device), attention.to(device), mask.to(device)
        logp = token_logprobs(model, ids, attention)  # (B, S-1)
        loss = -(logp * mask).sum() / mask.sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss_value = float(loss.detach())
        if progress is not None:
            progress.update(1)
            progress.set_postfix(loss=f"{loss_value:.3f}")
    return {"warmstart/steps": float(steps), "warmstart/loss": loss_value,
            "warmstart/seconds": time.perf_counter() - start}
