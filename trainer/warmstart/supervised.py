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
``noise`` makes it imperfect on purpose: that fraction of the targets gets a wrong integer
answer (the gold plus one of -10, -1, +1, +10), so the model learns the
arithmetic but puts only about ``1 - noise`` of its probability on the right answer; the
greedy answer is mostly right while samples at temperature 1 often are not, which is what
RL (rewarded on correctness) then fixes.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

import numpy as np
import torch
from verimath.envs import FLAWS, Problem, flawed_solution, generate, worked_solution
from verimath.trainer.core.logprobs import pack_sequences, token_logprobs
from verimath.trainer.rollout.episodes import (
    ExcludingGenerator,
    build_prompt_ids,
    distinct_problems,
    format_prompts,
)
from verimath.trainer.warmstart.stopping import StopRule, Trainer, describe_stop, train_until

__all__ = ["NOISE_OFFSETS", "TARGETS", "StopRule", "describe_stop", "noisy_answers",
           "probe_evaluator", "probe_problems", "supervised_pairs", "train_until", "warmstart"]

NOISE_OFFSETS = (-10, -1, 1, 10)
NO_TARGET = StopRule()  # run every step
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


def probe_problems(family: str, level: int, *, seed: int, count: int, excluded: set[str],
                   skip_containing: tuple[str, ...] = ()) -> list[Problem]:
    """``count`` distinct problems of stream ``seed`` with no prompt in ``excluded``: the
    fixed set the stopping rule evaluates on (kept out of the warm start's training)."""
    return distinct_problems(ExcludingGenerator(family, excluded, skip_containing=skip_containing),
                             level=level, seed=seed, count=count)


def probe_evaluator(model, tokenizer, problems: list[Problem], *, k: int, temperature: float,
                    top_p: float, max_new_tokens: int, template: str, use_chat_template: bool,
                    answer_style: str = "auto", mode: str = "symbolic", timeout: float = 5.0,
                    conventions: str = "default", batch_size: int = 256,
                    seed: int = 0) -> Callable[[], float]:
    """A function returning the sampled accuracy (avg@k) of ``model`` on ``problems``: the
    ``eval/avg@k`` of :func:`verimath.trainer.evaluation.evaluate.evaluate` with these
    settings (the same samples, without its greedy pass), with the same seed at every call,
    leaving torch's RNG as it was; the model is back in train mode after."""
    from verimath.rewards import score_batch
    from verimath.trainer.core.protocols import SamplingParams
    from verimath.trainer.evaluation.evaluate import generate_seeded, problem_seed
    from verimath.trainer.rollout.hf_engine import HFRolloutEngine

    engine = HFRolloutEngine(model, tokenizer)
    prompt_ids = build_prompt_ids(tokenizer, format_prompts(problems, template),
                                  use_chat_template=use_chat_template)
    golds = [p.answer for p in problems]
    params = SamplingParams(temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens)
    per_batch = max(1, batch_size // k)

    def accuracy() -> float:
        model.eval()
        correct = []
        try:
            for start in range(0, len(problems), per_batch):
                ids = prompt_ids[start:start + per_batch]
                seeds = [problem_seed(seed, start + i) for i in range(len(ids))]
                out = generate_seeded(engine, ids, params, n=k, seeds=seeds)
                gold = [g for g in golds[start:start + per_batch] for _ in range(k)]
                correct.append(score_batch(out.texts, gold, style=answer_style, mode=mode,
                                           timeout=timeout, conventions=conventions).correct)
        finally:
            model.train()
        return float(np.concatenate(correct).mean())

    return accuracy


class SupervisedTrainer:
    """One AdamW step of next-token cross-entropy on the target tokens per :meth:`step`,
    problem ``k`` being item ``k`` of the excluding stream ``seed`` (``noise`` as in
    :func:`noisy_answers`, or :func:`noisy_solutions` with ``flaws`` for solution targets;
    ``targets`` as in :func:`supervised_pairs`); :meth:`snapshot`
    and :meth:`restore` copy and put back everything the next steps depend on."""

    def __init__(self, model, tokenizer, *, generator, seed: int, level: int, batch_size: int,
                 lr: float, template: str, use_chat_template: bool, answer_prefix: str,
                 noise: float, targets: str, flaws: tuple[str, ...] = ("slip",),
                 noisy: bool = True, progress=None) -> None:
        self.model, self.tokenizer, self.generator = model, tokenizer, generator
        self.noisy = noisy  # False: clean targets until set (warmstart.noise_after)
        self.flaws = tuple(flaws)
        self.seed, self.level, self.batch_size, self.noise = seed, level, batch_size, noise
        self.pairs = {"template": template, "use_chat_template": use_chat_template,
                      "answer_prefix": answer_prefix, "targets": targets}
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None \
            else tokenizer.eos_token_id
        self.device = next(model.parameters()).device
        self.rng = np.random.default_rng([seed, 7919])
        self.index, self.position, self.loss, self.progress = 0, 0, float("nan"), progress

    def step(self) -> None:
        problems = [generate(self.generator, self.seed, self.index + i, self.level)
                    for i in range(self.batch_size)]
        self.index += self.batch_size
        self.position += 1
        answers = solutions = None
        noise = self.noise if self.noisy else 0.0
        if self.pairs["targets"] == "solution":
            solutions = noisy_solutions(problems, noise=noise, flaws=self.flaws, rng=self.rng)
        else:
            answers = noisy_answers([p.answer for p in problems], noise=noise, rng=self.rng)
        prompts, target_ids = supervised_pairs(problems, self.tokenizer, answers=answers,
                                               solutions=solutions, **self.pairs)
        ids, attention, mask = pack_sequences(prompts, target_ids, pad_id=self.pad_id)
        ids, attention, mask = ids.to(self.device), attention.to(self.device), mask.to(self.device)
        logp = token_logprobs(self.model, ids, attention)  # (B, S-1)
        loss = -(logp * mask).sum() / mask.sum()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.loss = float(loss.detach())
        if self.progress is not None:
            self.progress.update(1)
            self.progress.set_postfix(loss=f"{self.loss:.3f}")

    def snapshot(self) -> dict:
        return {"model": {k: v.detach().clone() for k, v in self.model.state_dict().items()},
                "optimizer": copy.deepcopy(self.optimizer.state_dict()),
                "rng": copy.deepcopy(self.rng.bit_generator.state), "index": self.index,
                "position": self.position, "loss": self.loss, "noisy": self.noisy}

    def restore(self, snap: dict) -> None:
        self.model.load_state_dict(snap["model"])
        self.optimizer.load_state_dict(copy.deepcopy(snap["optimizer"]))
        self.rng.bit_generator.state = copy.deepcopy(snap["rng"])
        self.index, self.position, self.loss = snap["index"], snap["position"], snap["loss"]
        self.noisy = snap["noisy"]
        if self.progress is not None:
            self.progress.n = self.position
            self.progress.refresh()


def warmstart(model, tokenizer, *, family: str, level: int, seed: int, excluded: set[str],
              skip_containing: tuple[str, ...] = (), steps: int, batch_size: int, lr: float,
              template: str, use_chat_template: bool, answer_prefix: str, noise: float = 0.0,
              targets: str = "answer", flaws: tuple[str, ...] = ("slip",),
              noise_after: float = 0.0, stop: StopRule = NO_TARGET,
              evaluate: Callable[[], float] | None = None,
              evaluate_fine: Callable[[], float] | None = None,
              echo: Callable[[str], None] = print, progress=None) -> dict[str, float]:
    """Run up to ``steps`` AdamW steps of supervised training (:class:`SupervisedTrainer`)
    with ``stop`` as :func:`train_until` says (``evaluate`` the probe, ``evaluate_fine`` the
    larger probe of a bracketed stop); returns the steps run, final loss and time (with a
    ``stop`` target also whether it was reached and the kept weights' probe accuracy).
    ``noise`` as in :func:`noisy_answers` (answer targets) or :func:`noisy_solutions`
    (solution targets, with ``flaws``), from the first step, or with ``noise_after > 0`` from
    the step after the first probe check at or above ``noise_after``."""
    if steps <= 0:
        return {"warmstart/steps": 0.0}
    if stop.target is not None and evaluate is None:
        raise ValueError("a warm-start target accuracy needs an evaluate function")
    start = time.perf_counter()
    trainer = SupervisedTrainer(
        model, tokenizer, generator=ExcludingGenerator(family, excluded,
                                                       skip_containing=skip_containing),
        seed=seed, level=level, batch_size=batch_size, lr=lr, template=template,
        use_chat_template=use_chat_template, answer_prefix=answer_prefix, noise=noise,
        targets=targets, flaws=flaws, noisy=noise_after <= 0, progress=progress)
    model.train()

    def check(probe: Callable[[], float], name: str) -> Callable[[], float]:
        def run() -> float:
            accuracy = probe()
            rule = ", the closest check kept" if stop.fine_every \
                else f" on {stop.checks} checks in a row"
            echo(f"warm start step {trainer.position}: {name}accuracy {accuracy:.3f} "
                 f"(target {stop.target:g}{rule})")
            if not trainer.noisy and accuracy >= noise_after:  # a snapshot after it keeps it
                trainer.noisy = True
                if noise > 0:
                    echo(f"warm start step {trainer.position}: noisy targets ({noise:g}) from "
                         f"the next step on (probe accuracy >= {noise_after:g})")
            return accuracy
        return run

    result = train_until(Trainer(trainer.step, trainer.snapshot, trainer.restore),
                         check(evaluate, "probe ") if evaluate else None, steps=steps, rule=stop,
                         evaluate_fine=check(evaluate_fine, "fine probe ") if evaluate_fine
                         else None)
    out = {"warmstart/steps": float(result["steps"]), "warmstart/loss": trainer.loss,
           "warmstart/seconds": time.perf_counter() - start}
    if stop.target is not None:
        echo(describe_stop(result, stop, steps))
        out["warmstart/reached"] = float(result["reached"])
        if result["history"]:
            out["warmstart/probe_accuracy"] = result.get("accuracy", result["history"][-1][1])
        if stop.fine_every:
            out["warmstart/trained_steps"] = float(result["trained"])
    return out
