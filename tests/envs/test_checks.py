"""check_math_env and Gymnasium's check_env on every registered id; broken envs must fail."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from verimath.envs import ENV_IDS, MathEnv, Problem, generate, write_problems
from verimath.envs.checks import CHECKS, MathEnvCheckError, check_math_env

FAMILY_IDS = [env_id for env_id in ENV_IDS if env_id != "verimath/Dataset-v0"]


@pytest.fixture(scope="module")
def dataset_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "problems.jsonl"
    write_problems([generate("Mixed", 0, i, 3) for i in range(30)], path)
    return str(path)


def env_kwargs(env_id, dataset_path, level):
    return {"path": dataset_path} if env_id.endswith("Dataset-v0") else {"level": level}


def test_every_family_is_registered():
    assert len(FAMILY_IDS) == 14 and "verimath/Dataset-v0" in ENV_IDS
    assert all(env_id in gym.registry for env_id in ENV_IDS)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_math_env_passes(env_id, dataset_path):
    for level in (1, 5):
        passed = check_math_env(gym.make(env_id, **env_kwargs(env_id, dataset_path, level)))
        assert passed == list(CHECKS)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gymnasium_check_env_passes(env_id, dataset_path):
    env = gym.make(env_id, **env_kwargs(env_id, dataset_path, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning is a failure too
        check_env(env.unwrapped)


@pytest.mark.parametrize("env_id", ["verimath/Fractions-v0", "verimath/Dataset-v0"])
def test_make_vec_works(env_id, dataset_path):
    envs = gym.make_vec(env_id, num_envs=3, **env_kwargs(env_id, dataset_path, 2))
    obs, _ = envs.reset(seed=0)
    assert len(obs) == 3 and all(isinstance(o, str) for o in obs)
    _, reward, terminated, _, info = envs.step(["Answer: 0"] * 3)
    assert reward.shape == (3,) and terminated.all() and info["correct"].dtype == bool
    envs.close()


def test_retry_mode_and_shaped_envs_pass():
    assert check_math_env(MathEnv(family="Linear", max_attempts=3))
    assert check_math_env(MathEnv(family="Linear", max_length=50, cache_length=10,
                                  template="boxed", style="boxed"))
    assert check_math_env(MathEnv(problems=[generate("Linear", 0, i, 1) for i in range(3)],
                                  shuffle=False))


class GlobalRngEnv(MathEnv):
    def reset(self, *, seed=None, options=None):
        np.random.random()  # the mistake: touching the global RNG
        return super().reset(seed=seed, options=options)


class LeakyEnv(MathEnv):
    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return obs, {**info, "answer": self.problem.answer}


class ConstantEnv(MathEnv):
    def reset(self, *, seed=None, options=None):
        return super().reset(seed=0, options=options)


def unverifiable_gold(rng, level):
    n = int(rng.integers(1000))  # the mistake: a gold answer spread over two lines
    return Problem(id=f"bad/{n}", prompt=f"What is {n} + 1?", answer=f"{n + 1}\n(integer)",
                   source="bad")


@pytest.mark.parametrize(
    ("env", "failed"),
    [
        (GlobalRngEnv(family="Linear"), "global_rng_untouched"),
        (LeakyEnv(family="Linear"), "info_hides_answer"),
        (ConstantEnv(family="Linear"), "seeds_differ"),
        (MathEnv(generator=unverifiable_gold), "gold_scores_correct"),
    ],
)
def test_broken_envs_fail_the_named_check_with_a_hint(env, failed):
    with pytest.raises(MathEnvCheckError, match=failed) as excinfo:
        check_math_env(env)
    hint = str(excinfo.value).split(f"{failed}: ", 1)[1].split("\n")[0]
    assert len(hint) > 40  # a sentence on what is probably wrong, not just the name


def test_skip_and_unknown_names():
    assert "close_twice" not in check_math_env(MathEnv(family="Percent"), skip=("close_twice",))
    with pytest.raises(ValueError, match="unknown checks"):
        check_math_env(MathEnv(family="Percent"), skip=("speed",))
    with pytest.raises(TypeError, match="needs a MathEnv"):
        check_math_env(gym.make("CartPole-v1"))
