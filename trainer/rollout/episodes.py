"""Episode groups for the trainer: problems from a verimath env, responses from an engine.

One generation round = ``env.reset()`` (``P`` problems, each repeated ``G`` times), one
:class:`~verimath.trainer.rollout.hf_engine.RolloutEngine` call (``P * G`` samples), one
``env.step(responses, lengths=...)`` (a single batch-scoring call that also adds DAPO's
soft overlong punishment when the env was built with ``max_length``/``cache_length``).
The result is one :class:`Group` per problem, the payload the dynamic sampler keeps or drops.

Held-out problems are kept out of training by prompt: :class:`ExcludingGenerator` wraps a
procedural family and redraws (from the same item RNG, so still deterministic) any problem
whose prompt is in the held-out set.
"""

from __future__ import annotations

import time

import numpy as np
from verimath.envs import (
    GroupVectorEnv,
    MathEnv,
    Problem,
    format_prompt,
    generate,
    make_group_env,
    read_problems,
)
from verimath.envs.generators import get_generator
from verimath.trainer.core.groups import Group, RoundStats
from verimath.trainer.core.protocols import RolloutEngine, SamplingParams


class ExcludingGenerator:
    """A ``(rng, level) -> Problem`` generator that never yields a prompt in ``excluded``,
    nor one containing any text of ``skip_containing`` (redrawn from the same item RNG)."""

    def __init__(self, family: str, excluded: set[str] = frozenset(), *,
                 skip_containing: tuple[str, ...] | str | None = None,
                 max_tries: int = 1000) -> None:
        self.family, self.excluded, self.max_tries = family, frozenset(excluded), max_tries
        if isinstance(skip_containing, str):
            skip_containing = (skip_containing,)
        self.skip_containing = tuple(skip_containing or ())
        self.generator = get_generator(family)
        self.__name__ = family

    def is_allowed(self, problem: Problem) -> bool:
        if any(text in problem.prompt for text in self.skip_containing):
            return False
        return problem.prompt not in self.excluded

    def __call__(self, rng, level: int) -> Problem:
        for _ in range(self.max_tries):
            problem = self.generator(rng, level)
            if self.is_allowed(problem):
                return problem
        if self.skip_containing:
            raise ValueError(
                f"{self.family} level {level}: {self.max_tries} draws in a row were held-out "
                f"problems or contained a text of data.skip_containing "
                f"{list(self.skip_containing)}; lower eval.num_problems, skip fewer texts, or "
                "(with data.adapt_level) keep data.adapt_levels below this level")
        raise ValueError(
            f"{self.family} level {level}: {self.max_tries} draws in a row were held-out "
            "problems; the family is too small for this many held-out problems "
            "(lower eval.num_problems)"
        )


def heldout_problems(*, family: str, level: int, seed: int, count: int,
                     path: str | None = None,
                     skip_containing: tuple[str, ...] | str | None = None
                     ) -> list[Problem]:
    """The evaluation problems: a file, or ``count`` distinct procedural problems of stream
    ``seed`` (duplicates by prompt skipped, at most ``50 * count`` draws)."""
    if path is not None:
        return read_problems(path)
    return distinct_problems(ExcludingGenerator(family, skip_containing=skip_containing),
                             level=level, seed=seed, count=count)


def distinct_problems(generator, *, level: int, seed: int, count: int) -> list[Problem]:
    """The first ``count`` problems of stream ``seed`` with distinct prompts (at most
    ``50 * count`` draws; fewer problems when the generator repeats itself that much)."""
    problems, seen = [], set()
    for index in range(50 * count):
        if len(problems) >= count:
            break
        problem = generate(generator, seed, index, level)
        if problem.prompt not in seen:
            seen.add(problem.prompt)
            problems.append(problem)
    return problems


def build_prompt_ids(tokenizer, texts: list[str], *, use_chat_template: bool) -> list[list[int]]:
    """Token ids of model-facing prompts; with a chat template, each text is a user turn."""
    if use_chat_template and getattr(tokenizer, "chat_template", None):
        return [
            list(tokenizer.apply_chat_template(
                [{"role": "user", "content": t}], add_generation_prompt=True, tokenize=True,
                return_dict=False,
            ))
            for t in texts
        ]
    return [tokenizer(t, add_special_tokens=True)["input_ids"] for t in texts]


class EpisodeSource:
    """Owns the training group env; ``next_round`` yields one round of scored groups.

    ``adapt_level`` (the procedural family) and ``skip_solved`` (a ``train_file``) switch on
    the env's curriculum (`verimath.envs.curriculum`; a mapping of its settings, None: off).
    Its state is part of the env's, so ``state_dict`` carries it through a resume."""

    def __init__(self, *, tokenizer, engine: RolloutEngine, params: SamplingParams,
                 num_problems: int, group_size: int, template: str, use_chat_template: bool,
                 family: str, level: int, seed: int, train_file: str | None,
                 excluded: set[str], reward_kwargs: dict,
                 skip_containing: tuple[str, ...] = (), adapt_level: dict | None = None,
                 skip_solved: dict | None = None) -> None:
        generator = ExcludingGenerator(family, excluded, skip_containing=skip_containing)
        source = ({"path": train_file, "skip_solved": skip_solved} if train_file else
                  {"generator": generator, "level": level, "adapt_level": adapt_level})
        self.env = _group_env(num_problems, group_size, source, template, reward_kwargs)
        self._sized: dict[int, GroupVectorEnv] = {}
        self.tokenizer, self.engine, self.params = tokenizer, engine, params
        self.group_size, self.seed = group_size, seed
        self.use_chat_template = use_chat_template
        self.started = False
        self.stats = RoundStats()

    def state_dict(self) -> dict:
        """Where the problem stream is (the group env's cursor and RNG state), enough to pose
        the same problems after a resume as an uninterrupted run would."""
        return {"started": self.started, "env": self.env.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        if "env" not in state:
            raise ValueError("the episode state holds no 'env' entry: it was saved by an older "
                             "verimath; start a new run")
        self.started = bool(state["started"])
        if self.started:
            self.env.load_state_dict(state["env"])

    def round_env(self, num_prompts: int | None):
        """The group env posing ``num_prompts`` problems per reset (default: the full round).
        Every size wraps the same single-problem env, so they share one problem stream (its
        cursor and RNG) and ``state_dict`` covers them all."""
        if num_prompts is None or num_prompts == self.env.num_problems:
            return self.env
        if num_prompts not in self._sized:
            self._sized[num_prompts] = GroupVectorEnv(self.env.env, num_prompts, self.group_size)
        return self._sized[num_prompts]

    def next_round(self, round_index: int, num_prompts: int | None = None
                   ) -> tuple[list[Group], np.ndarray]:
        """One generation round of ``num_prompts`` problems (default: ``num_problems``);
        returns ``(groups, correct (P, G))`` for the sampler."""
        env = self.round_env(num_prompts)
        prompts, _ = env.reset(seed=None if self.started else self.seed)
        self.started = True
        unique = list(prompts[:: self.group_size])  # (P,)
        prompt_ids = build_prompt_ids(self.tokenizer, unique,
                                      use_chat_template=self.use_chat_template)
        t0 = time.perf_counter()
        out = self.engine.generate(prompt_ids, self.params, n=self.group_size)
        t1 = time.perf_counter()
        _, rewards, _, _, info = env.step(out.texts, lengths=out.lengths)
        t2 = time.perf_counter()
        self._account(out, info, rewards, t1 - t0, t2 - t1)
        g = self.group_size
        correct = np.asarray(info["correct"], dtype=bool).reshape(-1, g)  # (P, G)
        behaviour = getattr(out, "logprobs", None)
        groups = [
            Group(problem_id=str(info["id"][i * g]), prompt_ids=prompt_ids[i],
                  response_ids=out.response_ids[i * g:(i + 1) * g],
                  rewards=np.asarray(rewards[i * g:(i + 1) * g], dtype=np.float64),
                  correct=correct[i], truncated=out.truncated[i * g:(i + 1) * g],
                  logprobs=None if behaviour is None else behaviour[i * g:(i + 1) * g])
            for i in range(len(unique))
        ]
        return groups, correct

    def _account(self, out, info, rewards, t_gen: float, t_score: float) -> None:
        s, lengths = self.stats, out.lengths  # (B,), a computed property: read once
        s.generated_tokens += int(lengths.sum())
        s.responses += len(out)
        s.seconds_generate += t_gen
        s.seconds_score += t_score
        s.lengths += lengths.tolist()
        s.truncated += int(out.truncated.sum())
        s.correct += int(np.sum(info["correct"]))
        s.correct_tokens += int(lengths[np.asarray(info["correct"], dtype=bool)].sum())
        s.reward_sum += float(np.sum(rewards))
        s.paths += [str(p) for p in info["path"]]
        s.rules += [str(r) for r in info["rule"]]
        s.curriculum += [[k, v] for k, v in self.env.curriculum_stats().items()]

    def start_step(self, step: int, model) -> None:
        """Step ``step`` begins with ``model``; here the engine samples from the policy the
        step pushes to it, so there is nothing to do (the asynchronous source,
        ``verimath.trainer.rollout.async_source``, sends the weights to its generator)."""

    def after_collection(self) -> None:
        """The step's groups are in hand (the asynchronous source starts the next rounds)."""

    def step_metrics(self, trained: list[Group]) -> dict[str, float]:
        """Metrics of the source itself: none here (``async/`` ones for the asynchronous
        source)."""
        return {}

    def pop_stats(self) -> RoundStats:
        """The accounting since the last call, then reset it."""
        stats, self.stats = self.stats, RoundStats()
        return stats

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None
            self._sized.clear()

    def __enter__(self) -> EpisodeSource:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _group_env(num_problems, group_size, source, template, reward_kwargs):
    env = MathEnv(**source, template=template, **reward_kwargs)
    return make_group_env(env, num_problems, group_size)


def format_prompts(problems: list[Problem], template: str) -> list[str]:
    """The instruction text of each problem (``verimath.envs.format_prompt``), before the
    chat template and tokenization of :func:`build_prompt_ids`."""
    return [format_prompt(p, template) for p in problems]
