"""The ``model`` section: which model, its size and how it is loaded."""

from __future__ import annotations

from dataclasses import dataclass

from verimath.trainer.config.checks import require as _require


@dataclass(frozen=True)
class ModelConfig:
    path: str | None = None
    """A Hugging Face causal-LM directory, or a hub id (``org/name``) looked up in the HF cache
    and downloaded into it when missing (only the cache with ``HF_HUB_OFFLINE=1``); its
    tokenizer is loaded from the same place. ``None`` builds the tiny character-level Qwen2
    model of ``verimath.trainer.model.tiny``."""
    tiny_hidden_size: int = 128
    """Width of the tiny model (used only when ``path`` is None)."""
    tiny_layers: int = 3
    """Transformer blocks of the tiny model."""
    tiny_heads: int = 4
    """Attention heads of the tiny model; must divide ``tiny_hidden_size``."""
    device: str = "auto"
    """``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda`` or ``cuda:N``."""
    dtype: str = "auto"
    """``auto`` (bfloat16 on one CUDA GPU, float32 on the CPU; with several processes on
    GPUs float32 master weights that FSDP computes with in bfloat16), ``float32``,
    ``bfloat16`` or ``float16``."""
    use_chat_template: bool = True
    """Wrap prompts with the tokenizer's chat template when it has one."""
    prompt_template: str = "dapo"
    """Instruction template for ``verimath.envs.format_prompt``: ``dapo``, ``boxed``, ``raw``
    or a format string containing ``{prompt}``."""
    threads: int = 0
    """CPU threads for torch (``torch.set_num_threads``); 0 leaves torch's default."""
    lora_rank: int = 0
    """LoRA (needs ``verimath[lora]``): train rank-``lora_rank`` adapters on the frozen model
    instead of every weight; 0 trains the full model. The KL reference is then the model
    with its adapters switched off, the vLLM engine receives merged weights, checkpoints
    hold the adapter (``adapter/``) and the final one also the merged model (``model/``)."""
    lora_alpha: float | None = None
    """LoRA scale numerator: the update is ``lora_alpha / lora_rank x B A``; None means
    ``2 x lora_rank``."""
    lora_dropout: float = 0.0
    """Dropout on the adapters' input, in the update's forward and backward only (never in
    rollouts or the old and reference log-probs)."""
    lora_target_modules: tuple[str, ...] = ("all-linear",)
    """Linear layers that get adapters, by name (``q_proj``, ``v_proj``...); ``all-linear``
    is every linear layer but the output head."""

    def __post_init__(self) -> None:
        _require(self.device == "auto" or self.device == "cpu" or self.device.startswith("cuda"),
                 f"model.device must be auto, cpu or cuda[:N], got {self.device!r}")
        _require(self.dtype in ("auto", "float32", "bfloat16", "float16"),
                 f"model.dtype must be auto, float32, bfloat16 or float16, got {self.dtype!r}")
        _require(self.tiny_hidden_size % self.tiny_heads == 0 and self.tiny_layers >= 1,
                 f"model.tiny_hidden_size ({self.tiny_hidden_size}) must be a multiple of "
                 f"model.tiny_heads ({self.tiny_heads}) and model.tiny_layers >= 1")
        _require(self.threads >= 0, f"model.threads must be >= 0, got {self.threads}")
        _require(self.lora_rank >= 0, f"model.lora_rank must be >= 0 (0: no LoRA), got "
                 f"{self.lora_rank}")
        _require(self.lora_alpha is None or self.lora_alpha > 0,
                 f"model.lora_alpha must be > 0 or null (2 x lora_rank), got {self.lora_alpha}")
        _require(0 <= self.lora_dropout < 1,
                 f"model.lora_dropout must be in [0, 1), got {self.lora_dropout}")
        _require(len(self.lora_target_modules) >= 1 and all(
                     isinstance(m, str) and m for m in self.lora_target_modules),
                 "model.lora_target_modules must list module names (or all-linear), got "
                 f"{list(self.lora_target_modules)}")
        from verimath.envs.templates import TEMPLATES

        _require(self.prompt_template in TEMPLATES or "{prompt}" in self.prompt_template,
                 f"model.prompt_template must be one of {sorted(TEMPLATES)} or a string "
                 f"containing {{prompt}}, got {self.prompt_template!r:.60}")
