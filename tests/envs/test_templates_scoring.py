"""Prompt templates, the Response action type, reward shaping and token counting."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import model_text
from verimath.envs import Problem, Response, RewardSpec, format_prompt
from verimath.envs.scoring import count_tokens, resolve_lengths, score_responses, shaped_rewards
from verimath.envs.templates import DAPO_TEMPLATE

P = Problem(id="t/1", prompt="What is $\\frac{1}{2} + {x}$?", answer="1", source="t")


def test_dapo_template_is_the_papers_text():
    text = format_prompt(P, "dapo")
    assert text.startswith("Solve the following math problem step by step. The last line of "
                           "your response should be of the form Answer: $Answer (without "
                           "quotes) where $Answer is the answer to the problem.\n\n")
    assert text.endswith(P.prompt + "\n\nRemember to put your answer on its own line after "
                         "\"Answer:\".")


def test_boxed_raw_and_custom_templates_keep_latex_braces():
    assert format_prompt(P, "raw") == P.prompt
    assert format_prompt(P, "boxed").startswith(P.prompt) and "\\boxed{}" in \
        format_prompt(P, "boxed")
    assert format_prompt(P, "Q: {prompt}\nA:") == f"Q: {P.prompt}\nA:"
    assert format_prompt("7 + 5?", "Q: {prompt} = ") == "Q: 7 + 5? = "


@settings(max_examples=50, deadline=None)
@given(text=model_text)
def test_format_prompt_embeds_any_text_verbatim(text):
    assert format_prompt(text, "raw") == text
    assert DAPO_TEMPLATE.split("{prompt}")[0] + text in format_prompt(text, "dapo")


@pytest.mark.parametrize("template", ["chatml", "", "{question}"])
def test_unknown_templates_are_rejected(template):
    with pytest.raises(ValueError, match="unknown template"):
        format_prompt(P, template)


def test_response_is_a_str_with_a_token_count():
    r = Response("Answer: 1", num_tokens=4)
    assert isinstance(r, str) and r == "Answer: 1" and r.num_tokens == 4
    again = pickle.loads(pickle.dumps(r))
    assert again == r and again.num_tokens == 4
    assert Response("x", num_tokens=np.int64(3)).num_tokens == 3
    for bad in (-1, 2.5, "3", True):  # no silent truncation or parsing of a token count
        with pytest.raises(ValueError, match="num_tokens"):
            Response("x", num_tokens=bad)


@settings(max_examples=100, deadline=None)
@given(correct=st.lists(st.booleans(), min_size=1, max_size=20),
       hi=st.floats(-5, 5), gap=st.floats(0.01, 5), data=st.data())
def test_shaped_rewards_formula(correct, hi, gap, data):
    penalty = np.array(data.draw(st.lists(st.floats(-1, 0), min_size=len(correct),
                                          max_size=len(correct))))
    spec = RewardSpec(correct_reward=hi, wrong_reward=hi - gap)
    out = shaped_rewards(np.array(correct), penalty, spec)
    for c, p, r in zip(correct, penalty, out):
        assert r == pytest.approx((hi if c else hi - gap) + p)
    # a correct answer always beats a wrong one of the same length
    assert np.all(shaped_rewards(np.ones(len(correct), bool), penalty, spec) >
                  shaped_rewards(np.zeros(len(correct), bool), penalty, spec))


def test_count_tokens_accepts_hf_style_plain_encode_and_callables():
    class HF:
        def encode(self, text, add_special_tokens=True):
            return [0] * (len(text.split()) + (2 if add_special_tokens else 0))

    class Plain:
        def encode(self, text):
            return list(text)

    assert count_tokens("a b c", HF()) == 3  # special tokens are not response tokens
    assert count_tokens("abc", Plain()) == 3
    assert count_tokens("abcd", len) == 4
    assert count_tokens("a b", str.split) == 2


def test_resolve_lengths_priority_and_errors():
    spec = RewardSpec(max_length=10, cache_length=5)
    responses = [Response("a", num_tokens=3), "b c"]
    assert resolve_lengths(responses, [7, 8], None, spec).tolist() == [7, 8]
    assert resolve_lengths(responses, None, str.split, spec).tolist() == [3, 2]
    assert resolve_lengths(responses, None, None, RewardSpec()) is None
    with pytest.raises(ValueError, match="response 1 has no token count"):
        resolve_lengths(responses, None, None, spec)


def test_score_responses_rejects_non_text():
    with pytest.raises(TypeError, match="response 1 must be a str"):
        score_responses(["Answer: 1", None], ["1", "1"], RewardSpec())


@pytest.mark.parametrize("bad", [{"correct_reward": float("inf")}, {"timeout": 0},
                                 {"wrong_reward": True}, {"cache_length": 4},
                                 {"mode": "exact"},
                                 {"max_length": 10.5, "cache_length": 2},
                                 {"max_length": "10", "cache_length": 2},
                                 {"max_length": 10, "cache_length": True}])
def test_reward_spec_validation(bad):
    with pytest.raises(ValueError):
        RewardSpec(**bad)
