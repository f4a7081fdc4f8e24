"""`check_math_env`: small named checks of the math-env contract, with messages that say what
the implementer probably got wrong. Run it on your own env (a `MathEnv` subclass, a custom
generator or dataset) next to Gymnasium's ``check_env``::

    from verimath.envs import MathEnv, check_math_env
    check_math_env(MathEnv(generator=my_generator, level=2))   # -> list of passed checks

Checks (in order; ``close_twice`` last because it closes the env):
    text_spaces, step_before_reset_raises, global_rng_untouched, seeded_reset_is_deterministic,
    seeds_differ, obs_in_space, info_hides_answer, gold_scores_correct, wrong_scores_wrong,
    step_after_end_raises, close_twice.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import gymnasium as gym
import numpy as np
from verimath.envs.math_env import MathEnv
from verimath.envs.scoring import Response


class MathEnvCheckError(AssertionError):
    """One or more checks failed; the message lists each failed check and its hint."""


def _math_env(env: gym.Env) -> MathEnv:
    if not isinstance(env.unwrapped, MathEnv):
        raise TypeError(f"check_math_env needs a MathEnv (or a wrapper of one), got "
                        f"{type(env.unwrapped).__name__}")
    return env.unwrapped


def _respond(env: MathEnv, answer: str) -> Response:
    """A response that states `answer` in the env's answer style, with a zero token count
    (so the overlong penalty is 0 whatever the settings)."""
    style = env.reward_spec.style
    text = f"\\boxed{{{answer}}}" if style == "boxed" else f"Answer: {answer}"
    return Response(text, num_tokens=0)


def check_text_spaces(env: gym.Env) -> None:
    sample = "½ of $\\frac{3}{4}$ is 数学 — ok?\n"
    for name in ("observation_space", "action_space"):
        space = getattr(env, name)
        assert isinstance(space, gym.spaces.Text), \
            f"{name} is {space!r}; math envs exchange text, so use a gymnasium.spaces.Text"
        assert space.contains(sample) and space.contains(""), (
            f"{name} rejects unicode/LaTeX or the empty string; gymnasium's Text admits only its "
            "charset: use verimath.envs.spaces.UnicodeText"
        )


def check_step_before_reset_raises(env: gym.Env) -> None:
    fresh = _math_env(env)
    if fresh.problem is not None:
        return  # already reset: nothing to check on this instance
    try:
        fresh.step("Answer: 0")
    except RuntimeError:
        return
    raise AssertionError("step() before reset() did not raise RuntimeError; guard step() on "
                         "`self.problem is None` with a message that says to call reset()")


def check_global_rng_untouched(env: gym.Env) -> None:
    np_state, py_state = np.random.get_state()[1].copy(), random.getstate()
    env.reset(seed=7)
    env.step(_respond(_math_env(env), "0"))
    assert np.array_equal(np.random.get_state()[1], np_state) and random.getstate() == py_state, \
        "reset/step changed the global RNG (np.random / random); draw from self.np_random only"


def check_seeded_reset_is_deterministic(env: gym.Env) -> None:
    first = [env.reset(seed=123)[0], env.reset()[0]]
    second = [env.reset(seed=123)[0], env.reset()[0]]
    assert first == second, (
        "reset(seed=123) then reset() gave different prompts on two runs; call "
        "super().reset(seed=seed) first and draw problems only from self.np_random"
    )


def check_seeds_differ(env: gym.Env) -> None:
    menv = _math_env(env)
    if not menv.source.is_random:
        return  # an unshuffled list serves the same order for every seed, by design
    a_text, a_info = zip(*(env.reset(seed=s) for s in range(1, 4)))
    b_text, b_info = zip(*(env.reset(seed=s) for s in range(1001, 1004)))
    a, b = [i["id"] for i in a_info], [i["id"] for i in b_info]
    assert a != b and a_text != b_text, (
        "resets with seeds 1..3 and 1001..1003 posed the same problems; the seed is not "
        "reaching the problem source (derive each stream from the seed, not a constant)"
    )


def check_obs_in_space(env: gym.Env) -> None:
    obs, info = env.reset(seed=3)
    assert isinstance(obs, str) and obs and env.observation_space.contains(obs), \
        f"reset() returned {obs!r:.60}, not a non-empty str in the observation space"
    obs, *_ = env.step(_respond(_math_env(env), "0"))
    assert isinstance(obs, str) and env.observation_space.contains(obs), \
        f"step() returned observation {obs!r:.60}, not a str in the observation space"


def check_info_hides_answer(env: gym.Env) -> None:
    _, info = env.reset(seed=5)
    for key in ("id", "source"):
        assert key in info, f"reset() info lacks {key!r}; put the problem's {key} in info"
    if not _math_env(env).include_answer:
        assert "answer" not in info, ("reset() info holds the gold answer; only put it there "
                                      "when include_answer is asked for")
        shown = env.reset(seed=5, options={"include_answer": True})[1]
        assert shown.get("answer") == _math_env(env).problem.answer, \
            "reset(options={'include_answer': True}) did not put the gold answer in info"


def check_gold_scores_correct(env: gym.Env) -> None:
    menv = _math_env(env)
    env.reset(seed=11)
    gold = menv.problem.answer
    _, reward, terminated, truncated, info = env.step(_respond(menv, gold))
    want = menv.reward_spec.correct_reward
    assert info.get("correct") is True and reward == want, (
        f"the gold answer {gold!r} scored reward {reward} (correct={info.get('correct')}), "
        f"expected {want}; is the problem's answer in a form verimath.rewards can verify, and "
        "does step() score against self.problem.answer?"
    )
    assert terminated and not truncated, "a correct answer must end the episode (terminated)"


def check_wrong_scores_wrong(env: gym.Env) -> None:
    menv = _math_env(env)
    env.reset(seed=13)
    obs, reward, terminated, _, info = env.step(_respond(menv, f"{menv.problem.answer} + 1"))
    assert info.get("correct") is False, \
        "a wrong answer (gold + 1) was judged correct; check the equivalence mode and gold"
    if menv.max_attempts == 1:
        want = menv.reward_spec.wrong_reward
        assert reward == want and terminated, \
            f"a wrong single-turn answer gave reward {reward}, terminated={terminated}; " \
            f"expected {want}, True"
    else:
        assert not terminated and reward == 0.0 and obs, \
            "a first wrong attempt in retry mode must give feedback, reward 0, terminated=False"


def check_step_after_end_raises(env: gym.Env) -> None:
    menv = _math_env(env)
    env.reset(seed=17)
    env.step(_respond(menv, menv.problem.answer))
    try:
        menv.step("Answer: 0")
    except RuntimeError:
        return
    raise AssertionError("step() after the episode terminated did not raise RuntimeError; "
                         "the caller must reset() first")


def check_close_twice(env: gym.Env) -> None:
    env.close()
    env.close()


CHECKS: dict[str, Callable[[gym.Env], None]] = {
    "text_spaces": check_text_spaces,
    "step_before_reset_raises": check_step_before_reset_raises,
    "global_rng_untouched": check_global_rng_untouched,
    "seeded_reset_is_deterministic": check_seeded_reset_is_deterministic,
    "seeds_differ": check_seeds_differ,
    "obs_in_space": check_obs_in_space,
    "info_hides_answer": check_info_hides_answer,
    "gold_scores_correct": check_gold_scores_correct,
    "wrong_scores_wrong": check_wrong_scores_wrong,
    "step_after_end_raises": check_step_after_end_raises,
    "close_twice": check_close_twice,  # last: it closes the env
}


def check_math_env(env: gym.Env, *, skip: tuple[str, ...] = ()) -> list[str]:
    """Run every check in `CHECKS` (except `skip`); returns the names that ran and passed.

    Raises:
        MathEnvCheckError: listing every failed check with its message.
    """
    unknown = sorted(set(skip) - set(CHECKS))
    if unknown:
        raise ValueError(f"unknown checks in skip: {unknown}; known: {list(CHECKS)}")
    _math_env(env)
    passed, failures = [], []
    for name, check in CHECKS.items():
        if name in skip:
            continue
        try:
            check(env)
        except AssertionError as exc:
            failures.append(f"{name}: {exc}")
        except Exception as exc:  # noqa: BLE001 - report any crash as a failed check
            failures.append(f"{name}: raised {type(exc).__name__}: {exc}")
        else:
            passed.append(name)
    if failures:
        raise MathEnvCheckError("check_math_env failed:\n  " + "\n  ".join(failures))
    return passed


__all__ = ["CHECKS", "MathEnvCheckError", "check_math_env"]
