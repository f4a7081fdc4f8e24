"""The runs of an ablation: one ``verimath train`` process per variant and seed.

Layout of the output directory::

    warmstart/seed<k>/        the supervised warm start of seed k (``optim.steps=0``), once
    warmstart/seed<k>.log     its console output
    <variant>/seed<k>/        a training run (``verimath train --output-dir``)
    <variant>/seed<k>.log     its console output
    ablation.md, ablation.png the report

Every run of a variant sets all five DAPO switches, ``optim.seed`` and ``data.seed``. When
the config has a warm start for the built tiny model, it runs once per seed and every
variant of that seed starts RL from its model (``model.path``, ``warmstart.steps=0``): the
variants differ only after it, and it is not paid fourteen times. ``--warm-starts DIR`` takes
them from ``DIR/seed<k>`` instead (warm starts made once, e.g. to a calibrated target, and
reused by several ablations).

:func:`plan_run` decides what a run directory needs: nothing (``done``: ``summary.json``
is there and the config matches), ``resume`` (a checkpoint and a config that differs at
most in settings safe to change on resume, such as ``optim.steps``), ``restart`` (a run
that died before its first checkpoint) or ``new``; a directory holding a run of another
config is a ``conflict``, reported and left alone.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from verimath.trainer.ablation.variants import CONTROLS, Variant

WARMSTART_DIR = "warmstart"
FINAL_MODEL = "checkpoints/step_00000000/model"


@dataclass
class RunJob:
    """One ``verimath train`` process to run (or reuse)."""

    name: str
    """``<variant>/seed<k>`` (``warmstart/seed<k>`` for a shared warm start)."""
    run_dir: Path
    overrides: list[str]
    action: str = "new"
    """``done``, ``resume``, ``restart``, ``new`` or ``conflict``."""
    reason: str = ""
    returncode: int | None = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    """User and system CPU time of the process and the children it waited for."""
    after: list[RunJob] = field(default_factory=list, repr=False)
    """Jobs that need this one to finish first (the variants of a shared warm start)."""

    @property
    def log(self) -> Path:
        return self.run_dir.with_suffix(".log")

    @property
    def ok(self) -> bool:
        """Finished: reused, or exited 0 (or 3: it trained nothing) with its summary written
        (a run stopped by SIGTERM exits 0 after a checkpoint, without a summary)."""
        if self.action == "done":
            return True
        from verimath.trainer.run.cli import TRAINED_NOTHING  # finished; its result stands

        return self.returncode in (0, TRAINED_NOTHING) and \
            (self.run_dir / "summary.json").is_file()


def has_shared_warmstart(config) -> bool:
    """Whether the config warm-starts the built tiny model (the phase then runs once per
    seed and the variants start from it)."""
    ws = config.warmstart
    return ws.steps > 0 and config.model.path is None


def seed_overrides(seed: int) -> list[str]:
    return [f"optim.seed={seed}", f"data.seed={seed}"]


def check_overrides(overrides: list[str]) -> None:
    """ValueError when an override sets what the ablation sets itself."""
    owned = {c.key for c in CONTROLS} | {"optim.seed", "data.seed"}
    for item in overrides:
        key = item.split("=", 1)[0].strip()
        if key in owned:
            raise ValueError(f"{item}: verimath ablate sets {key} itself (the five DAPO "
                             "switches per variant, the seeds from --seeds); drop the override")


def warm_start_model(folder: Path, seed: int) -> Path:
    """The model that seed ``seed``'s runs start from in a ``--warm-starts`` folder:
    ``<folder>/seed<k>`` as a run directory of ``verimath train optim.steps=0`` (its
    ``checkpoints/step_00000000/model``) or as a model directory (a ``config.json``).
    ValueError naming the paths looked at when neither is there."""
    run = folder / f"seed{seed}"
    for model in (run / FINAL_MODEL, run):
        if (model / "config.json").is_file():
            return model.resolve()
    raise ValueError(f"--warm-starts {folder}: no model for seed {seed} (looked for "
                     f"{run / FINAL_MODEL} and {run}, each a directory with a config.json)")


def make_jobs(preset: str, variants: list[Variant], seeds: list[int], output: Path,
              overrides: list[str], *, config, warm_starts: Path | None = None) -> list[RunJob]:
    """Warm-start jobs (when shared) and one job per variant and seed, in run order. With
    ``warm_starts`` (a folder of per-seed warm starts made beforehand) every run of a seed
    starts from that seed's model there and no warm start runs."""
    base = ["logging.progress=false", *overrides]
    warm: dict[int, RunJob] = {}
    given = {seed: warm_start_model(warm_starts, seed) for seed in seeds} if warm_starts else {}
    if has_shared_warmstart(config) and not given:
        for seed in seeds:
            warm[seed] = RunJob(f"{WARMSTART_DIR}/seed{seed}",
                                output / WARMSTART_DIR / f"seed{seed}",
                                [*base, *seed_overrides(seed), "optim.steps=0",
                                 "logging.plot=false"])
    models = given or {seed: (job.run_dir / FINAL_MODEL).resolve() for seed, job in warm.items()}
    jobs = list(warm.values())
    for variant in variants:
        for seed in seeds:
            start = []
            if seed in models:
                start = [f"model.path={models[seed]}", "warmstart.steps=0"]
            job = RunJob(f"{variant.name}/seed{seed}", output / variant.name / f"seed{seed}",
                         [*base, *variant.overrides(), *seed_overrides(seed), *start])
            if seed in warm:
                warm[seed].after.append(job)
            jobs.append(job)
    return jobs


def plan_run(job: RunJob, preset: str) -> None:
    """Set ``job.action`` (and ``job.reason``) from what its directory holds."""
    from verimath.trainer.checkpoint.files import latest_checkpoint
    from verimath.trainer.config.files import config_changes, is_safe_on_resume, load_config

    run_dir, saved_file = job.run_dir, job.run_dir / "config.yaml"
    if not run_dir.is_dir() or not any(run_dir.iterdir()):
        job.action = "new"
        return
    if not saved_file.is_file():
        job.action, job.reason = "conflict", f"{run_dir} is not empty and holds no run"
        return
    saved = load_config(str(saved_file), check_required=False)
    wanted = load_config(preset, job.overrides, check_required=False)
    changes = config_changes(saved, wanted)
    unsafe = [f"{key}: {old} -> {new}" for key, old, new in changes if not is_safe_on_resume(key)]
    if unsafe:
        job.action = "conflict"
        job.reason = (f"{run_dir} holds a run of other settings ({'; '.join(unsafe)}); "
                      "move it away or pass another --output")
    elif (run_dir / "summary.json").is_file() and not changes:
        job.action = "done"
    elif latest_checkpoint(run_dir / "checkpoints") is not None:
        job.action = "resume"
    else:
        job.action, job.reason = "restart", "no checkpoint to resume from"


def train_command(job: RunJob, preset: str) -> list[str]:
    """The ``verimath train`` command line of a job."""
    head = [sys.executable, "-m", "verimath.trainer.cli", "train"]
    if job.action == "resume":
        return [*head, "--resume", str(job.run_dir), *job.overrides]
    extra = ["--overwrite"] if job.action == "restart" else []
    return [*head, "--config", preset, "--output-dir", str(job.run_dir), *extra, *job.overrides]


def _wait(proc: subprocess.Popen) -> tuple[int, float]:
    """Wait for ``proc``: its exit code and its CPU seconds (user + system, its waited-for
    children included), read from ``os.wait4``."""
    import os

    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # Popen waits no more
    return proc.returncode, usage.ru_utime + usage.ru_stime


def execute(jobs: list[RunJob], preset: str, *, workers: int,
            echo: Callable[[str], None] = print) -> None:
    """Run every job that is not done or in conflict, ``workers`` at a time; a job whose
    warm start failed is skipped. Results are recorded on the jobs (never raised). On
    KeyboardInterrupt the running processes get SIGTERM (``verimath train`` then saves a
    checkpoint and stops) and the interrupt is raised again."""
    todo = [j for j in jobs if j.action not in ("done", "conflict")]
    blocked = {id(child) for j in jobs if j.action == "conflict" for child in j.after}
    waiting = {id(child) for j in jobs for child in j.after}
    first = [j for j in todo if id(j) not in waiting]  # shared warm starts, or every run
    counter = {"n": 0, "total": len(todo)}

    running: set[subprocess.Popen] = set()
    stopping = threading.Event()

    def run(job: RunJob) -> RunJob:
        if id(job) in blocked or stopping.is_set():
            job.returncode = -1
            job.reason = "interrupted" if stopping.is_set() else "its warm start failed"
            return job
        job.run_dir.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        with open(job.log, "a", encoding="utf-8") as log:
            proc = subprocess.Popen(train_command(job, preset), stdout=log,
                                    stderr=subprocess.STDOUT)
            running.add(proc)
            job.returncode, job.cpu_seconds = _wait(proc)
            running.discard(proc)
        job.seconds = time.perf_counter() - start
        counter["n"] += 1
        state = "done" if job.ok else f"FAILED (exit {job.returncode}), see {job.log}"
        echo(f"[{counter['n']}/{counter['total']}] {job.name} ({job.action}): {state} "
             f"in {job.seconds:.0f} s")
        if not job.ok:
            blocked.update(id(child) for child in job.after)
        return job

    try:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            list(pool.map(run, first))
            list(pool.map(run, [j for j in todo if id(j) in waiting]))
    except KeyboardInterrupt:  # each run saves a checkpoint at its next step and stops
        stopping.set()
        for proc in list(running):
            proc.send_signal(signal.SIGTERM)
        for proc in list(running):
            proc.wait()
        raise
