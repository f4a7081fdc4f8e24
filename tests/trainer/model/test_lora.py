"""LoRA (``model.lora_rank``): adapters only train, the KL reference is the base with the
adapters off, engines receive merged weights, checkpoints hold the adapter and resume, the
final checkpoint holds the merged model."""

from __future__ import annotations

import json

import pytest
import torch
from verimath.trainer.algo.update import UpdateOnlyDropout, update_dropout
from verimath.trainer.config import ModelConfig
from verimath.trainer.core.logprobs import token_logprobs
from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model

pytest.importorskip("peft", reason="LoRA needs peft: pip install 'verimath[lora]'")
from verimath.trainer.model.lora import (  # noqa: E402
    ADAPTER_DIR,
    AdaptersOff,
    MergedModel,
    add_lora,
    check_lora,
    is_lora,
    load_adapter,
    merged_parameters,
    save_adapter,
    trainable_parameters,
)

TOKENIZER = make_char_tokenizer()
IDS = torch.tensor([[5, 9, 12, 7, 3, 30, 2], [4, 4, 8, 15, 16, 23, 42]])


def base_model(seed: int = 0):
    return make_tiny_model(TOKENIZER, hidden_size=16, num_layers=2, num_heads=2, seed=seed).eval()


def lora_model(rank: int = 4, seed: int = 0, **settings):
    """A LoRA policy whose B matrices are random, so that it differs from its base."""
    model = add_lora(base_model(seed), ModelConfig(lora_rank=rank, **settings))
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".lora_B." in name:
                p.copy_(0.3 * torch.randn(p.shape, generator=generator))
    return model


def logits(model):
    with torch.no_grad():
        return model(input_ids=IDS).logits


def test_only_the_adapters_train_and_start_as_the_base():
    model = add_lora(base_model(), ModelConfig(lora_rank=4, lora_target_modules=("q_proj",
                                                                                 "v_proj")))
    assert is_lora(model) and not is_lora(base_model())
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    assert {n.split(".")[-4] for n in trainable} == {"q_proj", "v_proj"}
    # rank 4 on q and v (16 -> 16 each, as many KV heads as heads) in 2 layers
    assert sum(p.numel() for p in trainable_parameters(model)) == 4 * (16 + 16) * 2 * 2
    assert torch.equal(logits(model), logits(base_model()))  # B = 0: the base's function


def test_the_reference_is_the_base_with_adapters_off_and_owns_nothing():
    model = lora_model()
    reference, before = AdaptersOff(model), logits(model)
    assert list(reference.parameters()) == []
    assert not torch.allclose(before, logits(base_model()))
    for chunk in (0, 3):  # full logits, and the chunked head
        ref = token_logprobs(reference, IDS, torch.ones_like(IDS), chunk_size=chunk)
        base = token_logprobs(base_model(), IDS, torch.ones_like(IDS), chunk_size=chunk)
        torch.testing.assert_close(ref, base)
    assert all(p.requires_grad for p in trainable_parameters(model))  # adapters back on
    assert torch.equal(logits(model), before)


def test_merged_weights_are_a_base_model_with_the_adapted_function():
    model = lora_model()
    merged = dict(merged_parameters(model))
    plain = base_model(seed=7)
    assert set(merged) == set(dict(plain.named_parameters()))
    plain.load_state_dict(merged, strict=False)
    torch.testing.assert_close(logits(plain), logits(model), rtol=1e-5, atol=1e-5)


def test_the_adapter_round_trips_and_peft_reads_it(tmp_path):
    from peft import PeftModel

    model = lora_model()
    save_adapter(model, tmp_path / "adapter")
    again = add_lora(base_model(), ModelConfig(lora_rank=4))
    load_adapter(again, tmp_path / "adapter")
    torch.testing.assert_close(logits(again), logits(model))
    by_peft = PeftModel.from_pretrained(base_model(), tmp_path / "adapter")
    torch.testing.assert_close(logits(by_peft), logits(model))
    with pytest.raises(ValueError, match="does not fit the model"):
        load_adapter(add_lora(base_model(), ModelConfig(lora_rank=2)), tmp_path / "adapter")
    with pytest.raises(ValueError, match="does not fit the model: missing"):
        load_adapter(add_lora(base_model(), ModelConfig(lora_rank=4, lora_target_modules=(
            "q_proj", "v_proj", "up_proj"))), tmp_path / "adapter")


def test_the_merged_export_loads_as_a_plain_model(tmp_path):
    from transformers import AutoModelForCausalLM

    model = lora_model()
    MergedModel(model).save_pretrained(tmp_path)
    assert not (tmp_path / "adapter_config.json").exists()
    plain = AutoModelForCausalLM.from_pretrained(tmp_path)
    torch.testing.assert_close(logits(plain), logits(model), rtol=1e-5, atol=1e-5)


def test_lora_dropout_applies_inside_the_update_only():
    model = lora_model(lora_dropout=0.5)
    assert any(isinstance(m, UpdateOnlyDropout) for m in model.modules())
    model.train()  # even in training mode, no dropout outside the update
    torch.testing.assert_close(logits(model), logits(model))
    with update_dropout(model):
        assert not torch.allclose(logits(model), logits(model))
    torch.testing.assert_close(logits(model), logits(model))


def test_target_modules_that_match_nothing_name_the_setting():
    with pytest.raises(ValueError, match="model.lora_target_modules"):
        add_lora(base_model(), ModelConfig(lora_rank=4, lora_target_modules=("nothing",)))
    with pytest.raises(ValueError, match="plain linear"):
        add_lora(base_model(), ModelConfig(lora_rank=4, lora_target_modules=("embed_tokens",)))


def test_lora_without_peft_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "peft" else real(name, *a))
    with pytest.raises(ValueError, match=r"verimath\[lora\]"):
        check_lora(ModelConfig(lora_rank=8))
    check_lora(ModelConfig())  # no LoRA: nothing needed


@pytest.mark.parametrize(("field", "value"), [("lora_rank", -1), ("lora_alpha", 0.0),
                                              ("lora_dropout", 1.0),
                                              ("lora_target_modules", ())])
def test_bad_lora_settings_name_the_field(field, value):
    with pytest.raises(ValueError, match=f"model.{field}"):
        ModelConfig(**{field: value})


RUN = ["model.tiny_hidden_size=32", "model.tiny_layers=1", "model.tiny_heads=2",
       "model.threads=0", "warmstart.steps=40", "warmstart.lr=1e-2", "rollout.gen_prompts=4",
       "rollout.group_size=4", "rollout.max_new_tokens=6", "reward.overlong_buffer=2",
       "algo.dynamic_sampling=false", "algo.train_prompts=4", "algo.mini_batch_prompts=2",
       "algo.kl_coef=0.1", "optim.lr=5e-2", "optim.warmup_steps=0", "eval.num_problems=4",
       "eval.k=1", "logging.progress=false", "logging.plot=false", "logging.save_every=1",
       "logging.keep_checkpoints=5", "model.lora_rank=4", "reward.workers=1"]


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory):
    """Two RL steps of a warm-started tiny model with LoRA and the KL term, then a third
    after ``--resume``."""
    from verimath.trainer.config.files import load_config
    from verimath.trainer.run.loop import train
    from verimath.trainer.run.setup import open_state

    run_dir = tmp_path_factory.mktemp("lora-run")
    with open_state(load_config("tiny", RUN + ["optim.steps=2"]), run_dir,
                    echo=lambda _: None) as state:
        start = {n: p.detach().clone() for n, p in state.model.named_parameters()}
        train(state)
        after = {n: p.detach().clone() for n, p in state.model.named_parameters()}
        final_logits = logits(state.model)
    with open_state(load_config("tiny", RUN + ["optim.steps=3"]), run_dir,
                    resume=run_dir, echo=lambda _: None) as state:
        resumed = logits(state.model)
        train(state)
    return run_dir, start, after, final_logits, resumed


@pytest.mark.slow
def test_a_lora_run_trains_adapters_saves_them_and_resumes(lora_run):
    from transformers import AutoModelForCausalLM

    run_dir, start, after, final_logits, resumed = lora_run
    moved = {n for n in start if not torch.equal(start[n], after[n])}
    assert moved and all(".lora_" in n for n in moved), sorted(moved)[:5]  # base frozen
    ckpts = sorted((run_dir / "checkpoints").glob("step_*"))
    assert [c.name for c in ckpts] == [f"step_0000000{i}" for i in range(1, 4)]
    assert not (ckpts[0] / "model").exists()  # a periodic checkpoint: the adapter alone
    for ckpt in ckpts:
        assert (ckpt / ADAPTER_DIR / "adapter_model.safetensors").is_file()
    base = json.loads((ckpts[0] / ADAPTER_DIR / "adapter_config.json").read_text())
    assert base["base_model_name_or_path"] == str((run_dir / "reference").resolve())
    merged = AutoModelForCausalLM.from_pretrained(ckpts[1] / "model").eval()  # the last step
    torch.testing.assert_close(logits(merged), final_logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(resumed, final_logits)  # base + adapter restored on resume
    steps = [json.loads(line) for line in open(run_dir / "metrics.jsonl")]
    assert [s["step"] for s in steps if "loss/kl" in s] == [1, 2, 3]
    assert all(s["loss/kl"] >= 0 for s in steps if "loss/kl" in s)


@pytest.mark.slow
def test_an_adapter_checkpoint_evaluates_as_its_merged_base(lora_run, tmp_path, capsys):
    from verimath.trainer.cli import main as verimath
    from verimath.trainer.model.policy import load_pretrained

    run_dir, _, _, final_logits, _ = lora_run
    ckpts = sorted((run_dir / "checkpoints").glob("step_*"))
    model, tokenizer = load_pretrained(ckpts[1] / ADAPTER_DIR, dtype=torch.float32)
    torch.testing.assert_close(logits(model.eval()), final_logits, rtol=1e-5, atol=1e-5)
    assert tokenizer.decode(tokenizer("12 + 3")["input_ids"]) == "12 + 3"
    problems = tmp_path / "p.jsonl"
    problems.write_text("".join(json.dumps({"id": str(i), "prompt": f"What is {i} + 1?",
                                            "answer": str(i + 1), "source": "t"}) + "\n"
                                for i in range(3)))
    assert verimath(["eval", "--model", str(ckpts[0]), "--data", str(problems), "--output",
                     str(tmp_path / "out"), "--k", "1", "--no-progress"]) == 0
    assert (tmp_path / "out" / "samples.jsonl").is_file()
    assert verimath(["eval", "--model", str(ckpts[0]), "--data", str(problems), "--output",
                     str(tmp_path / "vllm"), "--engine", "vllm", "--no-progress"]) == 2
    assert "is a LoRA adapter" in capsys.readouterr().err
