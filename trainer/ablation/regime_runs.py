"""``verimath ablate --mechanisms``: each regime's runs, seed by seed, measured and recorded.

Layout of the output directory (``--output-dir``, default ``ablations/mechanisms``)::

    <regime>/warmstart/seed<k>/stage<i>/   the warm start's stages (``optim.steps=0`` runs)
    <regime>/<arm>/seed<k>/                 an arm's training run from the last stage's model
    <regime>/*.log                          their console output, beside each directory

A seed of a regime runs its warm-start stages one after the other, then its arms (``--workers``
at a time), measures each arm (:func:`verimath.trainer.ablation.regimes.measure_run`) and adds
one record to the results file (:mod:`verimath.trainer.ablation.results`) before the next
seed starts, so an interrupted session loses at most the seed in progress. Finished runs are
reused on a rerun (:func:`verimath.trainer.ablation.runs.plan_run`). CPU seconds are counted
per process (``os.wait4``) and for the probes in this process.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from verimath.trainer.ablation.regimes import Regime, measure_run
from verimath.trainer.ablation.runs import (
    FINAL_MODEL,
    RunJob,
    execute,
    plan_run,
    seed_overrides,
    train_command,
)

PILOT_SEED_START = 100
"""Pilot seeds (``--pilot``) count from here, apart from the confirmatory seeds (from 0)."""
BASE = ("logging.progress=false", "logging.plot=false", "model.threads=1")


def stage_jobs(regime: Regime, seed: int, output: Path) -> list[RunJob]:
    """The warm-start stages of one seed, in order; stage ``i > 0`` starts from stage
    ``i - 1``'s model."""
    jobs: list[RunJob] = []
    for i, stage in enumerate(regime.warm_start):
        run_dir = output / regime.name / "warmstart" / f"seed{seed}" / f"stage{i}"
        start = [f"model.path={(jobs[-1].run_dir / FINAL_MODEL).resolve()}"] if jobs else []
        jobs.append(RunJob(f"{regime.name}/warmstart/seed{seed}/stage{i}", run_dir,
                           [*BASE, *seed_overrides(seed), "optim.steps=0", *start, *stage]))
    return jobs


def arm_jobs(regime: Regime, seed: int, output: Path, model: Path) -> list[RunJob]:
    """One run per arm of one seed, each from ``model`` with no warm start of its own."""
    return [RunJob(f"{regime.name}/{arm.name}/seed{seed}",
                   output / regime.name / arm.name / f"seed{seed}",
                   [*BASE, *arm.overrides, *seed_overrides(seed), f"model.path={model}",
                    "warmstart.steps=0"])
            for arm in regime.arms]


def seed_jobs(regime: Regime, seed: int, output: Path) -> tuple[list[RunJob], list[RunJob]]:
    """``(stages, arms)`` of one seed, each job's action planned from its directory."""
    stages = stage_jobs(regime, seed, output)
    arms = arm_jobs(regime, seed, output, (stages[-1].run_dir / FINAL_MODEL).resolve())
    for job in stages + arms:
        plan_run(job, regime.preset)
    return stages, arms


def describe(regime: Regime, seeds: list[int], output: Path) -> list[str]:
    """The dry run's lines for one regime: what was built in, the arms, the commands."""
    lines = [f"{regime.name} (preset {regime.preset}): {regime.built_in}"]
    lines += [f"  arm {arm.name}: {arm.label}" for arm in regime.arms]
    lines += [f"  effect {e.control} ({e.kind}{'' if e.primary else ', context'}): "
              f"{e.metric}, {e.on} - {e.off}, paper's sign {e.paper_sign:+d}"
              for e in regime.effects]
    for seed in seeds:
        stages, arms = seed_jobs(regime, seed, output)
        for job in stages + arms:
            if job.action == "done":
                lines.append(f"  {job.name}: done")
                continue
            argv = ["verimath", *train_command(job, regime.preset)[3:]]
            lines.append("  " + " ".join(shlex.quote(a) for a in argv))
    return lines


def run_seed(regime: Regime, seed: int, output: Path, *, workers: int, phase: str,
             results: Path, echo: Callable[[str], None]) -> dict | None:
    """Train, measure and record one seed of a regime; the record, or None when a run
    failed (its log is named)."""
    from verimath.trainer.ablation.results import add_record, design_of, provenance

    load_start, start = os.getloadavg()[0], time.perf_counter()
    stages, arms = seed_jobs(regime, seed, output)
    for job in [*stages, arms]:
        batch = job if isinstance(job, list) else [job]
        execute(batch, regime.preset, workers=workers, echo=echo)
        failed = [j for j in batch if not j.ok]
        if failed:
            for j in failed:
                echo(f"{j.name} did not finish ({j.reason or f'exit code {j.returncode}'}), "
                     f"see {j.log}")
            return None
    cpu = {"warm_start": sum(j.cpu_seconds for j in stages)}
    measures = {}
    for arm, job in zip(regime.arms, arms):
        cpu[arm.name] = job.cpu_seconds
        before = time.process_time()
        measures[arm.name] = measure_run(regime, job.run_dir, job.overrides)
        cpu["probes"] = cpu.get("probes", 0.0) + time.process_time() - before
    reused = [j.name for j in stages + arms if j.action == "done"]
    cpu["total"] = sum(cpu.values())
    record = {"regime": regime.name, "seed": seed, "phase": phase, "design": design_of(regime),
              "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "arms": measures, "cpu_seconds": cpu, "reused_runs": reused,
              "wall_seconds": time.perf_counter() - start,
              "load_1min": [load_start, os.getloadavg()[0]], **provenance()}
    add_record(results, record)
    echo(f"{regime.name} seed {seed}: recorded in {results} ({cpu['total']:.0f} CPU-s"
         + (f"; reused {len(reused)} finished runs" if reused else "") + ")")
    return record
