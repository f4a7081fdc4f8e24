"""The ``rollout`` and ``reward`` sections: how responses are generated and scored."""

from __future__ import annotations

from dataclasses import dataclass

from verimath.trainer.settings.checks import require as _require


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
        from verimath.trainer.rollout.engine import ENGINES

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
        from verimath.trainer.rollout.placement import parse_device

        if self.async_device is not None:
            parse_device(self.async_device)  # names rollout.async_device
            _require(self.async_steps >= 1,
                     f"rollout.async_device={self.async_device!r} places the generator of "
                     "asynchronous rollouts: set rollout.async_steps >= 1, or unset it")
        _require(not (self.async_steps and self.engine == "vllm"
                      and self.vllm_tensor_parallel_size > 1),
                 f"rollout.async_steps={self.async_steps} runs vLLM in one generator process: "
                 "rollout.vllm_tensor_parallel_size must be 1 (or use rollout.async_steps=0)")


@dataclass(frozen=True)
class RewardConfig:
    answer_style: str = "auto"
    """How the final answer is found: one of ``verimath.rewards.extraction.final_answer.STYLES`` (``dapo``:
    the last ``Answer: x``; ``boxed``; ``auto``; ``flexible``)."""
    mode: str = "symbolic"
    """Equivalence mode passed to ``verimath.rewards.score_batch``."""
    timeout: float = 5.0
    """Seconds allowed to verify one response; a timeout counts as incorrect."""
    overlong_punishment: bool = True
    """DAPO's soft overlong punishment: add ``R_length`` to the +-1 correctness reward."""
    overlong_buffer: int = 256
    """``L_cache``: the penalty ramps from 0 to -1 over the last ``overlong_buffer`` tokens
    before ``rollout.max_new_tokens`` (``L_max``)."""
    workers: int = 0
    """Processes that run math-verify for answers the exact fast path leaves open; 0 keeps
    the shared pool's default size (``$VERIMATH_WORKERS``, else the usable CPUs, at most 8)."""

    def __post_init__(self) -> None:
        from verimath.rewards.equality.equivalence import MODES, check_timeout
        from verimath.rewards.extraction.final_answer import STYLES

        _require(self.answer_style in STYLES, f"reward.answer_style must be one of "
                                              f"{', '.join(STYLES)}, got {self.answer_style!r}")
        _require(self.mode in MODES, f"reward.mode must be one of {', '.join(MODES)}, "
                                     f"got {self.mode!r}")
        try:
            check_timeout(self.timeout)
        except ValueError as e:
            raise ValueError(f"reward.timeout: {e}") from None
        _require(self.overlong_buffer >= 1,
                 f"reward.overlong_buffer must be >= 1, got {self.overlong_buffer}")
        _require(self.workers >= 0, f"reward.workers must be >= 0, got {self.workers}")
