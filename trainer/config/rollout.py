"""The ``rollout`` section: how responses are generated (engine, sampling, group size)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from verimath.trainer.config.checks import require as _require
from verimath.trainer.config.choices import ENGINES


@dataclass(frozen=True)
class RolloutConfig:
    engine: str = "hf"
    """Rollout engine: ``hf`` (transformers ``generate`` on the policy itself) or ``vllm``
    (a vLLM engine in the same process, or in the generator process with ``async_steps``;
    weights pushed after every update; needs ``verimath[vllm]``)."""
    gen_prompts: int = 32
    """Problems per generation round (each gets ``group_size`` responses)."""
    group_size: int = 16
    """Responses sampled per problem (``G``)."""
    temperature: float = 1.0
    """Sampling temperature for training rollouts and for held-out avg@k."""
    top_p: float = 1.0
    """Nucleus sampling threshold (1.0 disables it)."""
    max_new_tokens: int = 1024
    """Hard cap on response length; a response that reaches it without EOS is truncated."""
    batch_size: int = 0
    """Sequences per ``generate`` call (prompt copies included); 0 means a whole round (or
    evaluation batch) at once. Lower it when generation runs out of memory (HF engine)."""
    vllm_gpu_memory_utilization: float = 0.4
    """vLLM: fraction of GPU memory for its weights and KV cache (the trainer shares the GPU)."""
    vllm_tensor_parallel_size: int = 1
    """vLLM: GPUs one engine shards the model over."""
    vllm_enable_sleep_mode: bool = False
    """vLLM: release the engine's weights and KV cache during the update (woken weights
    first, then the KV cache)."""
    vllm_max_model_len: int | None = None
    """vLLM: longest prompt + response it plans for; None: the model config's limit."""
    vllm_enforce_eager: bool = False
    """vLLM: no CUDA graphs (slower decoding, faster start, less memory)."""
    async_steps: int = 0
    """Asynchronous rollouts: 0 generates, then updates (one process); ``k >= 1`` generates
    the next steps' rounds in a worker process with its own engine (HF: a copy of the policy;
    vLLM: the vLLM engine) while the trainer updates, from a policy at most ``k`` versions
    behind (older groups are dropped and counted). One process; see
    ``verimath.trainer.rollout.async_source``."""
    async_device: str | None = None
    """Where the generator of ``async_steps >= 1`` runs: None on the trainer's device (on a
    GPU: colocated, sharing it), ``cpu``, or ``cuda:N`` (split: a GPU of its own when N is
    not the trainer's); see ``verimath.trainer.rollout.placement``."""

    def __post_init__(self) -> None:
        _require(self.engine in ENGINES,
                 f"rollout.engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        _require(self.gen_prompts >= 1, f"rollout.gen_prompts must be >= 1, got {self.gen_prompts}")
        _require(self.group_size >= 2,
                 f"rollout.group_size must be >= 2 (advantages compare responses within a "
                 f"group), got {self.group_size}")
        _require(self.temperature > 0, f"rollout.temperature must be > 0, got {self.temperature}")
        _require(0 < self.top_p <= 1, f"rollout.top_p must be in (0, 1], got {self.top_p}")
        _require(self.max_new_tokens >= 1,
                 f"rollout.max_new_tokens must be >= 1, got {self.max_new_tokens}")
        _require(self.batch_size >= 0, f"rollout.batch_size must be >= 0, got {self.batch_size}")
        _require(0 < self.vllm_gpu_memory_utilization <= 1,
                 "rollout.vllm_gpu_memory_utilization must be in (0, 1], got "
                 f"{self.vllm_gpu_memory_utilization}")
        _require(self.vllm_tensor_parallel_size >= 1,
                 f"rollout.vllm_tensor_parallel_size must be >= 1, got "
                 f"{self.vllm_tensor_parallel_size}")
        _require(self.vllm_max_model_len is None or self.vllm_max_model_len >= 2,
                 f"rollout.vllm_max_model_len must be >= 2 or null, got {self.vllm_max_model_len}")
        _require(self.async_steps >= 0, f"rollout.async_steps must be >= 0, got {self.async_steps}")
        self._check_async()
        _require(self.vllm_max_model_len is None or self.vllm_max_model_len > self.max_new_tokens,
                 f"rollout.vllm_max_model_len ({self.vllm_max_model_len}) must exceed "
                 f"rollout.max_new_tokens ({self.max_new_tokens}): it holds the prompt and the "
                 "response")

    def _check_async(self) -> None:
        """The ``async_*`` settings (the GPUs they need are checked when the run starts)."""
        if self.async_device is not None:
            parse_device(self.async_device)  # names rollout.async_device
            _require(self.async_steps >= 1,
                     f"rollout.async_device={self.async_device!r} places the generator of "
                     "asynchronous rollouts: set rollout.async_steps >= 1, or unset it")
        _require(not (self.async_steps and self.engine == "vllm"
                      and self.vllm_tensor_parallel_size > 1),
                 f"rollout.async_steps={self.async_steps} runs vLLM in one generator process: "
                 "rollout.vllm_tensor_parallel_size must be 1 (or use rollout.async_steps=0)")


_DEVICE = re.compile(r"^(cpu|cuda)(?::(\d+))?$")


def parse_device(text: str, field: str = "rollout.async_device") -> tuple[str, int | None]:
    """``("cpu", None)``, ``("cuda", None)`` or ``("cuda", N)`` from a device string;
    ValueError naming ``field`` for anything else."""
    match = _DEVICE.match(str(text).strip())
    if match is None or (match.group(1) == "cpu" and match.group(2) is not None):
        raise ValueError(f"{field} must be cpu, cuda or cuda:N (N a GPU index), got {text!r}")
    index = match.group(2)
    return match.group(1), None if index is None else int(index)
