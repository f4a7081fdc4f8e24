"""When the supervised warm start stops: probe checks against a target accuracy.

:func:`train_until` calls a training step and, on the schedule of a :class:`StopRule`, a
probe evaluator. Without ``fine_every`` it stops after ``checks`` consecutive checks at or
above the target. With ``fine_every`` the stop is bracketed and the weights chosen:

1. checks every ``every`` steps (every ``near_every`` once a check reaches half the target)
   with the cheap evaluator; each check below the target keeps a snapshot of the trainer;
2. the first check at or above the target does not stop: the trainer is restored to the
   last check below it, which the fine (larger, less noisy) evaluator scores again, and
   the gap is trained again with a fine check every ``fine_every`` steps (every
   ``near_every`` first if the gap was longer; the training is the same function of the
   snapshot, so the replay retraces the same path);
3. the first fine check at or above the target stops, keeping whichever weights of it and
   the check before it (fine-scored) are closer to the target, so a steep rise does not
   carry the model past the target by a whole gap; if even the closer one misses the target
   by more than ``tolerance``, that last gap is trained again with a fine check every step
   first. A replayed gap that stays below the target (the cheap probe's noise) goes on at
   ``near_every`` with the fine evaluator.

The model's step never exceeds ``steps``; a replay trains its gap again (counted in
``trained``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StopRule:
    """Stop once the probe accuracy is ``>= target`` on ``checks`` consecutive evaluations,
    one every ``every`` steps, or every ``near_every`` steps once a check has reached half
    the target (0: always ``every``); ``target=None``: run every step. ``fine_every > 0``
    brackets the crossing instead (module docstring; ``checks`` is then 1), down to single
    steps while the closer fine check misses the target by more than ``tolerance``."""

    target: float | None = None
    every: int = 50
    checks: int = 2
    near_every: int = 0
    fine_every: int = 0
    tolerance: float = 0.01

    def __post_init__(self) -> None:
        if self.fine_every and self.checks != 1:
            raise ValueError(f"a bracketed stop (fine_every={self.fine_every}) keeps the check "
                             f"closest to the target; checks must be 1, got {self.checks}")


@dataclass
class Trainer:
    """What :func:`train_until` drives: ``step()`` trains one step; with a bracketed rule
    also ``snapshot()`` (an opaque copy of everything the next steps depend on) and
    ``restore(snapshot)``."""

    step: Callable[[], Any]
    snapshot: Callable[[], Any] | None = None
    restore: Callable[[Any], None] | None = None


def train_until(train_step: Callable[[], Any] | Trainer,
                evaluate: Callable[[], float] | None, *, steps: int, rule: StopRule,
                evaluate_fine: Callable[[], float] | None = None) -> dict:
    """Train up to ``steps`` steps, checking ``evaluate()`` as :class:`StopRule` says.
    Returns ``steps`` (the model's step), ``reached``, ``history`` (``(step, accuracy)`` of
    every check, in the order run) and ``trained`` (steps trained, replays included); a
    bracketed stop also ``accuracy`` (the kept weights' fine accuracy) and, when it chose
    between two fine checks, ``bracket`` (``(step, accuracy)`` of the one below the target
    and of the one at or above it)."""
    trainer = train_step if isinstance(train_step, Trainer) else Trainer(train_step)
    if rule.fine_every and rule.target is not None:
        if trainer.snapshot is None or trainer.restore is None or evaluate_fine is None:
            raise ValueError("a bracketed stop (fine_every > 0) needs snapshot, restore and "
                             "evaluate_fine")
        return _bracketed(trainer, evaluate, evaluate_fine, steps=steps, rule=rule)
    history: list[tuple[int, float]] = []
    hits, next_check = 0, rule.every
    for step in range(1, steps + 1):
        trainer.step()
        if rule.target is None or step < next_check:
            continue
        accuracy = float(evaluate())
        history.append((step, accuracy))
        hits = hits + 1 if accuracy >= rule.target else 0
        if hits >= rule.checks:
            return {"steps": step, "reached": True, "history": history, "trained": step}
        near = rule.near_every and max(a for _, a in history) >= rule.target / 2
        next_check = step + (rule.near_every if near else rule.every)
    return {"steps": steps, "reached": False, "history": history, "trained": steps}


def _bracketed(trainer: Trainer, evaluate, evaluate_fine, *, steps: int, rule: StopRule) -> dict:
    """The bracketed stop of the module docstring."""
    history: list[tuple[int, float]] = []
    step, trained, fine = 0, 0, False
    below = (0, None, trainer.snapshot())  # (step, fine accuracy or None, snapshot)
    bracket_end, inner = 0, rule.fine_every  # checks every `inner` steps up to bracket_end
    while step < steps:
        gap = inner if step < bracket_end else _gap(rule, history)
        for _ in range(min(gap, steps - step)):
            trainer.step()
            step, trained = step + 1, trained + 1
        accuracy = float((evaluate_fine if fine else evaluate)())
        history.append((step, accuracy))
        if accuracy < rule.target:
            below = (step, accuracy if fine else None, trainer.snapshot())
            continue
        if gap <= rule.fine_every and below[1] is not None:
            miss = min(rule.target - below[1], accuracy - rule.target)
            if gap == 1 or miss <= rule.tolerance:
                return _closest(trainer, rule.target, below, (step, accuracy), history, trained)
        # a crossing after a longer gap: train that gap again, checking more often
        bracket_end, fine = step, True
        inner = rule.near_every if rule.fine_every < rule.near_every < gap else \
            rule.fine_every if rule.fine_every < gap else 1
        step, accuracy, snap = below
        trainer.restore(snap)
        if accuracy is None:  # scored by the cheap probe only
            accuracy = float(evaluate_fine())
            history.append((step, accuracy))
            if accuracy >= rule.target:  # already there by the fine probe
                return {"steps": step, "reached": True, "history": history, "trained": trained,
                        "accuracy": accuracy}
            below = (step, accuracy, snap)
    return {"steps": steps, "reached": False, "history": history, "trained": trained}


def _gap(rule: StopRule, history: list[tuple[int, float]]) -> int:
    """Steps to the next check outside a bracket: ``near_every`` once a check reached half
    the target, else ``every``."""
    near = rule.near_every and history and max(a for _, a in history) >= rule.target / 2
    return rule.near_every if near else rule.every


def _closest(trainer: Trainer, target: float, below: tuple, above: tuple[int, float],
             history: list, trained: int) -> dict:
    """Keep the weights of ``below`` (restored) or ``above`` (current), whichever accuracy is
    closer to ``target`` (a tie keeps ``above``)."""
    (low_step, low, snap), (high_step, high) = below, above
    out = {"reached": True, "history": history, "trained": trained,
           "bracket": ((low_step, low), (high_step, high))}
    if target - low < high - target:
        trainer.restore(snap)
        return {"steps": low_step, "accuracy": low, **out}
    return {"steps": high_step, "accuracy": high, **out}


def describe_stop(result: dict, rule: StopRule, cap: int) -> str:
    """One line on where the warm start stopped and why."""
    checks = ", ".join(f"{s}: {a:.3f}" for s, a in result["history"][-4:])
    if result["reached"] and rule.fine_every:
        return (f"warm start: probe accuracy crossed {rule.target:g}; kept the weights of step "
                f"{result['steps']} (fine probe accuracy {result['accuracy']:.3f}, the check "
                f"closest to the target; {result['trained']} steps trained of at most {cap}, "
                f"replays included) ({checks})")
    if result["reached"]:
        return (f"warm start: probe accuracy >= {rule.target:g} on {rule.checks} consecutive "
                f"checks, stopped at step {result['steps']} of at most {cap} ({checks})")
    return (f"warm start: CAP REACHED: warmstart.steps={cap} ran out before the probe accuracy "
            f"reached {rule.target:g} on {rule.checks} consecutive checks ({checks}); RL starts "
            "below the target: raise warmstart.steps or lower warmstart.target_accuracy")
