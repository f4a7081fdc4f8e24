"""The names a setting may take, in a module that imports nothing.

The config's checks read these, so that validating a config imports no implementation (no
torch, no engine). The policy losses, the loss aggregations and the rollout corrections are
registries in ``verimath.trainer.algo``: ``register_policy_loss``, ``register_aggregation`` and
``register_rollout_correction`` add a new name here as well as to their registry, and a test
keeps each list equal to its registry.
"""

from __future__ import annotations

POLICY_LOSS_NAMES: list[str] = ["clip", "cispo", "gspo", "clip-cov", "kl-cov"]
"""``algo.policy_loss``: the keys of ``verimath.trainer.algo.loss.POLICY_LOSSES``."""
ROLLOUT_CORRECTION_NAMES: list[str] = ["none", "token-truncate", "token-mask", "sequence-truncate",
                                       "sequence-mask"]
"""``algo.rollout_correction``: the keys of
``verimath.trainer.algo.correction.ROLLOUT_CORRECTIONS``."""
AGGREGATION_NAMES: list[str] = ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"]
"""``algo.loss_aggregation``: the keys of ``verimath.trainer.algo.aggregation.AGGREGATIONS``."""
SCHEDULES = ("constant", "cosine", "linear")
"""``optim.schedule``: the learning-rate schedules of ``verimath.trainer.algo.schedule``."""
ENGINES = ("hf", "vllm")
"""``rollout.engine``: Hugging Face ``generate`` or vLLM."""
METRIC_BACKENDS = ("jsonl", "tensorboard", "wandb")
"""``logging.backends``: ``metrics.jsonl`` is always written; the others add to it."""
CONVENTION_NAMES = ("default", "strict")
"""``reward.conventions``: the grading conventions ``verimath.rewards`` knows by name
(``as_conventions`` in ``verimath.rewards.equality.conventions``)."""


def add_name(names: list[str], name: str) -> None:
    """Append ``name`` to a registry's name list unless it is there (a registration)."""
    if name not in names:
        names.append(name)
