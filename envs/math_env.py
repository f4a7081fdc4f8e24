"""`MathEnv`: a Gymnasium environment that poses a math problem and verifies the answer.

One episode, single-turn (default, ``max_attempts=1``)::

    obs, info = env.reset(seed=0)       # obs: the prompt text (problem under the template)
    obs, reward, terminated, truncated, info = env.step("... Answer: 12")
    # obs == "", terminated is True, truncated is False

``reset`` info: ``id``, ``source``, ``level`` (generated problems), ``attempt`` (0),
``max_attempts``, and ``answer`` only when asked (``include_answer=True`` or
``reset(options={"include_answer": True})``). ``step`` info: ``correct`` (bool),
``extracted`` (the answer found, or None), ``penalty`` (overlong, in [-1, 0]), ``timed_out``
(verification ran out of time, counted wrong), ``attempt`` (1-based), ``id``.

Reward (see `verimath.envs.scoring`): ``correct_reward`` or ``wrong_reward``, plus the overlong
penalty when ``max_length``/``cache_length`` are set. Its token count comes with the action
(``env.step(Response(text, num_tokens=n))``, a ``str`` subclass) or from the env's
``tokenizer``.

Multi-turn retry (``max_attempts = K > 1``): a wrong answer before the K-th attempt returns the
feedback observation ``"Your answer X is not correct. Try again."``, reward ``penalty`` (that
is, 0 plus the attempt's overlong penalty) and ``terminated=False``. The episode ends at the
first correct answer (reward ``correct_reward + penalty``) or after K wrong attempts (reward
``wrong_reward + penalty``). So the return is the single-turn reward of the last attempt plus
the overlong penalties of the earlier ones. The observation is the feedback alone; the caller
keeps the conversation.

``reset(options={"problem": p})`` poses a given `Problem` (evaluation loops).

Difficulty that follows the policy (`verimath.envs.curriculum`, both off by default):
``adapt_level=True`` (or a mapping of `AdaptiveLevel` fields) moves a procedural family's level
to keep its group pass rate in a band; ``skip_solved=True`` (or `SkipSolved` fields) passes over
dataset problems every sample solved on their last visits, re-checking them later. Evidence:
each finished episode of a problem drawn from the source (not one given in ``options``), or
``observe(problems, correct)`` with ``correct`` of shape ``(P, G)`` (the group env calls it);
``curriculum_stats()`` gives the ``curriculum/...`` metrics.
``state_dict()`` / ``load_state_dict()`` save and restore the position in the problem stream
(for resumable training).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
from verimath.envs.problem import Problem
from verimath.envs.scoring import RewardSpec, score_responses
from verimath.envs.sources import make_source
from verimath.envs.spaces import UnicodeText
from verimath.envs.templates import format_prompt, resolve_template
from verimath.rewards import Conventions

RESET_OPTIONS = ("problem", "include_answer")


def feedback_text(extracted: str | None) -> str:
    """The observation after a wrong attempt in retry mode."""
    if extracted is None:
        return "No final answer was found in your response. Try again."
    if len(extracted) > 200:
        extracted = extracted[:200] + "..."
    return f"Your answer {extracted} is not correct. Try again."


class MathEnv(gym.Env[str, str]):
    """Poses math problems (text) and rewards verified answers; see the module docstring.

    Problem source, exactly one of: ``family`` (a generator family name, with ``level`` 1..5,
    default 1, and ``weights`` for ``"Mixed"``), ``generator`` (a ``(rng, level) -> Problem``
    callable), ``problems`` (a list of `Problem`) or ``path`` (a ``.jsonl``/``.parquet`` file,
    read on first reset; ``shuffle`` orders lists and files).

    Other args: ``template`` ("dapo", "boxed", "raw" or a string with ``{prompt}``); scoring
    (``style``, ``mode``, ``timeout``, ``conventions``, ``correct_reward``, ``wrong_reward``,
    ``max_length``, ``cache_length``; see `RewardSpec`; ``conventions="strict"`` grades by the
    strict conventions of ``docs/conventions.md``); ``tokenizer`` counts response tokens for
    the overlong penalty when the action is a plain str; ``max_attempts``; ``include_answer``;
    ``workers`` (None: the shared scoring pool of `verimath.rewards`); ``adapt_level``
    (streams) and ``skip_solved`` (lists and files): see the module docstring.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, *, family: str | None = None, level: int | None = None,
                 weights: dict[str, float] | None = None, generator: Callable | None = None,
                 problems: Sequence[Problem] | None = None, path: str | os.PathLike | None = None,
                 shuffle: bool = True, template: str = "dapo", style: str = "auto",
                 mode: str = "symbolic", max_length: int | None = None,
                 cache_length: int | None = None, tokenizer: Any = None,
                 correct_reward: float = 1.0, wrong_reward: float = -1.0, max_attempts: int = 1,
                 timeout: float = 5.0, include_answer: bool = False,
                 render_mode: str | None = None, workers: int | None = None,
                 adapt_level: Any = None, skip_solved: Any = None,
                 conventions: Conventions | str | dict | None = None) -> None:
        self.source = make_source(family=family, level=level, weights=weights,
                                  generator=generator, problems=problems, path=path,
                                  shuffle=shuffle, adapt_level=adapt_level,
                                  skip_solved=skip_solved)
        self.template = template
        resolve_template(template)  # fail now on a bad template
        self.reward_spec = RewardSpec(correct_reward=correct_reward, wrong_reward=wrong_reward,
                                      style=style, mode=mode, max_length=max_length,
                                      cache_length=cache_length, timeout=timeout,
                                      conventions=conventions)
        if isinstance(max_attempts, bool) or int(max_attempts) != max_attempts \
                or max_attempts < 1:
            raise ValueError(f"max_attempts must be an integer >= 1, got {max_attempts!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.max_attempts = int(max_attempts)
        self.tokenizer, self.include_answer, self.workers = tokenizer, include_answer, workers
        self.render_mode = render_mode
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self.problem: Problem | None = None
        self.from_source = False
        """Whether the current problem came from the source (its result is evidence)."""
        self.attempt = 0
        self.done = False
        self.closed = False
        self._transcript: list[str] = []

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset options {unknown}; known: {list(RESET_OPTIONS)}")
        if options.get("problem") is not None:
            if not isinstance(options["problem"], Problem):
                raise TypeError("options['problem'] must be a verimath.envs.Problem, got "
                                f"{type(options['problem']).__name__}")
            self.problem, self.from_source = options["problem"], False
        else:
            if seed is not None:
                self.source.restart(seed, self.np_random)
            self.problem, self.from_source = self.source.next(self.np_random), True
        self.attempt, self.done = 0, False
        obs = format_prompt(self.problem, self.template)
        self._transcript = [obs]
        info = {"id": self.problem.id, "source": self.problem.source, "attempt": 0,
                "max_attempts": self.max_attempts}
        if "level" in self.problem.meta:
            info["level"] = self.problem.meta["level"]
        if options.get("include_answer", self.include_answer):
            info["answer"] = self.problem.answer
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.problem is None:
            raise RuntimeError("MathEnv.step() called before reset(); call env.reset() first")
        if self.done:
            raise RuntimeError("this episode is over (terminated); call env.reset() to start "
                               "the next one")
        if not isinstance(action, str):
            raise TypeError(f"the action must be the response text (str), got "
                            f"{type(action).__name__}")
        scores, rewards = score_responses([action], [self.problem.answer], self.reward_spec,
                                          tokenizer=self.tokenizer, workers=self.workers)
        correct, penalty = bool(scores.correct[0]), float(scores.penalty[0])
        self.attempt += 1
        self.done = correct or self.attempt >= self.max_attempts
        if self.done:
            obs, reward = "", float(rewards[0])
            if self.from_source:
                self.observe([self.problem], [[correct]])
        else:
            obs, reward = feedback_text(scores.extracted[0]), penalty
        self._transcript += [str(action), obs or ("correct" if correct else "wrong")]
        info = {"correct": correct, "extracted": scores.extracted[0], "penalty": penalty,
                "timed_out": bool(scores.timed_out[0]), "attempt": self.attempt,
                "id": self.problem.id}
        return obs, reward, self.done, False, info

    def observe(self, problems: Sequence[Problem], correct: Any) -> None:
        """Feed scored groups (``correct`` of shape ``(P, G)``, one row per problem) to the
        curriculum, if one is on; a no-op otherwise."""
        self.source.observe(problems, correct)

    def curriculum_stats(self) -> dict[str, float]:
        """``curriculum/...`` metrics (levels and pass rates, or settled and skipped counts);
        empty when no curriculum is on."""
        return self.source.stats()

    def state_dict(self) -> dict[str, Any]:
        """Where the env is in its problem stream (source cursor, curriculum and RNG state), so
        a resumed run continues with the same problems; restore with `load_state_dict`."""
        return {"source": self.source.state_dict(),
                "np_random": self.np_random.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.source.load_state_dict(state["source"])
        self.np_random.bit_generator.state = state["np_random"]
        self.problem, self.done = None, False

    def render(self) -> str | None:
        """``"ansi"``: the episode so far (prompt, responses, feedback) as text."""
        if self.render_mode != "ansi":
            return None
        return "\n---\n".join(self._transcript)

    def close(self) -> None:
        """Idempotent; the env owns no process (scoring uses the shared pool)."""
        self.closed = True

    def __repr__(self) -> str:
        return (f"MathEnv({self.source.describe()}, template={self.template!r:.30}, "
                f"max_attempts={self.max_attempts})")
