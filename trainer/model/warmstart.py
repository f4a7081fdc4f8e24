"""A short supervised phase before RL: teach the answer format on procedural problems.

RL can only reinforce what the policy already does some of the time; a randomly
initialised model never writes ``Answer: 12``. The warm start trains on
``prompt -> answer_prefix + gold + EOS`` pairs (``targets="answer"``) or on
``prompt -> worked solution + EOS`` pairs (``targets="solution"``: ``meta["solution"]``,
e.g. a Chain problem's running totals ending in ``Answer: <gold>``) drawn from a procedural
family (held-out problems excluded) with the usual next-token cross-entropy on the target
tokens only::

    L = - (1 / sum_i |y_i|) * sum_i sum_t log pi(y_i,t | x_i, y_i,<t)

It is deliberately short: the model should know the format and be right part of the time,
leaving the rest to RL. With a :class:`StopRule` target it stops once a fixed probe set's
sampled accuracy reaches the target on ``checks`` consecutive evaluations (``steps`` is then
a cap), so that seeds which learn at different speeds start RL at about the same accuracy.
``noise`` makes it imperfect on purpose: that fraction of the targets
gets a wrong integer answer (the gold plus one of -10, -1, +1, +10), so the model learns the
arithmetic but puts only about ``1 - noise`` of its probability on the right answer; the
greedy answer is mostly right while samples at temperature 1 often are not, which is what
RL (rewarded on correctness) then fixes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from verimath.envs import FLAWS, Problem, flawed_solution, generate, worked_solution
from verimath.trainer.algo.logprobs import pack_sequences, token_logprobs
from verimath.trainer.rollout.episodes import (
    ExcludingGenerator,
    build_prompt_ids,
    distinct_problems,
    format_prompts,
)

NOISE_OFFSETS = (-10, -1, 1, 10)
TARGETS = ("answer", "solution")


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


def noisy_solutions(problems, *, noise: float, flaws: tuple[str, ...],
                    rng: np.random.Generator) -> list[str]:
    """Each problem's worked solution, replaced with probability ``noise`` by a flawed one
    (:func:`verimath.envs.flawed_solution`, the flaw drawn uniformly from ``flaws``)."""
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise must be in [0, 1], got {noise}")
    unknown = [f for f in flaws if f not in FLAWS]
    if unknown or not flaws:
        raise ValueError(f"warmstart.flaws must be a non-empty list of {list(FLAWS)}, "
                         f"got {list(flaws)}")
    if noise == 0.0:
        return [worked_solution(p) for p in problems]
    flips = rng.random(len(problems)) < noise
    kinds = rng.integers(len(flaws), size=len(problems))
    return [flawed_solution(p, flaws[k], rng) if flip else worked_solution(p)
            for p, flip, k in zip(problems, flips, kinds)]


def supervised_pairs(problems, tokenizer, *, template: str, use_chat_template: bool,
                     answer_prefix: str, answers: list[str] | None = None,
                     targets: str = "answer", solutions: list[str] | None = None
                     ) -> tuple[list[list[int]], list[list[int]]]:
    """Prompt ids and target ids of each problem, then EOS: ``answer_prefix + answer``
    (``targets="answer"``; ``answers`` replaces the gold answers when given) or the problem's
    worked solution (``targets="solution"``; ``solutions`` replaces them when given;
    ValueError names a problem without one)."""
    if targets not in TARGETS:
        raise ValueError(f"warmstart.targets must be one of {list(TARGETS)}, got {targets!r}")
    prompts = build_prompt_ids(tokenizer, format_prompts(problems, template),
                               use_chat_template=use_chat_template)
    if targets == "solution":
        texts = solutions if solutions is not None else [worked_solution(p) for p in problems]
    else:
        answers = answers if answers is not None else [p.answer for p in problems]
        texts = [answer_prefix + a for a in answers]
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
           for t in texts]
    return prompts, ids


@dataclass(frozen=True)
class StopRule:
    """Stop once the probe accuracy is ``>= target`` on ``checks`` consecutive evaluations,
    one every ``every`` steps, or every ``near_every`` steps once a check has reached half
    the target (0: always ``every``); ``target=None``: run every step."""

    target: float | None = None
    every: int = 50
    checks: int = 2
    near_every: int = 0


def train_until(train_step: Callable[[], float], evaluate: Callable[[], float] | None, *,
                steps: int, rule: StopRule) -> dict:
    """Call ``train_step`` up to ``steps`` times, with a target checking ``evaluate()`` as
    :class:`StopRule` says; stop after the first ``rule.checks`` consecutive checks at or
    above the target. Returns ``steps`` (run), ``reached`` and ``history``
    (``(step, accuracy)`` of every check)."""
    history: list[tuple[int, float]] = []
    hits, next_check = 0, rule.every
    for step in range(1, steps + 1):
        train_step()
        if rule.target is None or step < next_check:
            continue
        accuracy = float(evaluate())
        history.append((step, accuracy))
        hits = hits + 1 if accuracy >= rule.target else 0
        if hits >= rule.checks:
            return {"steps": step, "reached": True, "history": history}
        near = rule.near_every and max(a for _, a in history) >= rule.target / 2
        next_check = step + (rule.near_every if near else rule.every)
    return {"steps": steps, "reached": False, "history": history}


def probe_problems(family: str, level: int, *, seed: int, count: int, excluded: set[str],
                   skip_containing: tuple[str, ...] = ()) -> list[Problem]:
    """``count`` distinct problems of stream ``seed`` with no prompt in ``excluded``: the
    fixed set the stopping rule evaluates on (kept out of the warm start's training)."""
    return distinct_problems(ExcludingGenerator(family, excluded, skip_containing=skip_containing),
                             level=level, seed=seed, count=count)


def probe_evaluator(model, tokenizer, problems: list[Problem], **settings) -> Callable[[], float]:
    """A function returning the sampled accuracy (avg@k) of ``model`` on ``problems`` with
    :func:`verimath.trainer.evaluation.evaluate.evaluate`'s ``settings`` (the same seed at
    every call, leaving torch's RNG as it was); the model is back in train mode after."""
    from verimath.trainer.evaluation.evaluate import evaluate
    from verimath.trainer.rollout.engine import HFRolloutEngine

    engine = HFRolloutEngine(model, tokenizer)
    key = f"eval/avg@{settings['k']}"

    def accuracy() -> float:
        model.eval()
        try:
            return evaluate(engine, tokenizer, problems, **settings)[key]
        finally:
            model.train()

    return accuracy


def describe_stop(result: dict, rule: StopRule, cap: int) -> str:
    """One line on where the warm start stopped and why."""
    checks = ", ".join(f"{s}: {a:.3f}" for s, a in result["history"][-4:])
    if result["reached"]:
        return (f"warm start: probe accuracy >= {rule.target:g} on {rule.checks} consecutive "
                f"checks, stopped at step {result['steps']} of at most {cap} ({checks})")
    return (f"warm start: CAP REACHED: warmstart.steps={cap} ran out before the probe accuracy "
            f"reached {rule.target:g} on {rule.checks} consecutive checks ({checks}); RL starts "
            "below the target: raise warmstart.steps or lower warmstart.target_accuracy")


def warmstart(model, tokenizer, *, family: str, level: int, seed: int, excluded: set[str],
              skip_containing: tuple[str, ...] = (), steps: int, batch_size: int, lr: float,
              template: str, use_chat_template: bool, answer_prefix: str, noise: float = 0.0,
              targets: str = "answer", flaws: tuple[str, ...] = ("slip",), stop: StopRule = StopRule(),
              evaluate: Callable[[], float] | None = None, echo: Callable[[str], None] = print,
              progress=None) -> dict[str, float]:
    """Run up to ``steps`` AdamW steps of supervised training; returns the steps run, final
    loss and time (with a ``stop`` target also whether it was reached and the last probe
    accuracy, which ``evaluate`` returns).

    Problem ``k`` of the phase is item ``k`` of the procedural stream ``seed`` (a stream of
    its own, never the RL stream), with held-out prompts redrawn; ``noise`` as in
    :func:`noisy_answers` (answer targets) or :func:`noisy_solutions` (solution targets, with
    ``flaws``), ``targets`` as in :func:`supervised_pairs`.
    """
    if steps <= 0:
        return {"warmstart/steps": 0.0}
    if stop.target is not None and evaluate is None:
        raise ValueError("a warm-start target accuracy needs an evaluate function")
    device = next(model.parameters()).device
    generator = ExcludingGenerator(family, excluded, skip_containing=skip_containing)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    model.train()
    start, index, done, loss_value = time.perf_counter(), 0, 0, float("nan")
    rng = np.random.default_rng([seed, 7919])

    def train_step() -> None:
        nonlocal index, done, loss_value
        done += 1
        problems = [generate(generator, seed, index + i, level) for i in range(batch_size)]
        index += batch_size
        answers = solutions = None
        if targets == "solution":
            solutions = noisy_solutions(problems, noise=noise, flaws=flaws, rng=rng)
        else:
            answers = noisy_answers([p.answer for p in problems], noise=noise, rng=rng)
        prompts, target_ids = supervised_pairs(problems, tokenizer, template=template,
                                               use_chat_template=use_chat_template,
                                               answer_prefix=answer_prefix, answers=answers,
                                               targets=targets, solutions=solutions)
        ids, attention, mask = pack_sequences(prompts, target_ids, pad_id=pad_id)
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

    def check() -> float:
        accuracy = evaluate()
        echo(f"warm start step {done}: probe accuracy {accuracy:.3f} "
             f"(target {stop.target:g} on {stop.checks} checks in a row)")
        return accuracy

    result = train_until(train_step, check, steps=steps, rule=stop)
    out = {"warmstart/steps": float(result["steps"]), "warmstart/loss": loss_value,
           "warmstart/seconds": time.perf_counter() - start}
    if stop.target is not None:
        echo(describe_stop(result, stop, steps))
        out["warmstart/reached"] = float(result["reached"])
        if result["history"]:
            out["warmstart/probe_accuracy"] = result["history"][-1][1]
    return out
