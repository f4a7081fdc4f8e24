"""Starting and stopping vLLM's ``LLM`` in the trainer's process for
:class:`~verimath.trainer.rollout.vllm_engine.VLLMRolloutEngine`: the options checked before
vLLM is imported, the CPU backend's settings (KV-cache size, whole-prompt prefill, supported
head sizes), and vLLM's process-wide side effects undone (global RNG states,
``torch.set_num_threads``, a module scan that numba's llvmlite breaks, noisy loggers)."""

from __future__ import annotations

import contextlib
import logging
import os
import random
from pathlib import Path

import numpy as np

CPU_KV_CACHE_BYTES = 512 << 20
"""KV-cache size on vLLM's CPU backend when ``kv_cache_memory_bytes`` is not given."""
DTYPES = ("auto", "float32", "bfloat16", "float16")
_QUIET_LOGGERS = (  # expected noise for a token-ids-only, in-process engine
    "vllm.renderers.base",  # "Tokenizer not available when skip_tokenizer_init=True"
    "vllm.v1.worker.cpu_worker",  # "doesn't allow torch.set_num_threads", sleep mode
    "vllm.model_executor.model_loader.reload.layerwise",  # the tied head "failed to load"
)


def check_options(folder: Path, tokenizer, dtype: str, gpu_memory_utilization: float,
                  tensor_parallel_size: int) -> None:
    """ValueError naming the setting when the engine could not start or would misbehave."""
    if not (folder / "config.json").is_file():
        raise ValueError(f"the vLLM engine needs a Hugging Face model directory; {str(folder)!r} "
                         "has no config.json (save the model with save_pretrained first)")
    if tokenizer.eos_token_id is None:
        raise ValueError("the tokenizer has no eos_token_id; responses could never finish")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError("rollout.vllm_gpu_memory_utilization must be in (0, 1], got "
                         f"{gpu_memory_utilization}")
    if tensor_parallel_size > 1 and "WORLD_SIZE" not in os.environ:
        raise ValueError(
            f"rollout.vllm_tensor_parallel_size={tensor_parallel_size} runs one engine shard "
            f"per process: launch the trainer with torchrun --nproc-per-node "
            f"{tensor_parallel_size}, or set it to 1")


def resolve_dtype(dtype: str, torch):
    """The torch dtype of ``dtype`` ("auto": bfloat16 on a GPU, float32 on a CPU)."""
    if dtype == "auto":
        return torch.bfloat16 if torch.cuda.is_available() else torch.float32
    return getattr(torch, dtype)


def generation_config(folder: Path):
    """The directory's ``generation_config.json`` (its EOS ids), or None."""
    if not (folder / "generation_config.json").is_file():
        return None
    from transformers import GenerationConfig

    return GenerationConfig.from_pretrained(folder, local_files_only=True)


def start_llm(folder: Path, options: dict, kv_cache_memory_bytes: int | None):
    """vLLM's ``LLM``, in process, without leaving its global side effects behind."""
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # sync_weights passes live tensors
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    import torch
    from vllm import LLM
    from vllm.platforms import current_platform

    for name in _QUIET_LOGGERS:  # a filter: vLLM resets these loggers' levels as it starts
        logger = logging.getLogger(name)
        if _errors_only not in logger.filters:
            logger.addFilter(_errors_only)
    if current_platform.is_cpu():
        if options["enable_sleep_mode"]:
            raise ValueError("rollout.vllm_enable_sleep_mode needs a GPU: vLLM's CPU backend "
                             "has no sleep mode; set it to false")
        _check_cpu_head_size(folder)
        options["kv_cache_memory_bytes"] = kv_cache_memory_bytes or CPU_KV_CACHE_BYTES
        # A prompt split across scheduler steps rewinds its seeded generator, which CPU
        # generators cannot do ("CPU Generator does not use offset"): prefill whole prompts.
        options["enable_chunked_prefill"] = False
    elif kv_cache_memory_bytes:
        options["kv_cache_memory_bytes"] = kv_cache_memory_bytes
    set_num_threads = torch.set_num_threads
    try:
        with isolated_rng(), _hidden_from_kernel_scan():
            return LLM(**options)
    finally:
        torch.set_num_threads = set_num_threads


@contextlib.contextmanager
def _hidden_from_kernel_scan():
    """Hide, while vLLM starts, the modules its CPU kernel registration cannot scan.

    That registration walks the globals of every module in ``sys.modules`` and reads
    ``vars(value).get(...)`` of each value with a ``__dict__``. llvmlite's ``ffi.lib`` (numba,
    which the rewards import) answers any attribute, ``__dict__`` included, with a function
    wrapper, so the scan raises ``AttributeError`` and the engine never starts."""
    import sys

    hidden = {name: module for name, module in list(sys.modules.items())
              if _unscannable(module)}
    for name in hidden:
        del sys.modules[name]
    try:
        yield
    finally:
        sys.modules.update(hidden)


def _unscannable(module) -> bool:
    namespace = getattr(module, "__dict__", None)
    if not isinstance(namespace, dict):
        return False
    for value in list(namespace.values()):
        try:
            if hasattr(value, "__dict__") and not hasattr(vars(value), "get"):
                return True
        except TypeError:
            continue
    return False


def _errors_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.ERROR


def _check_cpu_head_size(folder: Path) -> None:
    """vLLM's CPU attention supports a few head sizes; say which before it fails obscurely."""
    import json

    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    heads = config.get("num_attention_heads") or 1
    head_dim = config.get("head_dim") or config.get("hidden_size", 0) // heads
    supported = CPUAttentionBackend.get_supported_head_sizes()
    if head_dim not in supported:
        raise ValueError(
            f"vLLM's CPU attention supports head sizes {supported}, and this model's is "
            f"{head_dim} (hidden_size / num_attention_heads): for the tiny model choose "
            "model.tiny_hidden_size / model.tiny_heads among them (e.g. 128 / 4)")


@contextlib.contextmanager
def isolated_rng():
    """Run the block and put python's, numpy's and torch's global RNG states back."""
    import torch

    states = random.getstate(), np.random.get_state()
    cuda = [d for d in range(torch.cuda.device_count())] if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=cuda):
        try:
            yield
        finally:
            random.setstate(states[0])
            np.random.set_state(states[1])


def shutdown(llm) -> None:
    """Stop the engine core and release vLLM's process-wide state and memory."""
    import gc

    import torch

    engine_core = getattr(llm.llm_engine, "engine_core", None)
    if engine_core is not None and hasattr(engine_core, "shutdown"):
        engine_core.shutdown()
    del llm
    with contextlib.suppress(ImportError, AssertionError, RuntimeError):
        from vllm.distributed.parallel_state import (
            destroy_distributed_environment,
            destroy_model_parallel,
        )

        destroy_model_parallel()
        destroy_distributed_environment()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
