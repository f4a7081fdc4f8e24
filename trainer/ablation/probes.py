"""What a saved policy does on the run's held-out problems, read from its checkpoint.

The mechanism regimes (:mod:`verimath.trainer.ablation.regimes`) need measurements that the
training metrics do not hold: the probability the policy puts on a right answer, and
properties of the sampled texts (repeated lines, truncated responses whose written lines are
a right solution's beginning). They are taken here, after a run, on
its checkpoints (``logging.save_every``): the model is loaded, the run's held-out problems
are rebuilt from its config, and responses are sampled with seeds of their own (the same for
every checkpoint and every variant, so two variants are compared on the same draws).

The text measures are pure functions of a response and its problem:

- :func:`is_worked`: the response starts working the chain (its first character is the
  worked solution's), as opposed to answering at once (``Answer: N``);
- :func:`has_repeated_line`: some line of the response, other than the answer line, equals
  an earlier one (the ``loop`` flaw's signature; a right Chain solution of level 1 never
  repeats a line);
- :func:`is_sound_prefix`: the response is the beginning of the problem's worked solution,
  which is what a truncated response of right reasoning is;
- :func:`has_sound_working`: the lines written before the answer line are right (whatever
  the answer line then says).

:func:`first_token_mass` reads probabilities instead of samples: the policy's probability of
the worked solution's first token, where an answer given at once parts from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from verimath.envs import Problem, worked_solution

PROBE_SEED = 97531
"""Seed of the probes' sampling (apart from the held-out evaluation's)."""


def is_worked(text: str, problem: Problem) -> bool:
    """Whether ``text`` begins as the problem's worked solution does (same first character)."""
    return bool(text) and text[0] == worked_solution(problem)[0]


def has_repeated_line(text: str) -> bool:
    """Whether a non-empty line other than an ``Answer:`` line occurs twice in ``text``."""
    seen: set[str] = set()
    for line in text.split("\n"):
        line = line.strip()
        if not line or line.startswith("Answer:"):
            continue
        if line in seen:
            return True
        seen.add(line)
    return False


def is_sound_prefix(text: str, problem: Problem) -> bool:
    """Whether ``text`` is a non-empty beginning of the problem's worked solution."""
    return bool(text) and worked_solution(problem).startswith(text)


def has_sound_working(text: str, problem: Problem) -> bool:
    """Whether ``text`` works the chain and every line it wrote before its answer line (all
    of it, when it has none: a truncated response) is the worked solution's beginning."""
    working = text.split("Answer:", 1)[0]
    return is_worked(text, problem) and worked_solution(problem).startswith(working)


@dataclass
class Samples:
    """``k`` sampled responses per problem, problem-major."""

    problems: list[Problem]
    """One per response (each problem repeated ``k`` times)."""
    texts: list[str]
    lengths: np.ndarray
    """``(B,)`` response tokens, EOS included."""
    truncated: np.ndarray
    """``(B,)`` bool: the response reached ``rollout.max_new_tokens`` without EOS."""
    correct: np.ndarray
    """``(B,)`` bool: the verifier's verdict (no length shaping)."""


def load_model(model_dir: Path):
    """``(model, tokenizer)`` of a checkpoint's ``model`` directory, in eval mode, float32."""
    import torch
    from verimath.trainer.model.policy import load_pretrained

    model, tokenizer = load_pretrained(str(model_dir), dtype=torch.float32)
    return model.eval(), tokenizer


def run_problems(config) -> list[Problem]:
    """The held-out problems of a run with ``config`` (those its evaluation scores)."""
    from verimath.trainer.rollout.episodes import heldout_problems

    return heldout_problems(family=config.data.family, level=config.data.level,
                            seed=config.eval.seed, count=config.eval.num_problems,
                            skip_containing=config.data.skip_containing)


def sample(model, tokenizer, problems: list[Problem], config, *, k: int,
           seed: int = PROBE_SEED) -> Samples:
    """``k`` responses per problem at the run's temperature and cap, scored for correctness;
    problem ``i`` draws with its own seed, so the result does not depend on batching."""
    from verimath.rewards import score_batch
    from verimath.trainer.core.protocols import SamplingParams
    from verimath.trainer.evaluation.evaluate import generate_seeded, problem_seed
    from verimath.trainer.rollout.episodes import build_prompt_ids, format_prompts
    from verimath.trainer.rollout.hf_engine import HFRolloutEngine

    engine = HFRolloutEngine(model, tokenizer)
    ids = build_prompt_ids(tokenizer, format_prompts(problems, config.model.prompt_template),
                           use_chat_template=config.model.use_chat_template)
    params = SamplingParams(temperature=config.rollout.temperature, top_p=config.rollout.top_p,
                            max_new_tokens=config.rollout.max_new_tokens)
    texts, lengths, truncated = [], [], []
    per_batch = max(1, 256 // k)
    for start in range(0, len(problems), per_batch):
        chunk = ids[start:start + per_batch]
        seeds = [problem_seed(seed, start + i) for i in range(len(chunk))]
        out = generate_seeded(engine, chunk, params, n=k, seeds=seeds)
        texts += out.texts
        lengths += [len(r) for r in out.response_ids]
        truncated.append(np.asarray(out.truncated, dtype=bool))
    repeated = [p for p in problems for _ in range(k)]
    correct = score_batch(texts, [p.answer for p in repeated], style=config.reward.answer_style,
                          mode=config.reward.mode, timeout=config.reward.timeout).correct
    return Samples(repeated, texts, np.asarray(lengths, dtype=np.int64),
                   np.concatenate(truncated), np.asarray(correct, dtype=bool))


def first_token_mass(model, tokenizer, problems: list[Problem], config) -> float:
    """The mean over ``problems`` of the probability (at the run's temperature) of the first
    token of the problem's worked solution, right after the prompt."""
    import torch
    from verimath.trainer.rollout.episodes import build_prompt_ids, format_prompts

    ids = build_prompt_ids(tokenizer, format_prompts(problems, config.model.prompt_template),
                           use_chat_template=config.model.use_chat_template)
    first = [tokenizer(worked_solution(p), add_special_tokens=False)["input_ids"][0]
             for p in problems]
    width = max(len(x) for x in ids)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    batch = torch.tensor([[pad] * (width - len(x)) + x for x in ids])  # left-padded (B, S)
    attention = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in ids])
    positions = (attention.cumsum(-1) - 1).clamp(min=0)  # as generation numbers them
    with torch.no_grad():
        logits = model(input_ids=batch, attention_mask=attention,
                       position_ids=positions).logits[:, -1, :]  # (B, V)
        probs = torch.softmax(logits.float() / config.rollout.temperature, dim=-1)
    return float(probs[torch.arange(len(first)), torch.tensor(first)].mean())
