"""The ``model`` and ``data`` sections: which model, which problems."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from verimath.trainer.settings.checks import require as _require


@dataclass(frozen=True)
class ModelConfig:
    path: str | None = None
    """A Hugging Face causal-LM directory (its tokenizer is loaded from the same place);
    ``None`` builds the tiny character-level Qwen2 model of ``verimath.trainer.model.tiny``."""
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


@dataclass(frozen=True)
class DataConfig:
    family: str = "Arithmetic"
    """Procedural problem family of ``verimath.envs.generators`` (or ``Mixed``)."""
    level: int = 1
    """Difficulty level of the procedural family, 1..5."""
    skip_containing: tuple[str, ...] = ()
    """Skip procedural problems whose prompt contains any of these texts, e.g. ``["*", "-"]``
    keeps only the two-digit additions of Arithmetic level 2."""
    train_file: str | None = None
    """A problems file (``.jsonl``/``.parquet`` from ``verimath prep``) to train on instead of
    the procedural family."""
    heldout_file: str | None = None
    """A problems file for held-out evaluation; ``None`` draws ``eval.num_problems``
    procedural problems that training never sees (their prompts are excluded from training),
    or evaluates nothing when training on ``train_file``."""
    seed: int = 0
    """Seed of the training problem stream."""
    adapt_level: bool = False
    """Difficulty that follows the policy, for the procedural family: each family's
    difficulty (starting at ``level``) moves up while its groups are mostly solved by every
    sample and down while mostly by none (``verimath.envs.curriculum``;
    ``curriculum/difficulty/<family>`` and its pass rate in the metrics). Held-out problems
    stay at ``level``."""
    adapt_band: tuple[float, float] = (0.1, 0.9)
    """``(low, high)``: ``adapt_level`` counts a group below ``low`` (pass rate) as too hard
    and above ``high`` as too easy, and moves the difficulty toward the band."""
    adapt_margin: float = 0.1
    """``adapt_level`` moves when the share of too-hard groups exceeds that of too-easy ones
    (or the other way round) by more than this."""
    adapt_min_groups: int = 16
    """Groups scored at a family's current level before ``adapt_level`` may move it (their
    mean pass rate decides)."""
    adapt_substeps: int = 1
    """Difficulty steps per level for ``adapt_level``: 1 moves whole levels; ``k`` poses a
    share ``j / k`` of the problems one level up and moves it ``1 / k`` at a time
    (``curriculum/difficulty/<family>``), so a level the policy cannot solve yet is mixed in
    and backed off from rather than switched to."""
    adapt_patience: int = 1
    """Checks in a row (one per group once ``adapt_min_groups`` are in) on the same side of
    ``adapt_band`` before ``adapt_level`` moves (hysteresis)."""
    adapt_levels: tuple[int, int] = (1, 5)
    """``(lowest, highest)`` level ``adapt_level`` may reach (with ``skip_containing``, keep
    it below a level whose prompts all contain a skipped text)."""
    skip_solved: bool = False
    """For a ``train_file``: skip prompts that every sample solved on each of their last
    ``skip_solved_visits`` visits, posing them again after ``skip_solved_recheck`` skips
    (``curriculum/settled|skipped|rechecked`` in the metrics)."""
    skip_solved_visits: int = 2
    """All-correct visits in a row that settle a prompt (``skip_solved``)."""
    skip_solved_recheck: int = 4
    """Skips of a settled prompt before it is posed again (``skip_solved``)."""

    def __post_init__(self) -> None:
        _require(1 <= self.level <= 5, f"data.level must be in 1..5, got {self.level}")
        from verimath.envs.generators import FAMILIES

        _require(self.family in FAMILIES,
                 f"data.family must be one of {', '.join(FAMILIES)}, got {self.family!r}")
        _require(not (self.adapt_level and self.train_file),
                 "data.adapt_level moves the level of the procedural family; with "
                 "data.train_file use data.skip_solved instead")
        _require(not (self.skip_solved and not self.train_file),
                 "data.skip_solved skips solved prompts of data.train_file (a procedural "
                 "stream never repeats one); use data.adapt_level instead")
        self.curriculum()  # settings errors name the data.* key

    def curriculum(self) -> dict:
        """The episode source's ``adapt_level`` and ``skip_solved`` settings (None: off)."""
        from verimath.envs.curriculum import AdaptiveLevel, SkipSolved

        try:
            adapt = AdaptiveLevel(low=self.adapt_band[0], high=self.adapt_band[1],
                                  min_groups=self.adapt_min_groups,
                                  min_level=self.adapt_levels[0], max_level=self.adapt_levels[1],
                                  substeps=self.adapt_substeps, patience=self.adapt_patience,
                                  margin=self.adapt_margin)
        except ValueError as exc:
            raise ValueError(f"data.adapt_band / data.adapt_margin / data.adapt_min_groups / "
                             f"data.adapt_levels / data.adapt_substeps / data.adapt_patience: "
                             f"{exc}") from None
        try:
            skip = SkipSolved(visits=self.skip_solved_visits,
                              recheck_after=self.skip_solved_recheck)
        except ValueError as exc:
            raise ValueError(f"data.skip_solved_visits / data.skip_solved_recheck: {exc}"
                             ) from None
        return {"adapt_level": dataclasses.asdict(adapt) if self.adapt_level else None,
                "skip_solved": dataclasses.asdict(skip) if self.skip_solved else None}
