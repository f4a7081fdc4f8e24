"""Regimes built so that one DAPO control's failure occurs, and what each one measures.

A leave-one-out ablation on a task where a control has nothing to act on says nothing about
the control (the chain reports: the upper clip bound on 0.01% of the tokens). Each regime
here is constructed instead: a warm start and settings that put the failure a control was
made for in front of it, then the runs with the control on and off from the same warm start,
seed by seed. What was built in is said per regime; none of it is a claim about 32B models.

==================  ================================  ======================================
regime              built in                          mechanism (control on - off)
==================  ================================  ======================================
``clip-higher``     right answers start with one of   mass on that token (+), entropy
                    nine openings the warm start
                    leaves about equally likely;
                    8 updates per rollout
``token-level``     a start that sometimes loops on   wrong responses' length (-) and
                    a line and answers wrong (long)   repeated lines (-)
``overlong``        a cap that cuts the answer of     filter: right working (+);
                    the right working of half of the  soft punishment: truncation (-)
                    problems; a short answer that is
                    sometimes right
``overlong-rare``   the same cut on 15% of the        filter: right working (+)
                    problems (occasional truncation)
``dynamic-sampling`` few informative groups: most     informative groups per update (+)
                    are all right
==================  ================================  ======================================

A regime's warm start runs once per seed as one or more stages (each a ``verimath train``
run with ``optim.steps=0``, a later stage starting from the earlier one's model), then each
arm trains from it. :func:`measure_run` reads one finished arm run: its held-out accuracy,
its training metrics, and the regime's probes of the final checkpoint
(:mod:`verimath.trainer.ablation.probes`).
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Arm:
    """One variant of a regime: a directory name, a label, its overrides of the preset."""

    name: str
    label: str
    overrides: tuple[str, ...]

    def overrides_list(self) -> list[str]:
        return list(self.overrides)


@dataclass(frozen=True)
class Effect:
    """A paired comparison: ``metric`` of arm ``on`` minus arm ``off``, seed by seed."""

    control: str
    kind: str
    """``mechanism`` (what the control acts on) or ``accuracy`` (held-out avg@k)."""
    metric: str
    """A key of :func:`measure_run`'s result (``acc_at_equal_tokens`` is paired apart)."""
    on: str
    off: str
    paper_sign: int
    """The sign of ``on - off`` that the paper's account predicts (+1 or -1)."""
    primary: bool = True
    """Pre-registered as the control's test (others are reported as context)."""


@dataclass(frozen=True)
class Regime:
    name: str
    preset: str
    built_in: str
    """What was constructed, in one sentence."""
    warm_start: tuple[tuple[str, ...], ...]
    """Overrides of each warm-start stage (each a run of the preset with ``optim.steps=0``)."""
    arms: tuple[Arm, ...]
    effects: tuple[Effect, ...]
    probe: str
    """Which probes :func:`measure_run` takes: ``first-token``, ``loops``, ``cap`` or ``none``."""


def _switches(**on: bool) -> tuple[str, ...]:
    keys = {"filter": "algo.overlong_filtering", "clip_higher": "algo.clip_higher",
            "soft": "reward.overlong_punishment", "token": "algo.token_level_loss",
            "dynamic": "algo.dynamic_sampling"}
    return tuple(f"{keys[k]}={'true' if v else 'false'}" for k, v in on.items())


DAPO = {"filter": True, "clip_higher": True, "soft": True, "token": True, "dynamic": True}

FILTER_ARMS = (Arm("none", "neither (a truncated response scores as wrong)",
                   _switches(**{**DAPO, "filter": False, "soft": False})),
               Arm("filter", "overlong filtering",
                   _switches(**{**DAPO, "filter": True, "soft": False})))
"""The overlong regimes' arms without shaping and with the filter alone."""
FILTER_EFFECTS = (
    Effect("overlong filtering", "mechanism", "sound_working", "filter", "none", +1),
    Effect("overlong filtering", "mechanism", "truncated_sound", "filter", "none", +1,
           primary=False),
    Effect("overlong filtering", "accuracy", "acc", "filter", "none", +1))

REGIMES: dict[str, Regime] = {r.name: r for r in (
    Regime(
        name="clip-higher", preset="mech-clip",
        built_in="a warm start on clean worked solutions, then 50 steps on which 95% of the "
                 "targets work the chain from a misread first term (any of the eight other "
                 "leading digits, always wrong), so that the right first token is one of nine "
                 "about equally likely openings and only it can score; 8 updates per rollout "
                 "step",
        warm_start=((), ("warmstart.pretrained=true", "warmstart.noise=0.95",
                         "warmstart.lr=5e-4", "warmstart.flaws=[misread]",
                         "warmstart.steps=50")),
        arms=(Arm("symmetric", "symmetric clip (0.2, 0.2)",
                  _switches(**{**DAPO, "clip_higher": False})),
              Arm("clip-higher", "clip-higher (0.2, 0.28)", _switches(**DAPO))),
        effects=(Effect("clip-higher", "mechanism", "first_token_mass", "clip-higher",
                        "symmetric", +1),
                 Effect("clip-higher", "mechanism", "entropy", "clip-higher", "symmetric", +1,
                        primary=False),
                 Effect("clip-higher", "accuracy", "acc", "clip-higher", "symmetric", +1)),
        probe="first-token"),
    Regime(
        name="token-level", preset="mech-token",
        built_in="a warm start in which 30% of the worked solutions loop on a line 3-6 more "
                 "times and answer that line's total (long, repetitive and wrong); no "
                 "overlong shaping, so length is judged by correctness alone",
        warm_start=((),),
        arms=(Arm("sample-mean", "per-response mean",
                  _switches(**{**DAPO, "token": False, "filter": False, "soft": False})),
              Arm("token-mean", "token mean",
                  _switches(**{**DAPO, "filter": False, "soft": False}))),
        effects=(Effect("token-level loss", "mechanism", "wrong_length", "token-mean",
                        "sample-mean", -1),
                 Effect("token-level loss", "mechanism", "wrong_repeat", "token-mean",
                        "sample-mean", -1, primary=False),
                 Effect("token-level loss", "accuracy", "acc", "token-mean", "sample-mean",
                        +1)),
        probe="loops"),
    Regime(
        name="overlong", preset="mech-overlong",
        built_in="a response cap (32 tokens) that cuts the last digit of the answer of the "
                 "right working of the 55% of problems whose first sum has two digits, and a "
                 "warm start that answers at once (an estimate, right one time in three) in 30% "
                 "of its samples: on those problems right working scores as wrong and only an "
                 "estimate can score",
        warm_start=((),),
        arms=(*FILTER_ARMS, Arm("soft", "soft overlong punishment",
                                _switches(**{**DAPO, "filter": False, "soft": True}))),
        effects=(*FILTER_EFFECTS,
                 Effect("soft overlong punishment", "mechanism", "truncated", "soft", "none",
                        -1),
                 Effect("soft overlong punishment", "accuracy", "acc", "soft", "none", +1)),
        probe="cap"),
    Regime(
        name="overlong-rare", preset="mech-overlong-rare",
        built_in="as overlong, on four-term chains with a 44-token cap that cuts the last "
                 "digit of the answer of the right working of the 15% of problems whose working "
                 "is longest: truncation is occasional, so a truncated response scored as wrong "
                 "is mostly noise against working that is right elsewhere; a warm start three "
                 "times as long",
        warm_start=((),),
        arms=FILTER_ARMS,
        effects=FILTER_EFFECTS,
        probe="cap"),
    Regime(
        name="dynamic-sampling", preset="mech-dyn",
        built_in="a warm start on clean worked solutions, twice as long as the other "
                 "regimes', so that many groups of 8 are all right and carry no gradient",
        warm_start=((),),
        arms=(Arm("all-groups", "every group trained", _switches(**{**DAPO, "dynamic": False})),
              Arm("dynamic", "dynamic sampling", _switches(**DAPO))),
        effects=(Effect("dynamic sampling", "mechanism", "informative_per_update", "dynamic",
                        "all-groups", +1),
                 Effect("dynamic sampling", "accuracy", "acc", "dynamic", "all-groups", +1),
                 Effect("dynamic sampling", "accuracy", "acc_at_equal_tokens", "dynamic",
                        "all-groups", +1, primary=False)),
        probe="none"),
)}
"""The regimes by name, in the order they run."""

METRIC_LABELS = {
    "acc": "held-out avg@k at the last step",
    "acc_at_equal_tokens": "held-out avg@k at equal generated tokens",
    "first_token_mass": "probability of the right first token (held-out prompts)",
    "entropy": "policy entropy, mean over the steps",
    "wrong_length": "wrong responses' length, tokens (held-out samples)",
    "wrong_repeat": "wrong responses with a repeated line (held-out samples)",
    "worked": "responses that work the chain (held-out samples)",
    "sound_working": "responses whose written working is right (held-out samples)",
    "truncated_sound": "truncated responses that are right working cut short",
    "truncated": "truncated responses (held-out samples)",
    "informative_per_update": "informative groups per optimizer update",
}


def select_regimes(only: str | None) -> list[Regime]:
    """The regimes named in ``only`` (comma-separated; all when None), in :data:`REGIMES`
    order; ValueError naming ``--only`` and the choices otherwise."""
    if not only:
        return list(REGIMES.values())
    wanted = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in REGIMES]
    if unknown or not wanted:
        raise ValueError(f"--only: no regime {', '.join(unknown) or repr(only)}; choose from "
                         f"{', '.join(REGIMES)}")
    return [r for r in REGIMES.values() if r.name in wanted]


def _records(run_dir: Path) -> list[dict]:
    from verimath.trainer.run.metrics import read_metrics

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn last line
        return read_metrics(run_dir / "metrics.jsonl")


def training_measures(records: list[dict], k: int) -> dict:
    """What the training metrics say about one run: means over the steps and the curves
    (per step: entropy, response length, training accuracy; per evaluation: the step, the
    generated tokens so far and held-out avg@k)."""
    steps = [r for r in records if "compute/generated_tokens" in r]
    updates = sum(r.get("optim/updates", 0.0) for r in steps)
    informative = sum(min(r.get("sampling/kept_groups", 0.0),
                          r.get("sampling/informative_groups", 0.0)
                          + r.get("sampling/carried_groups", 0.0)) for r in steps)
    tokens, evals, total = {}, [], 0.0
    for r in records:
        total += r.get("compute/generated_tokens", 0.0)
        tokens[int(r["step"])] = total
        if f"eval/avg@{k}" in r:
            evals.append([int(r["step"]), total, float(r[f"eval/avg@{k}"])])

    def mean(key: str) -> float:
        values = [float(r[key]) for r in steps if key in r]
        return float(np.mean(values)) if values else math.nan

    return {
        "entropy": mean("policy/entropy"), "clip_high": mean("clip/frac_high"),
        "clip_high_rare": mean("clip/frac_high_rare"),
        "train_truncated": mean("length/truncated_frac"),
        "train_wrong_length": mean("length/wrong_mean"),
        "informative_per_update": informative / updates if updates else math.nan,
        "generated_tokens": total,
        "curve": {"step": [int(r["step"]) for r in steps],
                  "entropy": [round(float(r.get("policy/entropy", math.nan)), 5) for r in steps],
                  "length": [round(float(r.get("length/mean", math.nan)), 2) for r in steps],
                  "accuracy": [round(float(r.get("reward/accuracy", math.nan)), 4)
                               for r in steps],
                  "eval": evals},
    }


def probe_measures(probe: str, model_dir: Path, config) -> dict[str, float]:
    """The regime's probes of one checkpoint on the run's held-out problems."""
    from verimath.trainer.ablation import probes

    if probe == "none":
        return {}
    model, tokenizer = probes.load_model(model_dir)
    problems = probes.run_problems(config)
    samples = probes.sample(model, tokenizer, problems, config, k=config.eval.k)
    worked = np.array([probes.is_worked(t, p) for t, p in zip(samples.texts, samples.problems)])
    out = {"probe_acc": float(samples.correct.mean()), "worked": float(worked.mean())}
    if probe == "first-token":
        out["first_token_mass"] = probes.first_token_mass(model, tokenizer, problems, config)
    wrong = ~samples.correct
    if probe == "loops":
        repeat = np.array([probes.has_repeated_line(t) for t in samples.texts])
        out["wrong_length"] = float(samples.lengths[wrong].mean()) if wrong.any() else math.nan
        out["wrong_repeat"] = float(repeat[wrong].mean()) if wrong.any() else math.nan
    if probe == "cap":
        cut = samples.truncated
        sound = np.array([probes.is_sound_prefix(t, p)
                          for t, p in zip(samples.texts, samples.problems)])
        out["truncated"] = float(cut.mean())
        out["sound_working"] = float(np.mean([probes.has_sound_working(t, p) for t, p in
                                              zip(samples.texts, samples.problems)]))
        out["truncated_sound"] = float(sound[cut].mean()) if cut.any() else math.nan
    return out


def measure_run(regime: Regime, run_dir: Path, overrides: list[str]) -> dict:
    """One finished arm run (trained with the regime's preset and ``overrides``): held-out
    accuracy before and after RL, the training measures and the regime's probes of the
    final checkpoint."""
    from verimath.trainer.checkpoint.layout import list_checkpoints
    from verimath.trainer.config.files import load_config

    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    config = load_config(regime.preset, overrides, check_required=False)
    out = {"acc": summary["heldout_acc_after_rl"], "acc_before": summary["heldout_acc_before_rl"],
           **training_measures(_records(run_dir), config.eval.k)}
    saved = list_checkpoints(run_dir / "checkpoints")
    if not saved:
        raise ValueError(f"{run_dir}: no checkpoint to probe")
    out.update(probe_measures(regime.probe, saved[-1] / "model", config))
    if regime.probe == "first-token":  # the mass from the start model to the last step
        out["curve"]["first_token_mass"] = [
            [0 if path is None else int(path.name.split("_")[-1]),
             first_token_mass_of(Path(config.model.path) if path is None
                                 else path / "model", config)]
            for path in [None, *saved]]
    return out


def first_token_mass_of(model_dir: Path, config) -> float:
    """:func:`verimath.trainer.ablation.probes.first_token_mass` of a saved model."""
    from verimath.trainer.ablation import probes

    model, tokenizer = probes.load_model(model_dir)
    return probes.first_token_mass(model, tokenizer, probes.run_problems(config), config)
