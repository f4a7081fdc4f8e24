"""make_group_env: P x G batches, one score_batch call per step, info arrays."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import verimath.envs.scoring as scoring
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.envs import MathEnv, Problem, Response, generate, make_group_env


def answers(envs, wrong_every=0):
    out = []
    for i, problem in enumerate(p for p in envs.problems for _ in range(envs.group_size)):
        wrong = wrong_every and i % wrong_every == 0
        out.append(f"Answer: {problem.answer}{'1' if wrong else ''}")
    return out


@settings(max_examples=15, deadline=None)
@given(num_problems=st.integers(1, 5), group_size=st.integers(1, 6), seed=st.integers(0, 1000))
def test_groups_share_one_problem_per_block(num_problems, group_size, seed):
    envs = make_group_env("verimath/Arithmetic-v0", num_problems, group_size, level=3)
    obs, info = envs.reset(seed=seed)
    assert len(obs) == envs.num_envs == num_problems * group_size
    assert obs in envs.observation_space
    assert [p.id for p in envs.problems] == [f"gen/Arithmetic/L3/{seed}/{k}"
                                             for k in range(num_problems)]
    blocks = np.array(obs, dtype=object).reshape(num_problems, group_size)
    assert all(len(set(row)) == 1 for row in blocks)
    assert np.array_equal(info["group_id"], np.repeat(np.arange(num_problems), group_size))
    assert list(info["id"]) == [p.id for p in envs.problems for _ in range(group_size)]
    assert info["_id"].all() and "answer" not in info


def test_next_reset_continues_the_stream():
    envs = make_group_env("verimath/Linear-v0", num_problems=3, group_size=2)
    envs.reset(seed=4)
    envs.reset()
    assert [p.id for p in envs.problems] == [f"gen/Linear/L1/4/{k}" for k in (3, 4, 5)]


def test_step_scores_the_whole_batch_in_one_call(monkeypatch):
    calls = []
    real = scoring.score_batch

    def counting(responses, golds, **kwargs):
        calls.append(len(responses))
        return real(responses, golds, **kwargs)

    monkeypatch.setattr(scoring, "score_batch", counting)
    envs = make_group_env("verimath/Modular-v0", num_problems=4, group_size=3, level=2)
    envs.reset(seed=0)
    obs, reward, terminated, truncated, info = envs.step(answers(envs, wrong_every=2))
    assert calls == [12]
    expected = np.where(np.arange(12) % 2 == 0, -1.0, 1.0)
    assert np.array_equal(reward, expected) and reward.dtype == np.float64
    assert np.array_equal(info["correct"], expected > 0)
    assert terminated.all() and not truncated.any() and obs == ("",) * 12
    assert info["penalty"].shape == info["timed_out"].shape == (12,)
    assert list(info["problem"][::3]) == envs.problems
    assert info["extracted"][1] == envs.problems[0].answer


def test_step_info_names_each_answer_path_and_deciding_rule():
    envs = make_group_env("verimath/Arithmetic-v0", 1, 3, style="flexible")
    envs.reset(seed=0)
    gold = envs.problems[0].answer
    *_, info = envs.step([f"Answer: {gold}", f"so \\boxed{{{gold}}}", "I cannot say."])
    assert list(info["path"]) == ["answer_line", "box", "none"]
    assert list(info["rule"]) == ["fast", "fast", "no_answer"]
    assert info["_path"].all() and info["_rule"].all()


def test_lengths_shape_rewards_and_responses_carry_counts():
    envs = make_group_env("verimath/Arithmetic-v0", 1, 4, max_length=10, cache_length=4)
    envs.reset(seed=0)
    gold = envs.problems[0].answer
    _, reward, *_, info = envs.step([f"Answer: {gold}"] * 4, lengths=[0, 6, 8, 11])
    assert np.allclose(info["penalty"], [0.0, 0.0, -0.5, -1.0])
    assert np.allclose(reward, 1.0 + info["penalty"])
    envs.reset(seed=0)
    _, reward, *_ = envs.step([Response(f"Answer: {gold}", num_tokens=n) for n in (0, 6, 8, 11)])
    assert np.allclose(reward, [1.0, 1.0, 0.5, 0.0])


def test_step_errors_are_explicit():
    envs = make_group_env("verimath/Arithmetic-v0", 2, 2)
    with pytest.raises(RuntimeError, match="reset"):
        envs.step(["Answer: 1"] * 4)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="expected num_problems \\* group_size = 2 \\* 2 = 4"):
        envs.step(["Answer: 1"] * 3)
    envs.step(["Answer: 1"] * 4)
    with pytest.raises(RuntimeError, match="fresh reset"):
        envs.step(["Answer: 1"] * 4)
    with pytest.raises(ValueError, match="lengths has shape"):
        limited = make_group_env("verimath/Arithmetic-v0", 1, 2, max_length=9, cache_length=3)
        limited.reset(seed=0)
        limited.step(["a", "b"], lengths=[1, 2, 3])


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (("verimath/Arithmetic-v0", 0, 4), {}, "num_problems"),
        (("verimath/Arithmetic-v0", 2, 1.5), {}, "group_size"),
        (("verimath/Arithmetic-v0", 2, 2), {"max_attempts": 2}, "single-turn"),
    ],
)
def test_bad_group_arguments(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_group_env(*args, **kwargs)


def test_non_math_env_is_refused_with_guidance():
    with pytest.raises(TypeError, match="unwrapped is a MathEnv"):
        make_group_env(lambda: gym.make("CartPole-v1"), 1, 2)


def test_own_generator_env_and_given_problems():
    def doubling(rng, level):
        n = int(rng.integers(1, 10 * level))
        return Problem(id=f"d/{n}", prompt=f"Double {n}.", answer=str(2 * n), source="double")

    envs = make_group_env(lambda: MathEnv(generator=doubling, level=2, template="raw"), 3, 2)
    obs, _ = envs.reset(seed=1)
    assert all(o.startswith("Double ") for o in obs)
    _, reward, *_ = envs.step(answers(envs))
    assert reward.tolist() == [1.0] * 6
    fixed = [generate("Quadratic", 0, i, 2) for i in range(3)]
    obs, _ = envs.reset(options={"problems": fixed})
    assert envs.problems == fixed and obs[0] == fixed[0].prompt
    with pytest.raises(ValueError, match="has 1 problems"):
        envs.reset(options={"problems": fixed[:1]})


def test_close_is_idempotent():
    envs = make_group_env("verimath/Arithmetic-v0", 1, 1)
    envs.close()
    envs.close()
    assert envs.closed


def test_include_answer_option_adds_gold_answers():
    envs = make_group_env("verimath/Percent-v0", 2, 2)
    _, info = envs.reset(seed=0, options={"include_answer": True})
    assert list(info["answer"]) == [p.answer for p in envs.problems for _ in range(2)]
    _, info = envs.reset()
    assert "answer" not in info


def next_ids(envs, rounds=3):
    out = []
    for _ in range(rounds):
        envs.reset()
        out.append([p.id for p in envs.problems])
    return out


@pytest.mark.parametrize("kind", ["family", "problems"])
def test_state_dict_resumes_the_problem_stream(kind):
    source = {"family": "Linear"} if kind == "family" else \
        {"problems": [generate("Percent", 0, i, 1) for i in range(5)]}
    run = make_group_env(lambda: MathEnv(**source), 2, 3)
    run.reset(seed=8)
    run.reset()
    saved = run.state_dict()
    expected = next_ids(run)  # crosses an epoch boundary for the 5-problem list
    resumed = make_group_env(lambda: MathEnv(**source), 2, 3)
    resumed.load_state_dict(saved)
    assert next_ids(resumed) == expected


def test_the_group_env_grades_by_the_conventions_of_its_env():
    named = [Problem(id="named/0", prompt="Solve 2y = 4.", answer="y = 2", source="named")]
    responses = ["Answer: 2", "Answer: y = 2"]
    for conventions, correct in (("default", [True, True]), ("strict", [False, True])):
        envs = make_group_env("verimath/Dataset-v0", num_problems=1, group_size=2,
                              problems=named, conventions=conventions)
        envs.reset(seed=0)
        _, reward, _, _, info = envs.step(responses)
        assert list(info["correct"]) == correct, conventions
        assert list(reward) == [1.0 if c else -1.0 for c in correct]
