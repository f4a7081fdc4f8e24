"""Episode groups: the P x G batches that GRPO/DAPO trains on.

``make_group_env(env_id, num_problems=P, group_size=G, **env_kwargs)`` returns a
`gymnasium.vector.VectorEnv` of ``P * G`` sub-environments in which each block of ``G``
consecutive sub-environments shares one problem (sub-env ``i`` belongs to group ``i // G``)::

    envs = make_group_env("verimath/Arithmetic-v0", num_problems=4, group_size=8, level=2)
    prompts, info = envs.reset(seed=0)        # tuple of 32 prompts, 4 distinct problems
    _, reward, terminated, truncated, info = envs.step(responses)   # 32 response texts
    reward.reshape(4, 8)                      # (P, G): what group advantages need

``step(actions, lengths=None)`` scores all ``P * G`` responses with ONE
`verimath.rewards.score_batch` call (deduplication and the worker pool apply). Token counts
for the overlong penalty come from ``lengths`` (``(P*G,)`` ints), `Response` actions or the
env's tokenizer. Every episode is single-turn, so each step terminates all sub-envs and the
next call must be ``reset()`` (no autoreset). Info arrays (each with a ``_<key>`` mask, the
Gymnasium vector convention), all of length ``P * G``: ``correct``, ``penalty``, ``timed_out``,
``group_id``, ``extracted``, ``path`` and ``rule`` (where the answer was found and which rule
decided: `BatchScores.paths` and ``rules``), ``id``, ``problem`` (the `Problem` objects);
``envs.problems`` is the list of the P distinct problems. After scoring, ``step`` passes the
``(P, G)`` correctness of problems drawn from the source to ``MathEnv.observe``, so a curriculum
(``adapt_level``, ``skip_solved``) learns from every step; ``envs.curriculum_stats()`` gives its
metrics.

Problems: ``reset(seed=s)`` poses problems ``0 .. P-1`` of the source's seed-``s`` order, and each
later ``reset()`` the next P (for generator ids: ``generate(family, s, k, level)``, item ``k``).
``reset(options={"problems": [...]})`` poses the given P problems (evaluation);
``reset(options={"include_answer": True})`` adds an ``answer`` info array.

Your own single-problem env: anything whose ``unwrapped`` is a `MathEnv` works, so pass a
`MathEnv` built on your generator or list, a subclass, or a factory::

    make_group_env(lambda: MathEnv(generator=my_gen, level=3), num_problems=64, group_size=16)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from verimath.envs.math_env import MathEnv
from verimath.envs.problem import Problem
from verimath.envs.scoring import score_responses


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def _vector_info(**arrays: Any) -> dict[str, np.ndarray]:
    """Gymnasium vector info: each key with its all-True ``_key`` mask."""
    info: dict[str, np.ndarray] = {}
    for key, values in arrays.items():
        arr = np.asarray(values) if not isinstance(values, list) else _object_array(values)
        info[key] = arr
        info[f"_{key}"] = np.ones(len(arr), dtype=bool)
    return info


def _object_array(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class GroupVectorEnv(VectorEnv):
    """``P * G`` sub-envs in groups of G sharing one problem; see the module docstring."""

    metadata = {"autoreset_mode": AutoresetMode.DISABLED}

    def __init__(self, env: gym.Env, num_problems: int, group_size: int,
                 workers: int | None = None) -> None:
        if not isinstance(env.unwrapped, MathEnv):
            raise TypeError(
                f"make_group_env needs an env whose unwrapped is a MathEnv, got "
                f"{type(env.unwrapped).__name__}; build a MathEnv on your problems "
                "(generator=..., problems=..., path=...) or subclass it"
            )
        self.env = env
        self.math_env: MathEnv = env.unwrapped
        if self.math_env.max_attempts != 1:
            raise ValueError("group envs are single-turn: use max_attempts=1 "
                             f"(got {self.math_env.max_attempts})")
        self.num_problems = _count(num_problems, "num_problems")
        self.group_size = _count(group_size, "group_size")
        self.num_envs = self.num_problems * self.group_size
        self.workers = workers
        self.single_observation_space = self.math_env.observation_space
        self.single_action_space = self.math_env.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.group_id = np.repeat(np.arange(self.num_problems), self.group_size)
        self.problems: list[Problem] = []
        self._prompts: list[str] = []
        self._ready = False
        self._from_source = False
        self._include_answer = self.math_env.include_answer

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[tuple[str, ...], dict]:
        """Draw P problems (see the module docstring); returns ``P * G`` prompts and info."""
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise ValueError(f"seed must be one int for the whole batch (or None), got {seed!r}")
        options = dict(options or {})
        given = options.pop("problems", None)
        if given is not None and len(given) != self.num_problems:
            raise ValueError(f"options['problems'] has {len(given)} problems; this env poses "
                             f"num_problems={self.num_problems} per reset")
        self._include_answer = bool(options.get("include_answer", self.math_env.include_answer))
        self.problems, self._prompts = [], []
        for p in range(self.num_problems):
            sub_options = {**options, "problem": given[p]} if given is not None else options
            prompt, _ = self.env.reset(seed=seed if p == 0 else None, options=sub_options)
            self.problems.append(self.math_env.problem)
            self._prompts.append(prompt)
        self._ready, self._from_source = True, given is None
        obs = tuple(prompt for prompt in self._prompts for _ in range(self.group_size))
        return obs, _vector_info(group_id=self.group_id, **self._problem_info())

    def _problem_info(self) -> dict[str, list]:
        per_env = [p for p in self.problems for _ in range(self.group_size)]
        info: dict[str, list] = {"id": [p.id for p in per_env], "problem": per_env}
        if self._include_answer:
            info["answer"] = [p.answer for p in per_env]
        return info

    def step(self, actions: Sequence[str], lengths: Sequence[int] | None = None):
        """Score ``P * G`` responses in one call; returns ``(obs, reward, terminated,
        truncated, info)`` with ``reward`` of shape ``(P*G,)`` (reshape to ``(P, G)``)."""
        if not self._ready:
            raise RuntimeError("call reset() before step(); every step ends all episodes, so "
                               "each step needs a fresh reset()")
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"got {len(actions)} responses; expected num_problems * group_size "
                             f"= {self.num_problems} * {self.group_size} = {self.num_envs}")
        golds = [p.answer for p in self.problems for _ in range(self.group_size)]
        scores, rewards = score_responses(actions, golds, self.math_env.reward_spec,
                                          lengths=lengths, tokenizer=self.math_env.tokenizer,
                                          workers=self.workers)
        self._ready = False
        if self._from_source:
            correct = np.asarray(scores.correct, dtype=bool)
            self.math_env.observe(self.problems, correct.reshape(self.num_problems, -1))
        info = _vector_info(correct=scores.correct, penalty=scores.penalty,
                            timed_out=scores.timed_out, group_id=self.group_id,
                            extracted=list(scores.extracted), path=list(scores.paths),
                            rule=list(scores.rules), **self._problem_info())
        done = np.ones(self.num_envs, dtype=bool)
        return ("",) * self.num_envs, rewards, done, ~done, info

    def curriculum_stats(self) -> dict[str, float]:
        """The env's ``curriculum/...`` metrics (see `MathEnv.curriculum_stats`)."""
        return self.math_env.curriculum_stats()

    def state_dict(self) -> dict[str, Any]:
        """The problem-stream position (see `MathEnv.state_dict`); the next ``reset()`` after
        `load_state_dict` poses the problems the saved env would have posed."""
        return self.math_env.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.math_env.load_state_dict(state)
        self._ready = False

    def close_extras(self, **kwargs: Any) -> None:
        self.env.close()

    def __repr__(self) -> str:
        return (f"GroupVectorEnv({self.math_env!r}, num_problems={self.num_problems}, "
                f"group_size={self.group_size})")


def make_group_env(env_id: str | gym.Env | Callable[[], gym.Env], num_problems: int,
                   group_size: int, *, workers: int | None = None,
                   **env_kwargs: Any) -> GroupVectorEnv:
    """A `GroupVectorEnv` over a registered id (with `env_kwargs`), an env, or a factory."""
    if isinstance(env_id, str):
        env = gym.make(env_id, **env_kwargs)
    elif env_kwargs:
        raise ValueError("env_kwargs only apply to a registered env id, not an env or factory")
    else:
        env = env_id if isinstance(env_id, gym.Env) else env_id()
    return GroupVectorEnv(env, num_problems, group_size, workers=workers)
