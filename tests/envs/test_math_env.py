"""MathEnv: the reset/step contract, options, retry mode, overlong shaping, dataset sources."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.envs import MathEnv, Problem, Response, generate, write_problems
from verimath.envs.math_env import feedback_text

TOY = [Problem(id=f"toy/{i}", prompt=f"What is {i} + {i}?", answer=str(2 * i), source="toy")
       for i in range(6)]


def test_reset_returns_prompt_and_info_without_answer():
    env = gym.make("verimath/Arithmetic-v0", level=1)
    obs, info = env.reset(seed=0)
    problem = env.unwrapped.problem
    assert problem == generate("Arithmetic", 0, 0, 1)
    assert problem.prompt in obs and "Answer:" in obs
    assert info == {"id": problem.id, "source": "gen/Arithmetic", "attempt": 0,
                    "max_attempts": 1, "level": 1}


def test_correct_and_wrong_single_turn_steps():
    env = MathEnv(family="Linear", level=2)
    env.reset(seed=1)
    gold = env.problem.answer
    obs, reward, terminated, truncated, info = env.step(f"x = {gold}\nAnswer: {gold}")
    assert (obs, reward, terminated, truncated) == ("", 1.0, True, False)
    assert info["correct"] is True and info["extracted"] == gold and info["penalty"] == 0.0
    assert info["timed_out"] is False and info["attempt"] == 1
    env.reset()
    _, reward, terminated, _, info = env.step("I am not sure.")
    assert (reward, terminated, info["correct"], info["extracted"]) == (-1.0, True, False, None)


def test_episodes_walk_the_seeded_stream():
    env = MathEnv(family="GcdLcm", level=3)
    env.reset(seed=5)
    ids = [env.problem.id] + [env.reset()[1]["id"] for _ in range(3)]
    assert ids == [f"gen/GcdLcm/L3/5/{i}" for i in range(4)]


def test_unseeded_first_reset_uses_env_rng_not_global():
    state = np.random.get_state()[1].copy()
    # A family with millions of distinct problems, so two fresh seeds clash with negligible odds.
    a, b = MathEnv(family="LinearSystem", level=5), MathEnv(family="LinearSystem", level=5)
    prompts = {a.reset()[0], b.reset()[0]}
    assert len(prompts) == 2 and np.array_equal(np.random.get_state()[1], state)


def test_step_before_reset_and_after_end_raise():
    env = MathEnv(problems=TOY)
    with pytest.raises(RuntimeError, match="before reset"):
        env.step("Answer: 0")
    env.reset(seed=0)
    env.step("Answer: 0")
    with pytest.raises(RuntimeError, match="call env.reset"):
        env.step("Answer: 0")


def test_non_text_action_is_rejected():
    env = MathEnv(problems=TOY)
    env.reset(seed=0)
    with pytest.raises(TypeError, match="response text"):
        env.step(42)


def test_reset_options_pose_a_problem_and_reveal_answer():
    env = MathEnv(family="Arithmetic")
    obs, info = env.reset(options={"problem": TOY[3], "include_answer": True})
    assert TOY[3].prompt in obs and info["answer"] == "6" and env.problem is TOY[3]
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"problme": TOY[0]})
    assert "answer" in MathEnv(problems=TOY, include_answer=True).reset(seed=0)[1]


def test_retry_mode_feedback_and_rewards():
    env = MathEnv(problems=TOY[:1], max_attempts=3)
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("Answer: 5")
    assert obs == feedback_text("5") == "Your answer 5 is not correct. Try again."
    assert (reward, terminated, info["attempt"]) == (0.0, False, 1)
    obs, reward, terminated, _, info = env.step("no idea")
    assert obs.startswith("No final answer") and not terminated
    obs, reward, terminated, _, info = env.step("Answer: 1")
    assert (obs, reward, terminated, info["attempt"]) == ("", -1.0, True, 3)
    env.reset(seed=0)
    env.step("Answer: 7")
    _, reward, terminated, _, info = env.step("Answer: 0")
    assert (reward, terminated, info["correct"], info["attempt"]) == (1.0, True, True, 2)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 300), correct=st.booleans())
def test_overlong_penalty_is_added_to_the_reward(n, correct):
    env = MathEnv(problems=TOY[:1], max_length=100, cache_length=40, correct_reward=2.0,
                  wrong_reward=-0.5)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(Response("Answer: 0" if correct else "Answer: 9",
                                              num_tokens=n))
    expected_penalty = 0.0 if n <= 60 else -1.0 if n > 100 else (60 - n) / 40
    assert info["penalty"] == pytest.approx(expected_penalty)
    assert reward == pytest.approx((2.0 if correct else -0.5) + expected_penalty)


def test_token_count_from_tokenizer_or_clear_error():
    class WhitespaceTokenizer:
        def encode(self, text, add_special_tokens=True):
            return text.split()

    env = MathEnv(problems=TOY[:1], max_length=4, cache_length=2,
                  tokenizer=WhitespaceTokenizer())
    env.reset(seed=0)
    _, reward, *_ = env.step("so it is zero Answer: 0")  # 5 tokens > max_length 4
    assert reward == pytest.approx(0.0)
    bare = MathEnv(problems=TOY[:1], max_length=4, cache_length=2)
    bare.reset(seed=0)
    with pytest.raises(ValueError, match="no token count"):
        bare.step("Answer: 0")
    counting = MathEnv(problems=TOY[:1], max_length=4, cache_length=2, tokenizer=len)
    counting.reset(seed=0)
    assert counting.step("Answer: 0")[4]["penalty"] == -1.0  # 9 characters


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "exactly one problem source"),
        ({"family": "Linear", "problems": TOY}, "exactly one problem source"),
        ({"family": "Linear", "level": 7}, "level"),
        ({"family": "Algebra"}, "unknown family"),
        ({"family": "Linear", "weights": {"Linear": 1}}, "weights= only applies"),
        ({"problems": []}, "no problems"),
        ({"problems": TOY, "level": 2}, "level= applies to generated problems"),
        ({"path": "problems.csv"}, "jsonl or .parquet"),
        ({"family": "Linear", "template": "chatml"}, "unknown template"),
        ({"family": "Linear", "style": "latex"}, "style"),
        ({"family": "Linear", "max_length": 100}, "go together"),
        ({"family": "Linear", "max_length": 10, "cache_length": 20}, "cache_length <= max_length"),
        ({"family": "Linear", "correct_reward": -1.0}, "must exceed wrong_reward"),
        ({"family": "Linear", "max_attempts": 0}, "max_attempts"),
        ({"family": "Linear", "render_mode": "human"}, "render_mode"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MathEnv(**kwargs)


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_dataset_env_reads_prepared_files(tmp_path, suffix):
    path = tmp_path / f"problems{suffix}"
    write_problems(TOY, path)
    env = gym.make("verimath/Dataset-v0", path=str(path), shuffle=True)
    seen = [env.reset(seed=0)[1]["id"]] + [env.reset()[1]["id"] for _ in range(5)]
    assert sorted(seen) == sorted(p.id for p in TOY)  # one epoch visits each problem once
    again = [env.reset(seed=0)[1]["id"]] + [env.reset()[1]["id"] for _ in range(5)]
    assert seen == again
    ordered = MathEnv(path=path, shuffle=False)
    assert [ordered.reset()[1]["id"] for _ in range(8)] == [p.id for p in TOY + TOY[:2]]


def test_dataset_errors_name_the_file_and_row(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(TOY[0].to_dict()) + "\n" + json.dumps({"id": "x"}) + "\n")
    env = MathEnv(path=path)  # no I/O in the constructor ...
    with pytest.raises(ValueError, match=r"bad.jsonl:2: missing field 'prompt'"):
        env.reset(seed=0)  # ... the file is read on first reset


def test_a_missing_dataset_file_fails_at_make_naming_the_path(tmp_path):
    """The constructor reads nothing, but it checks that the file is there (a stat), so a
    mistyped path fails in gym.make, not at the first reset."""
    (tmp_path / "folder.jsonl").mkdir()
    for path, what in ((tmp_path / "nope.jsonl", "no such file"),
                       (tmp_path / "folder.jsonl", "a directory")):
        with pytest.raises(FileNotFoundError, match=f"{path.name}.*{what}.*verimath prep"):
            gym.make("verimath/Dataset-v0", path=str(path))


def test_dataset_ids_must_be_unique(tmp_path):
    path = tmp_path / "twice.jsonl"
    clash = Problem(id=TOY[0].id, prompt="another prompt", answer="7", source="other")
    write_problems([TOY[0], TOY[1], clash], path)
    with pytest.raises(ValueError, match=r"twice.jsonl: problems 0 and 2 .* share the id"):
        MathEnv(path=path).reset(seed=0)
    with pytest.raises(ValueError, match="share the id"):
        MathEnv(problems=[TOY[0], TOY[0]])


def test_render_ansi_and_close_twice():
    env = MathEnv(problems=TOY[:1], render_mode="ansi")
    env.reset(seed=0)
    env.step("Answer: 0")
    text = env.render()
    assert TOY[0].prompt in text and "Answer: 0" in text and "correct" in text
    env.close()
    env.close()
    assert MathEnv(problems=TOY).render() is None


def test_real_math500_texts_fit_the_spaces(shared_data):
    rows = [json.loads(line) for line in
            (shared_data / "math500" / "test.jsonl").read_text().splitlines()[:40]]
    problems = [Problem(id=r["unique_id"], prompt=r["problem"], answer=r["answer"],
                        source="math500") for r in rows]
    env = MathEnv(problems=problems, template="boxed", style="boxed", mode="string")
    for _ in range(len(problems)):
        obs, _ = env.reset()
        assert obs in env.observation_space and "\\boxed{}" in obs
        _, reward, *_ = env.step(f"The answer is $\\boxed{{{env.problem.answer}}}$.")
        assert reward == 1.0, env.problem


def test_async_vector_env_carries_unicode_prompts_without_shared_memory():
    problems = [Problem(id="u", prompt="Combien font ½ + ¼ ? 数学 \\frac{3}{4} 🙂", answer="3/4",
                        source="u")]
    with pytest.raises(ValueError, match="shared_memory=False"):
        gym.make_vec("verimath/Dataset-v0", num_envs=1, vectorization_mode="async",
                     problems=problems)
    envs = gym.make_vec("verimath/Dataset-v0", num_envs=2, vectorization_mode="async",
                        vector_kwargs={"shared_memory": False}, problems=problems,
                        template="raw")
    try:
        obs, _ = envs.reset(seed=0)
        assert obs == (problems[0].prompt,) * 2
        _, reward, *_ = envs.step(["Answer: 3/4", "Answer: 1/2"])
        assert reward.tolist() == [1.0, -1.0]
    finally:
        envs.close()


def test_long_wrong_answers_are_clipped_in_feedback():
    assert len(feedback_text("9" * 5000)) < 260


# A pair on which the default and strict grading conventions differ (docs/conventions.md):
# a bare value against a gold ``name = value``, and a decimal against an exact gold.
NAMED = [Problem(id="named/0", prompt="Solve 2y = 4.", answer="y = 2", source="named"),
         Problem(id="named/1", prompt="What is 1/7?", answer="\\frac{1}{7}", source="named")]


@pytest.mark.parametrize("conventions, reward", [(None, 1.0), ("default", 1.0), ("strict", -1.0)])
def test_the_env_grades_by_its_conventions(conventions, reward):
    kwargs = {} if conventions is None else {"conventions": conventions}
    env = gym.make("verimath/Dataset-v0", problems=NAMED, shuffle=False, **kwargs)
    for answer in ("2", "0.142857"):
        env.reset()
        _, got, _, _, info = env.step(f"Answer: {answer}")
        assert (got, info["correct"]) == (reward, reward > 0), answer


def test_the_env_takes_conventions_as_settings_and_refuses_a_bad_value():
    from verimath.rewards import STRICT_CONVENTIONS, Conventions

    assert MathEnv(problems=NAMED, conventions="strict").reward_spec.conventions \
        == STRICT_CONVENTIONS
    assert MathEnv(problems=NAMED).reward_spec.conventions == Conventions()
    env = MathEnv(problems=NAMED, shuffle=False, conventions={"decimal_digits": None})
    env.reset()
    assert env.step("Answer: 2")[1] == 1.0  # only the decimal setting changed
    env.reset()
    assert env.step("Answer: 0.142857")[1] == -1.0
    with pytest.raises(ValueError, match="conventions must be"):
        gym.make("verimath/Arithmetic-v0", conventions="lenient")
    with pytest.raises(ValueError, match="unknown conventions"):
        MathEnv(problems=NAMED, conventions={"decimals": 4})
