"""The supervised warm start: target construction, noisy answers, and that it learns."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from verimath.envs import generate
from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model
from verimath.trainer.model.warmstart import (
    NOISE_OFFSETS,
    noisy_answers,
    supervised_pairs,
    warmstart,
)

TOKENIZER = make_char_tokenizer()
answers = st.lists(st.one_of(st.integers(-999, 999).map(str), st.sampled_from(["3/4", "x"])),
                   max_size=40)


@given(answers, st.integers(0, 2**32 - 1))
def test_noise_zero_is_identity_and_one_changes_every_integer(values, seed):
    rng = np.random.default_rng(seed)
    assert noisy_answers(values, noise=0.0, rng=rng) == values
    changed = noisy_answers(values, noise=1.0, rng=rng)
    for old, new in zip(values, changed):
        if old.lstrip("-").isdigit():
            assert int(new) - int(old) in NOISE_OFFSETS
        else:
            assert new == old


def test_noise_fraction_is_about_right():
    values = [str(i) for i in range(4000)]
    out = noisy_answers(values, noise=0.3, rng=np.random.default_rng(0))
    frac = np.mean([a != b for a, b in zip(values, out)])
    assert abs(frac - 0.3) < 0.03
    with pytest.raises(ValueError, match="noise must be in"):
        noisy_answers(values, noise=1.5, rng=np.random.default_rng(0))


def test_supervised_pairs_hand_worked():
    problem = generate("Arithmetic", 0, 4, 1)  # "What is 4 + 8?" -> 12
    prompts, targets = supervised_pairs([problem], TOKENIZER, template="{prompt}\n",
                                        use_chat_template=False, answer_prefix="Answer: ")
    assert TOKENIZER.decode(prompts[0]) == problem.prompt + "\n"
    assert TOKENIZER.decode(targets[0][:-1]) == "Answer: " + problem.answer
    assert targets[0][-1] == TOKENIZER.eos_token_id
    _, wrong = supervised_pairs([problem], TOKENIZER, template="{prompt}\n",
                                use_chat_template=False, answer_prefix="", answers=["99"])
    assert TOKENIZER.decode(wrong[0][:-1]) == "99"


def test_warm_start_lowers_the_loss():
    model = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    kwargs = {"family": "Arithmetic", "level": 1, "seed": 3, "excluded": set(),
              "batch_size": 16, "lr": 1e-2, "template": "{prompt}\n",
              "use_chat_template": False, "answer_prefix": "Answer: "}
    first = warmstart(model, TOKENIZER, steps=1, **kwargs)["warmstart/loss"]
    later = warmstart(model, TOKENIZER, steps=30, **kwargs)["warmstart/loss"]
    assert later < first / 2
    assert warmstart(model, TOKENIZER, steps=0, **kwargs) == {"warmstart/steps": 0.0}
