"""The tiny Qwen2 model and the character-level tokenizer."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.trainer.model.tiny import (
    CHARACTERS,
    SPECIAL_TOKENS,
    count_parameters,
    make_char_tokenizer,
    make_tiny_model,
)

TOKENIZER = make_char_tokenizer()
# Text spelling a special token ("<eos>") encodes to that token, as in every HF tokenizer.
known_text = st.text(alphabet=st.sampled_from(CHARACTERS), max_size=80).filter(
    lambda t: not any(s in t for s in SPECIAL_TOKENS))


def test_is_a_real_fast_tokenizer():
    from transformers import PreTrainedTokenizerFast

    assert isinstance(TOKENIZER, PreTrainedTokenizerFast)
    assert len(TOKENIZER) == len(SPECIAL_TOKENS) + len(CHARACTERS)
    assert (TOKENIZER.pad_token_id, TOKENIZER.eos_token_id, TOKENIZER.unk_token_id) == (0, 1, 2)


def test_hand_worked_encoding():
    ids = TOKENIZER("7+5=\nAnswer: 12")["input_ids"]
    assert len(ids) == len("7+5=\nAnswer: 12")
    assert TOKENIZER.convert_ids_to_tokens(ids[:4]) == ["7", "+", "5", "="]
    assert ids[4] == TOKENIZER.convert_tokens_to_ids("\n") == 3
    assert TOKENIZER("é")["input_ids"] == [TOKENIZER.unk_token_id]
    assert TOKENIZER("1<eos>")["input_ids"] == [TOKENIZER.convert_tokens_to_ids("1"), 1]


@given(known_text)
def test_one_token_per_character_and_lossless_round_trip(text):
    ids = TOKENIZER(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(text)
    assert all(i >= len(SPECIAL_TOKENS) for i in ids)
    assert TOKENIZER.decode(ids) == text


@given(known_text)
def test_decode_skips_special_tokens(text):
    ids = [TOKENIZER.pad_token_id] + TOKENIZER(text)["input_ids"] + [TOKENIZER.eos_token_id]
    assert TOKENIZER.decode(ids, skip_special_tokens=True) == text


def test_save_and_reload(tmp_path):
    from transformers import AutoTokenizer

    TOKENIZER.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    text = "What is 56 + 34?\nAnswer: 90"
    assert again(text)["input_ids"] == TOKENIZER(text)["input_ids"]
    assert again.eos_token_id == TOKENIZER.eos_token_id


def test_chat_template_optional():
    assert not TOKENIZER.chat_template
    chat = make_char_tokenizer(chat_template=True)
    text = chat.apply_chat_template([{"role": "user", "content": "2+2"}], tokenize=False,
                                    add_generation_prompt=True)
    assert text == "Q:2+2\nA:"


def test_model_shape_size_and_determinism():
    state = torch.random.get_rng_state()
    a = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=2, num_heads=4, seed=3)
    assert torch.equal(state, torch.random.get_rng_state()), "global RNG must be untouched"
    b = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=2, num_heads=4, seed=3)
    c = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=2, num_heads=4, seed=4)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not all(torch.equal(p, q) for p, q in zip(a.parameters(), c.parameters()))
    assert a.config.model_type == "qwen2" and a.config.tie_word_embeddings
    assert 10_000 < count_parameters(a) < 100_000
    ids = torch.tensor([TOKENIZER("1+1=")["input_ids"]])
    assert a(input_ids=ids).logits.shape == (1, 4, len(TOKENIZER))


def test_default_model_is_a_few_hundred_thousand_parameters():
    n = count_parameters(make_tiny_model(TOKENIZER))
    assert 50_000 < n < 2_000_000


def test_bad_head_count():
    with pytest.raises(ValueError, match="multiple of num_heads"):
        make_tiny_model(TOKENIZER, hidden_size=30, num_heads=4)


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_generation_stops_at_eos(seed):
    model = make_tiny_model(TOKENIZER, hidden_size=16, num_layers=1, num_heads=2, seed=seed)
    ids = torch.tensor([TOKENIZER("3-1=")["input_ids"]])
    out = model.generate(input_ids=ids, max_new_tokens=6, do_sample=False)
    new = out[0, ids.shape[1]:].tolist()
    assert 1 <= len(new) <= 6
    if TOKENIZER.eos_token_id in new:
        assert new.index(TOKENIZER.eos_token_id) == len(new) - 1 or all(
            t == TOKENIZER.pad_token_id for t in new[new.index(TOKENIZER.eos_token_id) + 1:])
