"""Atomic checkpoints with a tiny transformers model, a real tokenizer and AdamW."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from verimath.trainer.algo.schedule import make_lr_lambda
from verimath.trainer.checkpoint.files import (
    MANIFEST,
    checkpoint_name,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
)

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

CHARS = list("0123456789+-=? ")


def make_tokenizer():
    vocab = {c: i for i, c in enumerate(["[UNK]", "[PAD]", *CHARS])}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Split("", "isolated")
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]"
    )


def make_model(seed=0):
    torch.manual_seed(seed)
    cfg = transformers.Qwen2Config(
        vocab_size=len(CHARS) + 2,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        tie_word_embeddings=True,
    )
    return transformers.Qwen2ForCausalLM(cfg)


def make_training(model, lr=1e-2):
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, make_lr_lambda(warmup_steps=2))
    return opt, sched


def train_step(model, opt, sched):
    ids = torch.randint(2, len(CHARS) + 2, (2, 6))  # draws from the torch RNG on purpose
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    sched.step()
    opt.zero_grad()


def params(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.fixture
def trained():
    model = make_model()
    opt, sched = make_training(model)
    for _ in range(2):
        train_step(model, opt, sched)
    return model, opt, sched


def save(directory, model, opt, sched, step=2, **kw):
    kw.setdefault("config", {"algo": {"eps_high": 0.28}, "seed": 0})
    return save_checkpoint(
        directory,
        model=model,
        tokenizer=make_tokenizer(),
        optimizer=opt,
        scheduler=sched,
        step=step,
        **kw,
    )


def test_round_trip_resumes_bit_exactly(tmp_path, trained):
    model, opt, sched = trained
    extra = {"sampler": {"round": 7}, "env_rng": [1, 2, 3]}
    path = save(tmp_path, model, opt, sched, extra_state=extra)
    assert path == tmp_path / "step_00000002" and (path / MANIFEST).is_file()
    assert (path / "extra_state.json").is_file()
    train_step(model, opt, sched)  # the original run goes on (its batch uses the torch RNG)
    expected = params(model)
    # a fresh process-like restart: other weights, other optimizer, other RNG
    fresh = make_model(seed=123)
    opt2, sched2 = make_training(fresh)
    random.seed(99), np.random.seed(99), torch.manual_seed(99)
    state = load_checkpoint(path, model=fresh, optimizer=opt2, scheduler=sched2)
    assert state["step"] == 2 and state["extra_state"] == extra
    assert state["config"] == {"algo": {"eps_high": 0.28}, "seed": 0}
    assert sched2.last_epoch == 2 and sched2.get_last_lr() == pytest.approx(sched.get_last_lr())
    train_step(fresh, opt2, sched2)  # same batch only if the torch RNG was restored
    for key, value in params(fresh).items():
        torch.testing.assert_close(value, expected[key], rtol=0, atol=0, msg=key)


def test_rng_states_are_restored(tmp_path):
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    np.random.randn()  # leave a cached gaussian in numpy's legacy state
    path = save_checkpoint(tmp_path, model=torch.nn.Linear(1, 1), step=0, config={})

    def draws():
        return (random.random(), np.random.randn(), torch.rand(2).tolist())

    first = draws()
    load_checkpoint(path)
    assert draws() == first
    load_checkpoint(path, restore_rng=False)
    assert draws() != first


def test_model_directory_loads_with_from_pretrained(tmp_path, trained):
    model, opt, sched = trained
    path = save(tmp_path, model, opt, sched)
    again = transformers.AutoModelForCausalLM.from_pretrained(path / "model")
    tok = transformers.AutoTokenizer.from_pretrained(path / "model")
    assert tok("12+3")["input_ids"] == make_tokenizer()("12+3")["input_ids"]
    for key, value in params(again).items():
        torch.testing.assert_close(value, model.state_dict()[key], msg=key)


def test_crash_mid_write_leaves_no_checkpoint_and_keeps_the_previous(tmp_path, trained):
    model, opt, sched = trained
    first = save(tmp_path, model, opt, sched, step=1)

    class ExplodingOptimizer:
        def state_dict(self):
            raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        save(tmp_path, model, ExplodingOptimizer(), sched, step=2)
    assert not (tmp_path / checkpoint_name(2)).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [first.name]  # temp dir removed
    assert latest_checkpoint(tmp_path) == first


def test_partial_directories_are_never_picked(tmp_path, trained):
    model, opt, sched = trained
    good = save(tmp_path, model, opt, sched, step=3)
    (tmp_path / "step_00000009").mkdir()  # a partial write from another tool: no manifest
    (tmp_path / ".step_00000010.tmp-abc").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    assert latest_checkpoint(tmp_path) == good
    assert resolve_checkpoint(tmp_path) == good
    with pytest.raises(ValueError, match="not a complete checkpoint"):
        load_checkpoint(tmp_path / "step_00000009")
    with pytest.raises(FileNotFoundError, match="no complete checkpoint"):
        resolve_checkpoint(tmp_path / "elsewhere")


def test_latest_is_by_step_and_keep_last_prunes(tmp_path, trained):
    model, opt, sched = trained
    for step in (5, 20, 100):
        save(tmp_path / "checkpoints", model, opt, sched, step=step, keep_last=2)
    names = [p.name for p in list_checkpoints(tmp_path / "checkpoints")]
    assert names == ["step_00000020", "step_00000100"]
    assert resolve_checkpoint(tmp_path) == tmp_path / "checkpoints" / "step_00000100"
    assert resolve_checkpoint(tmp_path / "checkpoints" / "step_00000020").name == names[0]
    assert latest_checkpoint(tmp_path / "missing") is None


def test_same_step_is_replaced(tmp_path, trained):
    model, opt, sched = trained
    save(tmp_path, model, opt, sched, step=4, extra_state={"v": 1})
    path = save(tmp_path, model, opt, sched, step=4, extra_state={"v": 2})
    assert load_checkpoint(path, restore_rng=False)["extra_state"] == {"v": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["step_00000004"]


def test_non_json_extra_state_and_dataclass_config(tmp_path):
    @dataclass
    class Cfg:
        lr: float = 1e-3
        name: str = "tiny"

    net = torch.nn.Linear(3, 2)  # a plain module without save_pretrained
    extra = {"queue": torch.arange(4), 3: ("a", 1.5)}
    path = save_checkpoint(tmp_path, model=net, step=0, config=Cfg(), extra_state=extra)
    assert (path / "model" / "model.pt").is_file() and (path / "extra_state.pt").is_file()
    other = torch.nn.Linear(3, 2)
    state = load_checkpoint(path, model=other, restore_rng=False)
    assert state["config"] == {"lr": 1e-3, "name": "tiny"}
    assert torch.equal(state["extra_state"]["queue"], torch.arange(4))
    assert state["extra_state"][3] == ("a", 1.5)
    torch.testing.assert_close(other.weight, net.weight)


def test_errors_are_clear(tmp_path, trained):
    model, opt, sched = trained
    with pytest.raises(ValueError, match="JSON"):
        save(tmp_path, model, opt, sched, config={"f": object()})
    assert not any(tmp_path.iterdir())  # checked before writing
    with pytest.raises(ValueError, match="step"):
        save(tmp_path, model, opt, sched, step=-1)
    with pytest.raises(ValueError, match="keep_last"):
        save(tmp_path, model, opt, sched, keep_last=0)
    path = save_checkpoint(tmp_path, model=model, step=1, config={})
    with pytest.raises(ValueError, match="optimizer.pt"):
        load_checkpoint(path, optimizer=opt)
    with pytest.raises(ValueError, match="do not fit the model"):
        load_checkpoint(path, model=torch.nn.Linear(2, 2))
    manifest = json.loads((path / MANIFEST).read_text())
    (path / MANIFEST).write_text(json.dumps({**manifest, "format": 99}))
    with pytest.raises(ValueError, match="format"):
        load_checkpoint(path)


def test_weights_must_fit_except_for_tied_keys(tmp_path):
    path = save_checkpoint(tmp_path, model=torch.nn.Linear(3, 2), step=0, config={})

    class WithExtra(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(2, 3))
            self.bias = torch.nn.Parameter(torch.zeros(2))
            self.scale = torch.nn.Parameter(torch.ones(1))  # not in the checkpoint

    with pytest.raises(ValueError, match=r"missing \['scale'\]"):
        load_checkpoint(path, model=WithExtra(), restore_rng=False)
    with pytest.raises(ValueError, match="do not fit the model"):
        load_checkpoint(path, model=torch.nn.Linear(4, 2), restore_rng=False)
