"""TRL and verl adapters: plain and conversational completions, pickling, a real GRPO step."""

from __future__ import annotations

import pickle
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.rewards import compute_score, make_trl_reward, score_batch
from verimath.rewards.adapters import TRLReward, compute_score_batch

COMPLETIONS = ["Let me add.\nAnswer: 4", "I get \\boxed{\\frac{1}{2}}", "no idea", "Answer: 5"]
GOLDS = ["4", "0.5", "3", "6"]


def test_plain_completions():
    reward = make_trl_reward()
    assert reward(COMPLETIONS, answer=GOLDS, prompts=["q"] * 4) == [1.0, 1.0, -1.0, -1.0]


def test_conversational_completions_score_the_last_assistant_message():
    chats = [[{"role": "assistant", "content": c}] for c in COMPLETIONS]
    chats[0] = [{"role": "user", "content": "Answer: 9"},
                {"role": "assistant", "content": "Answer: 4"}]
    chats[1] = [{"role": "assistant", "content": [{"type": "text", "text": "\\boxed{0.5}"}]}]
    assert make_trl_reward()(chats, answer=GOLDS) == [1.0, 1.0, -1.0, -1.0]


def test_gold_key_and_overlong_penalty_from_completion_ids():
    reward = make_trl_reward("solution", max_length=10, cache_length=4, mode="integer")
    ids = [[0] * 6, [0] * 8, [0] * 10, [0] * 11]
    got = reward(["Answer: 4", "Answer: 4.0", "Answer: 4", "Answer: 4"], solution=["4"] * 4,
                 completion_ids=ids)
    assert got == [1.0, -1.0 - 0.5, 1.0 - 1.0, 1.0 - 1.0]


def test_logs_timeouts_and_missing_answers_when_trl_offers_log_metric():
    logged = {}
    make_trl_reward()(COMPLETIONS, answer=GOLDS, log_metric=logged.__setitem__)
    assert logged["verimath/timed_out_frac"] == 0.0 and logged["verimath/no_answer_frac"] == 0.25
    assert logged["verimath/path_answer_line"] == 0.5 and logged["verimath/path_box"] == 0.25
    assert logged["verimath/rule_no_answer"] == 0.25 and logged["verimath/rule_fast"] == 0.75


def test_trl_reward_is_picklable_and_named():
    reward = make_trl_reward("gold", timeout=2.0)
    clone = pickle.loads(pickle.dumps(reward))
    assert clone == reward and isinstance(clone, TRLReward)
    assert clone(COMPLETIONS, gold=GOLDS) == reward(COMPLETIONS, gold=GOLDS)
    assert reward.__name__ == "verimath_correctness"
    assert make_trl_reward(max_length=10, cache_length=2).__name__ == "verimath_dapo"


@pytest.mark.parametrize(
    "kwargs, match",
    [({"gold_key": ""}, "gold_key"), ({"style": "xml"}, "style"), ({"mode": "fuzzy"}, "mode"),
     ({"timeout": -1}, "timeout"), ({"max_length": 10}, "both"),
     ({"max_length": 10, "cache_length": 20}, "must not exceed")],
)
def test_bad_settings_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_trl_reward(**kwargs)


def test_bad_calls_name_the_problem():
    with pytest.raises(ValueError, match=r"column 'answer'.*\['solution'\]"):
        make_trl_reward()(COMPLETIONS, solution=GOLDS, prompts=["q"] * 4)
    with pytest.raises(ValueError, match=r"completions\[1\]"):
        make_trl_reward()(["Answer: 1", [{"role": "assistant"}]], answer=["1", "1"])
    with pytest.raises(TypeError, match=r"completions\[1\] must be a str .*got bytes"):
        make_trl_reward()(["Answer: 1", b"7"], answer=["1", "1"])
    with pytest.raises(ValueError, match="completion_ids"):
        make_trl_reward(max_length=10, cache_length=2)(["a"], answer=["1"])


def test_verl_compute_score():
    assert compute_score("math", "so \\boxed{\\frac{1}{2}}", "0.5") == {
        "score": 1.0, "acc": True, "pred": "\\frac{1}{2}"
    }
    assert compute_score("aime", "Answer: 7", "8", {"index": 3}) == {
        "score": -1.0, "acc": False, "pred": "7"
    }
    assert compute_score("x", "nothing", "1") == {"score": -1.0, "acc": False, "pred": ""}
    assert compute_score("x", "Answer: 3.0", "3", mode="integer")["acc"] is False


def test_verl_batch_equals_single_calls():
    batch = compute_score_batch(["s"] * 4, COMPLETIONS, GOLDS)
    assert batch == [compute_score("s", c, g) for c, g in zip(COMPLETIONS, GOLDS)]


def _tiny_model_and_tokenizer():
    """A 2-layer Qwen2 with a character tokenizer, built in code (nothing downloaded)."""
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    chars = "\n" + "".join(c for c in string.printable if c.isprintable())
    vocab = {t: i for i, t in enumerate(("<pad>", "<eos>", "<unk>", *chars))}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    tokenizer.padding_side = "left"
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
        pad_token_id=0, eos_token_id=1, bos_token_id=1,
    )
    return Qwen2ForCausalLM(config), tokenizer


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::FutureWarning")  # transformers' deprecation notices
def test_one_step_of_a_real_trl_grpo_trainer(tmp_path):
    datasets = pytest.importorskip("datasets")
    trl = pytest.importorskip("trl")
    model, tokenizer = _tiny_model_and_tokenizer()
    reward = make_trl_reward("answer", max_length=6, cache_length=4)
    calls = []

    def spy(completions, **kwargs):  # records what TRL hands the reward, returns its output
        out = reward(completions, **kwargs)
        calls.append((completions, kwargs, out))
        return out

    dataset = datasets.Dataset.from_dict(
        {"prompt": ["1+1=", "2+2=", "3+3=", "4+4="], "answer": ["2", "4", "6", "8"]}
    )
    args = trl.GRPOConfig(
        output_dir=str(tmp_path), use_cpu=True, max_steps=1, per_device_train_batch_size=4,
        num_generations=2, max_completion_length=8, report_to="none", logging_steps=1,
        save_strategy="no", bf16=False,
    )
    trainer = trl.GRPOTrainer(model=model, reward_funcs=[reward, spy], args=args,
                              train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    assert trainer.state.global_step == 1
    (completions, kwargs, out), = calls
    answers = dict(zip(dataset["prompt"], dataset["answer"]))
    assert kwargs["answer"] == [answers[p] for p in kwargs["prompts"]]  # golds aligned
    assert all(isinstance(c, str) for c in completions) and len(out) == len(completions) == 4
    lengths = [len(ids) for ids in kwargs["completion_ids"]]
    expected = [
        make_trl_reward()([c], answer=[a])[0] + max(-1.0, min(0.0, (2 - n) / 4))
        for c, a, n in zip(completions, kwargs["answer"], lengths)
    ]
    assert out == expected
    logs = trainer.state.log_history[0]
    assert logs["rewards/verimath_dapo/mean"] == pytest.approx(sum(out) / len(out))
    assert "verimath/timed_out_frac" in logs


ANSWERS = st.integers(-999, 999)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(ANSWERS, ANSWERS, st.sampled_from(["Answer: {}", "\\boxed{{{}}}",
                                                              "<answer>{}</answer>", "no answer"])),
                min_size=1, max_size=8))
def test_adapters_agree_with_score_batch_and_with_each_other(items):
    texts = [form.format(said) for said, _, form in items]
    golds = [str(gold) for _, gold, _ in items]
    expected = score_batch(texts, golds).reward.tolist()
    assert make_trl_reward()(texts, answer=golds) == expected
    chats = [[{"role": "user", "content": "Answer: 0"}, {"role": "assistant", "content": t}]
             for t in texts]
    assert make_trl_reward()(chats, answer=golds) == expected
    batch = compute_score_batch(["src"] * len(texts), texts, golds)
    assert [b["score"] for b in batch] == expected
    assert batch == [compute_score("src", t, g) for t, g in zip(texts, golds)]
    assert all(b["acc"] == (b["score"] == 1.0) for b in batch)


@settings(max_examples=15, deadline=None)
@given(ANSWERS, ANSWERS)
def test_several_attempts_never_earn_more_than_one_answer(gold, other):
    """The multi-attempt rule: flexible scores a response that offers the gold among other
    candidates (boxes joined as a list, a hedge, a list) -1, in either order; the strict auto
    style reads only the last box, so boxing several guesses is worth the last guess alone."""
    if other == gold:
        return
    def score(text, style):
        return compute_score("src", text, str(gold), style=style)["score"]

    for first, last in ((gold, other), (other, gold)):
        boxes = f"\\boxed{{{first}}}, \\boxed{{{last}}}"
        assert score(boxes, "flexible") == -1.0
        assert score(boxes, "auto") == score(f"\\boxed{{{last}}}", "auto")
        for text in (f"Answer: {first} or maybe {last}", f"Answer: {first}, {last}"):
            assert score(text, "flexible") == score(text, "auto") == -1.0
    assert score(f"Answer: {gold}", "auto") == score(f"Answer: {gold}", "flexible") == 1.0
