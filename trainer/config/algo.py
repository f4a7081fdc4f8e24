"""The ``algo`` section: DAPO's switches, the loss, dynamic sampling and batching."""

from __future__ import annotations

import math
from dataclasses import dataclass

from verimath.trainer.config.checks import require as _require
from verimath.trainer.config.choices import (
    AGGREGATION_NAMES,
    POLICY_LOSS_NAMES,
    ROLLOUT_CORRECTION_NAMES,
)

DEFAULT_CORRECTION_CAP = 2.0
"""The bound of a named ``algo.rollout_correction`` when ``algo.rollout_is_cap`` is 0 (verl's
default ``rollout_is_threshold``)."""
STALE_DEFAULT = ("token-truncate", DEFAULT_CORRECTION_CAP)
"""The rollout correction of asynchronous runs that set none (``algo.rollout_correction`` and
``algo.rollout_is_cap`` unset): measured against the alternatives in
docs/experiments/2026-12-04-async-corrections.md."""


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
    clip-higher and the dual clip), ``cispo`` (clipped importance weight, every token keeps
    a gradient), ``gspo`` (one length-normalized ratio per response, clipped per response;
    Zheng et al. 2025), ``clip-cov`` or ``kl-cov`` (the clipped surrogate with the gradient of
    a few high-covariance tokens stopped, or the unclipped one with a KL term on them; Cui et
    al. 2025), or a registered one (``verimath.trainer.algo.loss``)."""
    clip_cov_fraction: float = 2e-4
    """``clip-cov``: share of the loss tokens whose gradient is stopped (at least one token
    per update), drawn among those with a covariance in ``(clip_cov_low, clip_cov_high)``."""
    clip_cov_low: float = 1.0
    """``clip-cov``: lower bound of the covariance of a token that may be chosen."""
    clip_cov_high: float = 5.0
    """``clip-cov``: upper bound of the covariance of a token that may be chosen."""
    kl_cov_fraction: float = 2e-4
    """``kl-cov``: share of the loss tokens (the largest covariances, at least one per update)
    that get the KL term."""
    kl_cov_coef: float = 1.0
    """``kl-cov``: coefficient of ``|log r|`` on the chosen tokens."""
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
    each for 1024 x 152k). Gradients are those of the unchunked forward. 0 computes full
    logits in one piece (fine for small vocabularies). Models whose head is not a plain
    projection fall back to full logits."""
    adv_eps: float = 1e-6
    """Added to the group std in the advantage."""
    kl_coef: float = 0.0
    """Coefficient of a KL penalty to the initial model; 0 (DAPO's default) keeps no
    reference model."""
    rollout_is_cap: float = 0.0
    """The bound ``C`` of the rollout correction. Without ``rollout_correction``: 0 leaves the
    weights off and ``C > 0`` weights each token's loss by ``min(pi_old / pi_behaviour, C)``
    (``token-truncate``), correcting for an engine (vLLM) whose sampling distribution differs
    slightly from the trainer's, or for a group sampled by an older policy. With a named
    ``rollout_correction``, 0 means 2.0."""
    rollout_correction: str | None = None
    """How each token's loss is weighted by ``rho = pi_old / pi_behaviour`` (the policy the
    ratio is taken against over the one that sampled the token: the rollout engine, or an older
    policy for a stale group): ``none``, ``token-truncate`` (``min(rho, C)``), ``token-mask``
    (``rho``, 0 above ``C``), ``sequence-truncate`` / ``sequence-mask`` (the same on the product
    of a response's ratios, for all its tokens), as TRL's ``vllm_importance_sampling_mode``;
    ``verimath.trainer.algo.correction``. None (unset): ``token-truncate`` when
    ``rollout_is_cap`` is set, else, in an asynchronous run with ``proximal_clip`` unset, the
    measured default for stale groups (:data:`STALE_DEFAULT`, token-truncate at 2), else
    none (the untruncated weights with ``proximal_clip=true``)."""
    proximal_clip: bool | None = None
    """For groups sampled by an older policy (``rollout.async_steps``, the surplus): take the
    clip range around the policy at the start of the step (one more forward pass) instead of
    around the sampling policy, and weight each token by ``pi_step_start / pi_sampler``
    through the rollout correction, the decoupled PPO objective (Hilton et al. 2021; AReaL).
    A stale group's first update is then not clipped for the drift it had no part in.
    On-policy groups train exactly as without it. None (unset): on in asynchronous runs
    (``rollout.async_steps >= 1``), off in synchronous ones."""
    proximal_policy: str = "step"
    """The proximal policy of ``proximal_clip``: ``step``, the policy at the start of the step
    (a forward pass over the step's sequences before the updates), or ``update``, the policy at
    the start of each optimizer update, read off that update's own forward pass (no extra pass;
    the ratio is then 1 where the gradient is taken, so no clip binds, and the rollout
    correction's weight ``pi_update_start / pi_sampler`` carries the whole off-policy
    correction, as in AReaL with one update per batch). With several updates a step nothing
    then bounds how far the updates of one step move the policy: at the tiny preset (lr 1e-3,
    4 updates a step) one-step-off runs with ``update`` fell to 0% held-out accuracy on 3 of
    3 seeds where ``step`` ended within 2 points of the synchronous run
    (docs/experiments/2026-12-04-async-corrections.md)."""

    def __post_init__(self) -> None:
        _require(0 <= self.eps_low < 1, f"algo.eps_low must be in [0, 1), got {self.eps_low}")
        _require(self.eps_high >= 0, f"algo.eps_high must be >= 0, got {self.eps_high}")
        _require(not self.clip_higher or self.eps_high >= self.eps_low,
                 f"algo.eps_high ({self.eps_high}) is below algo.eps_low ({self.eps_low}): "
                 "clip-higher widens the upper clip range, so eps_high must be >= eps_low "
                 "(DAPO: 0.2 and 0.28); set algo.clip_higher=false for one symmetric range")
        _require(self.dual_clip is None or self.dual_clip > 1,
                 f"algo.dual_clip must be > 1 or null, got {self.dual_clip}")
        _require(self.train_prompts >= 1,
                 f"algo.train_prompts must be >= 1, got {self.train_prompts}")
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
        _require(self.loss_aggregation is None or self.loss_aggregation in AGGREGATION_NAMES,
                 f"algo.loss_aggregation must be null or one of {', '.join(AGGREGATION_NAMES)}, "
                 f"got {self.loss_aggregation!r}")
        _require(self.policy_loss in POLICY_LOSS_NAMES,
                 f"algo.policy_loss must be one of {', '.join(POLICY_LOSS_NAMES)}, "
                 f"got {self.policy_loss!r}")
        _require(self.dual_clip is None or self.policy_loss == "clip",
                 "algo.dual_clip applies to algo.policy_loss=clip only; set it to null")
        self._check_losses_and_corrections()

    def _check_losses_and_corrections(self) -> None:
        """The settings of the covariance losses and of the rollout correction."""
        for name in ("clip_cov_fraction", "kl_cov_fraction"):
            value = getattr(self, name)
            _require(0 < value <= 1, f"algo.{name} must be in (0, 1] (a share of the loss "
                                     f"tokens, e.g. 2e-4), got {value}")
        _require(self.clip_cov_low < self.clip_cov_high,
                 f"algo.clip_cov_low ({self.clip_cov_low}) must be below algo.clip_cov_high "
                 f"({self.clip_cov_high}): they bound the covariance of the tokens Clip-Cov "
                 "may choose (1 and 5 by default)")
        _require(self.kl_cov_coef >= 0, f"algo.kl_cov_coef must be >= 0, got {self.kl_cov_coef}")
        _require(self.proximal_policy in ("step", "update"),
                 f"algo.proximal_policy must be step or update, got {self.proximal_policy!r}")
        _require(self.rollout_correction is None
                 or self.rollout_correction in ROLLOUT_CORRECTION_NAMES,
                 f"algo.rollout_correction must be null or one of "
                 f"{', '.join(ROLLOUT_CORRECTION_NAMES)}, got {self.rollout_correction!r}")

    @property
    def clip_range(self) -> tuple[float, float]:
        """``(eps_low, eps_high)`` actually used by the loss."""
        return self.eps_low, (self.eps_high if self.clip_higher else self.eps_low)

    def uses_proximal(self, async_steps: int) -> bool:
        """Whether stale groups take their ratio against the policy at the start of the step
        (``proximal_clip``; unset: in asynchronous runs)."""
        return self.proximal_clip if self.proximal_clip is not None else async_steps >= 1

    def correction(self, async_steps: int) -> tuple[str, float]:
        """The rollout correction actually used, ``(mode, C)`` (``C`` may be inf): see
        ``rollout_correction``."""
        if self.rollout_correction is not None:
            return self.rollout_correction, self.rollout_is_cap or DEFAULT_CORRECTION_CAP
        if self.rollout_is_cap > 0:
            return "token-truncate", self.rollout_is_cap
        if self.proximal_clip is None and async_steps >= 1:
            return STALE_DEFAULT
        if self.proximal_clip:
            return "token-truncate", math.inf  # the decoupled objective, untruncated
        return "none", math.inf

    @property
    def loss_options(self) -> dict[str, float]:
        """The numbers of ``policy_loss`` beyond the clip range (for ``LossSettings``)."""
        if self.policy_loss == "clip-cov":
            return {"cov_fraction": self.clip_cov_fraction, "cov_low": self.clip_cov_low,
                    "cov_high": self.clip_cov_high}
        if self.policy_loss == "kl-cov":
            return {"cov_fraction": self.kl_cov_fraction, "kl_cov_coef": self.kl_cov_coef}
        return {}

    @property
    def aggregation(self) -> str:
        """The aggregation actually used: ``loss_aggregation``, else ``token-mean`` with
        ``token_level_loss`` (DAPO) and ``seq-mean-token-mean`` without (GRPO)."""
        if self.loss_aggregation is not None:
            return self.loss_aggregation
        return "token-mean" if self.token_level_loss else "seq-mean-token-mean"
