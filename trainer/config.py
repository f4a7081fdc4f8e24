"""Training configuration: frozen dataclasses, YAML presets and dotted overrides.

A run is described by one :class:`TrainConfig` made of sections (``model``, ``data``,
``rollout``, ``reward``, ``algo``, ``optim``, ``warmstart``, ``eval``, ``logging``). Every
field has a docstring right under it. Presets live in ``verimath/trainer/configs/*.yaml``
and list only what differs from the defaults; ``load_config("tiny", ["algo.eps_high=0.2"])``
(in ``config_io``) reads a preset or a YAML path and applies command-line overrides, each
``section.field=value`` with the value parsed as YAML and checked against the field's type.

DAPO's four techniques are switched independently in :class:`AlgoConfig`:
``clip_higher`` (decoupled ``eps_low``/``eps_high``), ``dynamic_sampling``,
``token_level_loss``, and overlong shaping (``overlong_filtering`` here,
``RewardConfig.overlong_punishment`` for the soft length penalty). Naive GRPO is all four off
(preset ``grpo``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


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
    sample and down while mostly by none (``verimath.envs.curriculum_level``;
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
    """How the final answer is found: one of ``verimath.rewards.extract.STYLES`` (``dapo``:
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
        from verimath.rewards.equivalence import MODES, check_timeout
        from verimath.rewards.extract import STYLES

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


@dataclass(frozen=True)
class AlgoConfig:
    clip_higher: bool = True
    """Decoupled clipping: ratio clipped to ``[1 - eps_low, 1 + eps_high]``; off uses
    ``eps_low`` on both sides (PPO/GRPO)."""
    eps_low: float = 0.2
    """Lower clip range."""
    eps_high: float = 0.28
    """Upper clip range when ``clip_higher`` is on."""
    dual_clip: float | None = None
    """Dual-clip constant ``c > 1`` for negative advantages; ``None`` disables it."""
    dynamic_sampling: bool = True
    """Keep only groups with ``0 < #correct < G``; generate more rounds until
    ``train_prompts`` such groups are collected."""
    train_prompts: int = 32
    """Groups trained on per step."""
    max_gen_rounds: int = 4
    """Cap on generation rounds per step; at the cap the step trains on what it has."""
    adaptive_rounds: bool = True
    """Size each generation round after the first to what is missing: ``round_margin x
    missing / informative rate`` prompts (at least ``min_round_prompts``, at most
    ``rollout.gen_prompts``); off, every round generates ``rollout.gen_prompts`` prompts."""
    round_margin: float = 1.25
    """Safety factor of adaptive rounds (1.0 asks for exactly the expected number)."""
    min_round_prompts: int = 4
    """Smallest adaptive round, so that the engine still gets a useful batch."""
    max_staleness: int = 1
    """Informative groups beyond ``train_prompts`` are kept and trained on at a later step,
    at most this many steps after they were generated (their ratio is taken against the
    policy that sampled them); 0 discards them (the paper's behaviour)."""
    token_level_loss: bool = True
    """Token-mean aggregation over the whole step; off is GRPO's mean of per-response means."""
    loss_aggregation: str | None = None
    """Name of the loss aggregation (``token-mean``, ``seq-mean-token-mean``,
    ``seq-mean-token-sum-norm`` as in Dr. GRPO, or a registered one); None follows
    ``token_level_loss``."""
    policy_loss: str = "clip"
    """Name of the per-token policy loss: ``clip`` (PPO's clipped surrogate, with
    clip-higher and the dual clip) or ``cispo`` (clipped importance weight, every token keeps
    a gradient), or a registered one."""
    overlong_filtering: bool = True
    """Truncated responses get a zero loss mask."""
    ppo_epochs: int = 1
    """Passes over each step's rollouts."""
    mini_batch_prompts: int = 32
    """Groups per optimizer update; ``train_prompts / mini_batch_prompts`` updates per epoch."""
    mini_batch_by: str = "sequence"
    """How mini-batches are formed: ``sequence`` shuffles the sequences of all groups (each
    update sees samples of every prompt, as TRL does), ``group`` keeps whole groups
    together (``mini_batch_prompts`` groups per update). Advantages are per group either way."""
    micro_batch_size: int = 64
    """Sequences per forward/backward (gradient accumulation, exact global token count)."""
    activation_checkpointing: bool = False
    """Recompute each decoder layer's activations in the backward pass (less memory, about a
    third more compute); used with several processes (FSDP) and on one alike."""
    logprob_chunk_size: int = 1024
    """Memory bound of the policy forward: the output head is applied to at most this many
    response positions at a time (log-prob of the taken token and entropy per chunk, each
    chunk recomputed in the backward pass), so full ``(batch, length, vocabulary)`` logits
    are never held; the extra memory is a few float32 ``(chunk, vocabulary)`` tensors (0.6 GB
    each for 1024 x 152k). Gradients
    are those of the unchunked forward. 0 computes full logits in one piece (fine for small
    vocabularies). Models whose head is not a plain projection fall back to full logits."""
    adv_eps: float = 1e-6
    """Added to the group std in the advantage."""
    kl_coef: float = 0.0
    """Coefficient of a KL penalty to the initial model; 0 (DAPO's default) keeps no
    reference model."""
    rollout_is_cap: float = 0.0
    """Truncated importance sampling against the rollout engine: weight each token's loss by
    ``min(pi_old / pi_engine, cap)``, correcting for an engine (vLLM) whose sampling
    distribution differs slightly from the trainer's; 0 disables it (e.g. 2.0 when on)."""

    def __post_init__(self) -> None:
        _require(0 <= self.eps_low < 1, f"algo.eps_low must be in [0, 1), got {self.eps_low}")
        _require(self.eps_high >= 0, f"algo.eps_high must be >= 0, got {self.eps_high}")
        _require(not self.clip_higher or self.eps_high >= self.eps_low,
                 f"algo.eps_high ({self.eps_high}) is below algo.eps_low ({self.eps_low}): "
                 "clip-higher widens the upper clip range, so eps_high must be >= eps_low "
                 "(DAPO: 0.2 and 0.28); set algo.clip_higher=false for one symmetric range")
        _require(self.dual_clip is None or self.dual_clip > 1,
                 f"algo.dual_clip must be > 1 or null, got {self.dual_clip}")
        _require(self.train_prompts >= 1, f"algo.train_prompts must be >= 1, got {self.train_prompts}")
        _require(self.max_gen_rounds >= 1,
                 f"algo.max_gen_rounds must be >= 1, got {self.max_gen_rounds}")
        _require(self.ppo_epochs >= 1, f"algo.ppo_epochs must be >= 1, got {self.ppo_epochs}")
        _require(1 <= self.mini_batch_prompts <= self.train_prompts,
                 f"algo.mini_batch_prompts ({self.mini_batch_prompts}) must be in "
                 f"1..algo.train_prompts ({self.train_prompts})")
        _require(self.micro_batch_size >= 1,
                 f"algo.micro_batch_size must be >= 1, got {self.micro_batch_size}")
        _require(self.logprob_chunk_size >= 0,
                 f"algo.logprob_chunk_size must be >= 0 (0 disables chunking), got "
                 f"{self.logprob_chunk_size}")
        _require(self.adv_eps >= 0, f"algo.adv_eps must be >= 0, got {self.adv_eps}")
        _require(self.kl_coef >= 0, f"algo.kl_coef must be >= 0, got {self.kl_coef}")
        _require(self.mini_batch_by in ("sequence", "group"),
                 f"algo.mini_batch_by must be sequence or group, got {self.mini_batch_by!r}")
        _require(self.round_margin >= 1,
                 f"algo.round_margin must be >= 1, got {self.round_margin}")
        _require(self.min_round_prompts >= 1,
                 f"algo.min_round_prompts must be >= 1, got {self.min_round_prompts}")
        _require(self.max_staleness >= 0,
                 f"algo.max_staleness must be >= 0, got {self.max_staleness}")
        _require(self.rollout_is_cap == 0 or self.rollout_is_cap >= 1,
                 f"algo.rollout_is_cap must be 0 (off) or >= 1, got {self.rollout_is_cap}")
        from verimath.trainer.algo.aggregation import AGGREGATIONS
        from verimath.trainer.algo.loss import POLICY_LOSSES

        _require(self.loss_aggregation is None or self.loss_aggregation in AGGREGATIONS,
                 f"algo.loss_aggregation must be null or one of {', '.join(AGGREGATIONS)}, "
                 f"got {self.loss_aggregation!r}")
        _require(self.policy_loss in POLICY_LOSSES,
                 f"algo.policy_loss must be one of {', '.join(POLICY_LOSSES)}, "
                 f"got {self.policy_loss!r}")
        _require(self.dual_clip is None or self.policy_loss == "clip",
                 "algo.dual_clip applies to algo.policy_loss=clip only; set it to null")

    @property
    def clip_range(self) -> tuple[float, float]:
        """``(eps_low, eps_high)`` actually used by the loss."""
        return self.eps_low, (self.eps_high if self.clip_higher else self.eps_low)

    @property
    def aggregation(self) -> str:
        """The aggregation actually used: ``loss_aggregation``, else ``token-mean`` with
        ``token_level_loss`` (DAPO) and ``seq-mean-token-mean`` without (GRPO)."""
        if self.loss_aggregation is not None:
            return self.loss_aggregation
        return "token-mean" if self.token_level_loss else "seq-mean-token-mean"


@dataclass(frozen=True)
class OptimConfig:
    steps: int = 100
    """RL steps (one step = rollouts, then ``ppo_epochs`` of updates)."""
    lr: float = 1e-6
    """Peak AdamW learning rate."""
    warmup_steps: int = 20
    """Linear warm-up, in optimizer updates."""
    schedule: str = "constant"
    """After warm-up: ``constant``, ``linear`` or ``cosine`` decay to 0 at the last update."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    betas: tuple[float, float] = (0.9, 0.999)
    """AdamW betas."""
    grad_clip: float = 1.0
    """Max global gradient norm; 0 disables clipping."""
    seed: int = 0
    """Seed of torch, sampling and the problem streams."""
    max_skipped_updates: int = 5
    """An update whose gradient is NaN or inf is skipped (and logged as ``optim/skipped``);
    this many in a row stop the run with a checkpoint."""

    def __post_init__(self) -> None:
        _require(self.steps >= 0, f"optim.steps must be >= 0, got {self.steps}")
        _require(self.max_skipped_updates >= 1,
                 f"optim.max_skipped_updates must be >= 1, got {self.max_skipped_updates}")
        _require(self.lr > 0, f"optim.lr must be > 0, got {self.lr}")
        _require(self.warmup_steps >= 0, f"optim.warmup_steps must be >= 0, got {self.warmup_steps}")
        from verimath.trainer.algo.schedule import SCHEDULES

        _require(self.schedule in SCHEDULES, f"optim.schedule must be one of "
                                             f"{', '.join(SCHEDULES)}, got {self.schedule!r}")
        _require(len(self.betas) == 2 and all(0 <= b < 1 for b in self.betas),
                 f"optim.betas must be two numbers in [0, 1), got {self.betas}")
        _require(self.grad_clip >= 0, f"optim.grad_clip must be >= 0, got {self.grad_clip}")


@dataclass(frozen=True)
class WarmstartConfig:
    steps: int = 0
    """Supervised steps before RL on procedural problems with their gold answers
    (0 skips the phase; the tiny preset uses it so the model starts right part of the time)."""
    batch_size: int = 64
    """Problems per supervised step."""
    lr: float = 2e-3
    """AdamW learning rate of the supervised phase (constant)."""
    answer_prefix: str = "Answer: "
    """Target text before the gold answer."""
    noise: float = 0.0
    """Fraction of targets given a wrong integer answer (gold + one of -10, -1, +1, +10), so
    that the model starts RL right only part of the time when sampling; with
    ``targets=solution``, the fraction of worked solutions given one of ``flaws``."""
    flaws: tuple[str, ...] = ("slip",)
    """Flaws of the noisy worked solutions (``targets=solution``), drawn uniformly:
    ``slip`` (a running total off by one, so a wrong answer) and ``recheck`` (the lines
    written twice before the answer: long, cut off by a response cap near the solution's
    length); see ``verimath.envs.flawed_solution``."""
    pretrained: bool = False
    """Also run the warm start on a model loaded from ``model.path``; off (the default), such
    a model starts RL as given and the warm start applies to the built tiny model only."""
    targets: str = "answer"
    """``answer``: targets ``answer_prefix + gold``; ``solution``: each problem's worked
    solution (``meta["solution"]``, e.g. the Chain family's running totals)."""
    target_accuracy: float | None = None
    """Stop once the sampled accuracy (avg@eval.k at rollout.temperature) on a fixed probe set
    reaches this on ``target_checks`` consecutive checks; ``steps`` is then the cap (null: run
    ``steps``)."""
    eval_every: int = 50
    """Steps between probe checks (with ``target_accuracy``)."""
    target_checks: int = 2
    """Consecutive probe checks at or above ``target_accuracy`` needed to stop."""
    near_every: int = 0
    """Steps between probe checks once one has reached half ``target_accuracy`` (0: keep
    ``eval_every``): a steep rise is then caught close to the target."""
    probe_problems: int = 100
    """Problems of the probe set (seed ``probe_seed``, apart from held-out and training)."""
    fine_every: int = 0
    """Bracket the stop (0: off): the first probe check at or above ``target_accuracy`` rolls
    the warm start back to the check before it and trains that gap again with a check on
    the fine probe set every ``fine_every`` steps; the first fine check at or above the
    target stops, keeping whichever weights of it and the check before it are closer to the
    target (``target_checks`` must be 1)."""
    fine_probe_problems: int = 400
    """Problems of the fine probe set (with ``fine_every``): the probe set's problems first,
    then more of its stream."""
    fine_tolerance: float = 0.01
    """With ``fine_every``: when the closer of the two fine checks around the crossing misses
    the target by more than this, their gap is trained again with a fine check every step."""
    probe_seed: int = 24680
    """Seed of the probe set's problem stream and of its sampling."""

    def __post_init__(self) -> None:
        _require(self.steps >= 0, f"warmstart.steps must be >= 0, got {self.steps}")
        _require(self.batch_size >= 1, f"warmstart.batch_size must be >= 1, got {self.batch_size}")
        _require(self.lr > 0, f"warmstart.lr must be > 0, got {self.lr}")
        _require(0 <= self.noise <= 1, f"warmstart.noise must be in [0, 1], got {self.noise}")
        _require(self.targets in ("answer", "solution"),
                 f"warmstart.targets must be 'answer' or 'solution', got {self.targets!r}")
        from verimath.envs.gen_chain import FLAWS
        _require(bool(self.flaws) and all(f in FLAWS for f in self.flaws),
                 f"warmstart.flaws must be a non-empty list of {list(FLAWS)}, got {list(self.flaws)}")
        _require(self.target_accuracy is None or 0 < self.target_accuracy <= 1,
                 f"warmstart.target_accuracy must be in (0, 1] or null, got {self.target_accuracy}")
        _require(self.eval_every >= 1, f"warmstart.eval_every must be >= 1, got {self.eval_every}")
        _require(self.near_every >= 0, f"warmstart.near_every must be >= 0, got {self.near_every}")
        _require(self.target_checks >= 1,
                 f"warmstart.target_checks must be >= 1, got {self.target_checks}")
        _require(self.probe_problems >= 1,
                 f"warmstart.probe_problems must be >= 1, got {self.probe_problems}")
        _require(self.fine_every >= 0, f"warmstart.fine_every must be >= 0, got {self.fine_every}")
        _require(not self.fine_every or self.target_checks == 1,
                 "warmstart.fine_every keeps the check closest to the target: set "
                 f"warmstart.target_checks to 1, got {self.target_checks}")
        _require(0 <= self.fine_tolerance <= 1,
                 f"warmstart.fine_tolerance must be in [0, 1], got {self.fine_tolerance}")
        _require(self.fine_probe_problems >= self.probe_problems,
                 f"warmstart.fine_probe_problems ({self.fine_probe_problems}) must be >= "
                 f"warmstart.probe_problems ({self.probe_problems})")


@dataclass(frozen=True)
class EvalConfig:
    num_problems: int = 200
    """Held-out problems (never used in training)."""
    k: int = 4
    """Samples per problem for avg@k at the training temperature."""
    every: int = 0
    """Evaluate every N RL steps as well (0: only before and after RL)."""
    seed: int = 12345
    """Seed of the held-out problem stream (distinct from ``data.seed``)."""
    batch_size: int = 256
    """Prompts per generation batch during evaluation."""

    def __post_init__(self) -> None:
        _require(self.num_problems >= 0, f"eval.num_problems must be >= 0, got {self.num_problems}")
        _require(self.k >= 1, f"eval.k must be >= 1, got {self.k}")
        _require(self.every >= 0, f"eval.every must be >= 0, got {self.every}")
        _require(self.batch_size >= 1, f"eval.batch_size must be >= 1, got {self.batch_size}")


@dataclass(frozen=True)
class LoggingConfig:
    output_dir: str | None = None
    """Run directory; ``None`` makes a new folder ``runs/<preset>-<timestamp>``."""
    save_every: int = 50
    """Checkpoint every N RL steps (and always at the end); 0 saves only at the end."""
    keep_checkpoints: int = 2
    """Periodic checkpoints kept on disk (the newest ones)."""
    progress: bool = True
    """Show a tqdm progress bar."""
    print_every: int = 10
    """Print a metric line (reward, accuracy, kept groups, entropy, response length, clip
    fractions, tokens/s) every N RL steps and at the last one, beside the progress bar or
    without it; 0 prints none."""
    plot: bool = True
    """Write ``learning_curve.png`` at the end (needs matplotlib)."""
    backends: tuple[str, ...] = ("jsonl",)
    """Where step metrics go: ``jsonl`` (``metrics.jsonl``, written even when not listed),
    ``tensorboard`` (event files in ``<run dir>/tensorboard``, needs ``verimath[tensorboard]``)
    and ``wandb`` (a Weights & Biases run stored in ``<run dir>/wandb``, needs
    ``verimath[wandb]``)."""
    wandb_project: str = "verimath"
    """W&B project of the run (with ``wandb`` in ``backends``)."""
    wandb_mode: str | None = None
    """W&B mode: ``online``, ``offline`` (no network; ``wandb sync`` uploads later) or
    ``disabled``; ``None`` leaves it to W&B (``$WANDB_MODE``, else online)."""

    def __post_init__(self) -> None:
        _require(self.save_every >= 0, f"logging.save_every must be >= 0, got {self.save_every}")
        _require(self.print_every >= 0,
                 f"logging.print_every must be >= 0 (0 prints no metric lines), got "
                 f"{self.print_every}")
        _require(self.keep_checkpoints >= 1,
                 f"logging.keep_checkpoints must be >= 1, got {self.keep_checkpoints}")
        from verimath.trainer.run.metrics import check_backends

        check_backends(self.backends)  # ValueError naming logging.backends
        _require(self.wandb_mode in (None, "online", "offline", "disabled"),
                 f"logging.wandb_mode must be online, offline, disabled or null, got "
                 f"{self.wandb_mode!r}")


@dataclass(frozen=True)
class TrainConfig:
    """A complete training run; see each section's fields."""

    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    warmstart: WarmstartConfig = field(default_factory=WarmstartConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)

    def __post_init__(self) -> None:
        r, a = self.rollout, self.reward
        _require(not a.overlong_punishment or a.overlong_buffer <= r.max_new_tokens,
                 f"reward.overlong_buffer ({a.overlong_buffer}) must be <= "
                 f"rollout.max_new_tokens ({r.max_new_tokens}), or set "
                 "reward.overlong_punishment=false")
        _require(self.algo.dynamic_sampling or self.algo.train_prompts <= r.gen_prompts,
                 f"without dynamic sampling a step trains on one generation round: "
                 f"algo.train_prompts ({self.algo.train_prompts}) must be <= "
                 f"rollout.gen_prompts ({r.gen_prompts})")
        reachable = r.gen_prompts * self.algo.max_gen_rounds
        _require(self.algo.train_prompts <= reachable,
                 f"algo.train_prompts ({self.algo.train_prompts}) can never be collected: "
                 f"rollout.gen_prompts ({r.gen_prompts}) x algo.max_gen_rounds "
                 f"({self.algo.max_gen_rounds}) = {reachable} groups at most per step; raise "
                 "one of them or lower algo.train_prompts")

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (tuples as lists), the form written to YAML and checkpoints."""
        return _plain(dataclasses.asdict(self))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
