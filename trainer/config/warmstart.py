"""The ``warmstart`` section: the supervised warm start before RL."""

from __future__ import annotations

from dataclasses import dataclass

from verimath.trainer.config.checks import require as _require


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
    noise_after: float = 0.0
    """With ``target_accuracy``: clean targets until a probe check reaches this accuracy, the
    ``noise`` share from the next step on (0: from the first step). Flaws slow the learning of
    the task itself: on Chain with 40% flawed solutions from the start, one seed of six stayed
    near 4% for 1,300 steps."""
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
        _require(self.noise_after == 0 or (self.target_accuracy is not None
                                           and 0 < self.noise_after < self.target_accuracy),
                 "warmstart.noise_after must be 0, or in (0, warmstart.target_accuracy) with a "
                 f"target accuracy set; got {self.noise_after} (target "
                 f"{self.target_accuracy})")
        _require(self.targets in ("answer", "solution"),
                 f"warmstart.targets must be 'answer' or 'solution', got {self.targets!r}")
        from verimath.envs.generators.chain import FLAWS
        _require(bool(self.flaws) and all(f in FLAWS for f in self.flaws),
                 f"warmstart.flaws must be a non-empty list of {list(FLAWS)}, got "
                 f"{list(self.flaws)}")
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
