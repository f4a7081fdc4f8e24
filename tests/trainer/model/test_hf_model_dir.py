"""A user's own Hugging Face model directory and a ``verimath prep`` file, end to end:
``verimath prep gsm8k`` on the real GSM8K test split, a local model saved with
``save_pretrained`` (tokenizer with a chat template), two RL steps from it on the CLI."""

from __future__ import annotations

import json
import sys

import pytest
from verimath.trainer.cli import main as verimath

CHAT = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model

    folder = tmp_path_factory.mktemp("my-model")
    tokenizer = make_char_tokenizer()
    tokenizer.chat_template = CHAT
    model = make_tiny_model(tokenizer, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    # GSM8K prompts are long for a character tokenizer: 1,110 with the dapo template and chat
    # turn, and verimath train refuses prompts that do not fit the model's positions
    model.config.max_position_embeddings = 2048
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_two_steps_from_a_local_model_on_prepped_gsm8k(shared_data, model_dir, tmp_path,
                                                       monkeypatch):
    import verimath.trainer.rollout.episodes as episodes

    problems = tmp_path / "gsm8k.jsonl"
    assert verimath(["prep", "gsm8k", "--input", str(shared_data / "gsm8k" / "test.jsonl"),
                     "--output", str(problems)]) == 0
    seen = []
    original = episodes.build_prompt_ids

    def spy(tokenizer, texts, *, use_chat_template):
        ids = original(tokenizer, texts, use_chat_template=use_chat_template)
        # the rollout's prompts only: a module that imports the name after this patch (the
        # context-length check reads every training problem) binds the spy too
        if sys._getframe(1).f_globals.get("__name__") == episodes.__name__:
            seen.extend(tokenizer.decode(row) for row in ids)
        return ids

    monkeypatch.setattr(episodes, "build_prompt_ids", spy)
    run_dir = tmp_path / "run"
    code = verimath([
        "train", "--config", "dapo", "--output-dir", str(run_dir), f"model.path={model_dir}",
        f"data.train_file={problems}", "model.threads=0", "rollout.gen_prompts=2",
        "rollout.group_size=2", "rollout.max_new_tokens=4", "reward.overlong_buffer=2",
        "algo.train_prompts=2", "algo.mini_batch_prompts=1", "algo.micro_batch_size=2",
        "algo.dynamic_sampling=false", "optim.steps=2", "logging.progress=false",
        "logging.plot=false", "eval.num_problems=0"])
    assert code in (0, 3)  # 3: finished, and the untrained model got every answer wrong
    assert len(seen) == 4  # 2 steps x 2 problems, each wrapped as a chat user turn
    for text in seen:
        assert text.startswith("<|user|>") and text.endswith("\n<|assistant|>")
        assert "Answer:" in text  # the dapo instruction template inside the user turn
    steps = [json.loads(line) for line in open(run_dir / "metrics.jsonl")]
    assert [s["step"] for s in steps] == [1, 2]
    assert all(s["sampling/kept_groups"] == 2 for s in steps)
    assert (run_dir / "checkpoints" / "step_00000002" / "model" / "chat_template.jinja").is_file()


def test_a_saved_generic_tokenizer_keeps_spaces_and_newlines(model_dir):
    """AutoTokenizer would load the tiny tokenizer of a Qwen2 directory as Qwen2Tokenizer
    and drop whitespace; ``load_policy`` keeps the tokenizer exactly as saved."""
    import torch
    from verimath.trainer.config import ModelConfig
    from verimath.trainer.model.policy import load_policy

    _, tokenizer = load_policy(ModelConfig(path=str(model_dir)), device=torch.device("cpu"),
                               dtype=torch.float32)
    text = "What is 56 + 34?\nAnswer: 90"
    ids = tokenizer(text)["input_ids"]
    assert len(ids) == len(text) and tokenizer.decode(ids) == text
    assert tokenizer.chat_template == CHAT
