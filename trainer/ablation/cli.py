"""``verimath ablate``: seeded training runs of DAPO's controls switched on and off, and a report.

    verimath ablate                                     # cumulative family, seeds 0,1,2
    verimath ablate --family all --workers 2 --output ablations/all
    verimath ablate --family add-one --seeds 0,1 optim.steps=20     # overrides for every run
    verimath ablate --family losses --only dapo,dapo-with-gspo   # DAPO against GSPO's loss
    verimath ablate --family corrections --config tiny   # one step off, each correction
    verimath ablate --mechanisms --dry-run               # the regimes, what each runs
    verimath ablate --mechanisms --only clip-higher --seeds 5

With ``--mechanisms`` it runs the regimes of :mod:`verimath.trainer.ablation.regimes`
instead: each built so that one control's failure occurs, its arms from a shared warm start
per seed, measured and recorded seed by seed in ``--results``
(:mod:`verimath.trainer.ablation.regime_runs`).

Each variant (:mod:`verimath.trainer.ablation.variants`) runs once per seed as its own
``verimath train`` process (``optim.seed`` and ``data.seed`` = the seed), ``--workers`` at a
time, into ``--output/<variant>/seed<k>/``; a shared warm start runs once per seed first
(:mod:`verimath.trainer.ablation.runs`). A rerun reuses finished runs whose config matches,
resumes unfinished ones, and trains only what is missing; a failed run is reported and the
others go on. The report (:mod:`verimath.trainer.ablation.report`) is ``ablation.md`` and
``ablation.png`` in ``--output``, plus each control's mechanism in the table and curves
against the step in ``ablation-curves.png`` (:mod:`verimath.trainer.ablation.mechanisms`).
Exit codes: 0 when every run finished, 1 when some failed (the report covers the others), 2 on
a bad option or setting.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from pathlib import Path

DEFAULT_PRESET = "ablation"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from verimath.trainer.ablation.variants import FAMILY_CHOICES

    parser.add_argument("--config", default=DEFAULT_PRESET, metavar="PRESET_OR_YAML",
                        help=f"the runs' preset or YAML file (default: {DEFAULT_PRESET})")
    parser.add_argument("--family", choices=FAMILY_CHOICES, default="cumulative",
                        help="cumulative: the paper's path GRPO -> DAPO; leave-one-out: DAPO "
                             "minus each control; add-one: GRPO plus each control; all: the "
                             "three, each variant once; losses: DAPO with each policy loss "
                             "(algo.policy_loss: cispo, gspo, clip-cov, kl-cov); corrections: "
                             "DAPO one step off with each treatment of stale groups "
                             "(algo.rollout_correction, or the sampler's ratio) (default: "
                             "cumulative)")
    parser.add_argument("--only", default=None, metavar="NAMES",
                        help="run only these variants of the family, by directory name "
                             "(e.g. grpo,dapo)")
    parser.add_argument("--seeds", default=None, metavar="LIST",
                        help="comma-separated seeds, each sets optim.seed and data.seed "
                             "(default: 0,1,2); with --mechanisms a number N alone means N "
                             "seeds (0..N-1, or from 100 with --pilot; default 5); one seed "
                             "alone: a trailing comma, e.g. 100,")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                        metavar="N", help="training processes at once (default: 2, or 1 on "
                                          "one CPU)")
    parser.add_argument("--output", "--output-dir", default=None, metavar="DIR",
                        help="output directory (default: ablations/<preset>-<family>, or "
                             "ablations/mechanisms with --mechanisms)")
    parser.add_argument("--mechanisms", action="store_true",
                        help="run the regimes built so that each control's failure occurs "
                             "(--only names regimes; see --dry-run)")
    parser.add_argument("--pilot", action="store_true",
                        help="with --mechanisms: record the seeds as pilots (tuning, left "
                             "out of the summary rows)")
    parser.add_argument("--results", default=None, metavar="JSON",
                        help="with --mechanisms: the results file each seed is added to "
                             "(default: benchmarks/results/mechanisms.json)")
    parser.add_argument("--warm-starts", default=None, metavar="DIR",
                        help="start seed k's runs from DIR/seed<k> (a verimath train run "
                             "with optim.steps=0, or a model directory) instead of a warm "
                             "start of their own")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the runs and what each needs, run nothing")
    parser.add_argument("overrides", nargs="*", metavar="SECTION.KEY=VALUE",
                        help="config overrides for every run, e.g. optim.steps=20")


def claim_extra(args: argparse.Namespace, extra: list[str]) -> list[str]:
    """Overrides that stand after an option join ``args.overrides``."""
    args.overrides = [*args.overrides, *(a for a in extra if not a.startswith("-"))]
    return [a for a in extra if a.startswith("-")]


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]``; ValueError naming ``--seeds`` otherwise."""
    try:
        seeds = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        seeds = []
    if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds must be distinct non-negative integers separated by commas, "
                         f"e.g. 0,1,2; got {text!r}")
    return seeds


def only_variants(variants: list, names: str) -> list:
    """The variants named in ``names`` (comma-separated), in family order; ValueError naming
    ``--only`` and the choices for a name the family does not hold."""
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = [v.name for v in variants]
    for name in wanted:
        if name not in known:
            raise ValueError(f"--only: no variant {name} in this family; choose from "
                             f"{', '.join(known)}")
    return [v for v in variants if v.name in wanted]


def spelled_out(variant) -> str:
    """``DAPO without dynamic sampling: on overlong filtering, ...``: the variant in words."""
    from verimath.trainer.ablation.variants import CONTROLS

    labels = {c.slug: c.label for c in CONTROLS}
    on = ", ".join(labels[s] for s in variant.on) or "nothing"
    if len(variant.off) == 1 and variant.on:
        return f"DAPO without {labels[variant.off[0]]} (on: {on})"
    return f"{variant.label} (on: {on})"


def main(args: argparse.Namespace) -> int:
    if args.mechanisms:
        return mechanisms_main(args)
    args.seeds = args.seeds or "0,1,2"
    from verimath.trainer.ablation.runs import (
        check_overrides,
        execute,
        make_jobs,
        plan_run,
        train_command,
    )
    from verimath.trainer.ablation.variants import select_variants
    from verimath.trainer.config.files import load_config

    try:
        seeds = parse_seeds(args.seeds)
        if args.workers < 1:
            raise ValueError(f"--workers must be >= 1, got {args.workers}")
        check_overrides(args.overrides)
        config = load_config(args.config, args.overrides)  # fails early on a bad setting
        variants = select_variants(args.family)
        if args.only:
            variants = only_variants(variants, args.only)
        output = Path(args.output or f"ablations/{Path(args.config).stem}-{args.family}")
        warm_starts = Path(args.warm_starts) if args.warm_starts else None
        jobs = make_jobs(args.config, variants, seeds, output, args.overrides, config=config,
                         warm_starts=warm_starts)
        for job in jobs:
            plan_run(job, args.config)
    except (ValueError, OSError) as exc:
        _say(f"error: {exc}")
        return 2
    counts = {a: sum(j.action == a for j in jobs) for a in ("done", "resume", "restart", "new")}
    _say(f"{len(variants)} variants x {len(seeds)} seeds into {output}: "
         + ", ".join(f"{n} {a}" for a, n in counts.items() if n))
    for job in jobs:
        if args.dry_run or job.action == "conflict":
            _say(f"  {job.name}: {job.action}" + (f" ({job.reason})" if job.reason else ""))
    if args.dry_run:
        _say("what each variant switches on (the other switches are off), and the commands:")
        for variant in variants:
            _say(f"  {variant.name}: {spelled_out(variant)}")
        for job in jobs:
            if job.action != "done":
                argv = ["verimath", *train_command(job, args.config)[3:]]
                _say("  " + " ".join(shlex.quote(a) for a in argv))
        return 0
    output.mkdir(parents=True, exist_ok=True)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # stop the runs, not only this
    try:
        execute(jobs, args.config, workers=args.workers, echo=_say)
    except KeyboardInterrupt:
        _say("interrupted; finished runs are kept, the others resume when you run the same "
             "command again")
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    failed = [j for j in jobs if not j.ok]
    for job in failed:
        _say(f"run {job.name} did not finish: {job.reason or f'exit code {job.returncode}'}"
             + (f", log {job.log}" if job.log.is_file() else ""))
    code = write_report(jobs, variants, output, config=config)
    return 1 if failed or code else 0


def mechanism_seeds(text: str | None, *, pilot: bool) -> list[int]:
    """``--seeds`` with ``--mechanisms``: a number N alone is N seeds from 0 (from
    :data:`PILOT_SEED_START` for pilots), else the list as without ``--mechanisms``."""
    from verimath.trainer.ablation.regime_runs import PILOT_SEED_START

    text = text or "5"
    if text.strip().isdigit() and "," not in text:
        count = int(text)
        if count < 1:
            raise ValueError(f"--seeds must be a number >= 1 or a list of seeds, got {text!r}")
        first = PILOT_SEED_START if pilot else 0
        return list(range(first, first + count))
    return parse_seeds(text)


def seed_span(seeds: list[int]) -> str:
    """``"seed 3"``, ``"seeds 0-4"`` for a run of consecutive seeds, else the list: said
    before anything runs, since ``--seeds 100`` is a hundred seeds, not seed 100."""
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"seeds {seeds[0]}-{seeds[-1]}"
    return "seeds " + ",".join(map(str, seeds))


def mechanisms_main(args: argparse.Namespace) -> int:
    """``--mechanisms``: list (``--dry-run``) or run the regimes, seed by seed."""
    from verimath.trainer.ablation.regime_runs import describe, run_seed
    from verimath.trainer.ablation.regimes import select_regimes
    from verimath.trainer.ablation.results import DEFAULT_RESULTS

    try:
        if args.overrides or args.warm_starts or args.family != "cumulative":
            raise ValueError("--mechanisms runs the regimes as they are defined: drop "
                             "overrides, --warm-starts and --family")
        if args.workers < 1:
            raise ValueError(f"--workers must be >= 1, got {args.workers}")
        regimes = select_regimes(args.only)
        seeds = mechanism_seeds(args.seeds, pilot=args.pilot)
        output = Path(args.output or "ablations/mechanisms")
        results = Path(args.results) if args.results else DEFAULT_RESULTS
        _say(f"{len(regimes)} regimes x {len(seeds)} seeds ({seed_span(seeds)}) into "
             f"{output}, recorded in {results} as "
             f"{'pilot' if args.pilot else 'confirmatory'} seeds"
             f"{':' if args.dry_run else ''}")
        if args.dry_run:
            for regime in regimes:
                for line in describe(regime, seeds, output):
                    _say(line)
            return 0
    except (ValueError, OSError) as exc:
        _say(f"error: {exc}")
        return 2
    phase = "pilot" if args.pilot else "confirmatory"
    previous = signal.signal(signal.SIGTERM, _interrupt)
    failed = 0
    try:
        for regime in regimes:
            for seed in seeds:
                record = run_seed(regime, seed, output, workers=args.workers, phase=phase,
                                  results=results, echo=_say)
                failed += record is None
    except KeyboardInterrupt:
        _say("interrupted; recorded seeds are kept, the runs of the others resume when you "
             "run the same command again")
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    write_mechanisms_report(results, output)
    return 1 if failed else 0


def write_mechanisms_report(results: Path, output: Path) -> None:
    """``mechanisms.md`` (the summary rows and the CPU cost) and ``mechanisms.png`` (the
    curves) in ``output``, from the results file's confirmatory records."""
    from verimath.trainer.ablation.regime_report import cost_table, plot_regimes, rows_table
    from verimath.trainer.ablation.results import load_results

    data = load_results(results)
    if not data["rows"]:
        _say(f"no confirmatory seeds in {results} yet: no report")
        return
    output.mkdir(parents=True, exist_ok=True)
    text = rows_table(data["rows"]) + "\n" + cost_table(data["runs"])
    (output / "mechanisms.md").write_text(text, encoding="utf-8")
    print(text)
    try:
        plot_regimes(data["runs"], output / "mechanisms.png")
        _say(f"report: {output / 'mechanisms.md'}, {output / 'mechanisms.png'}")
    except (ValueError, ImportError) as exc:
        _say(f"report: {output / 'mechanisms.md'} (figure not drawn: {exc})")


def write_report(jobs, variants, output: Path, *, config) -> int:
    """Write ``ablation.md`` and ``ablation.png`` from the finished runs; 0, or 1 when there
    was nothing to report."""
    from verimath.trainer.ablation.mechanisms import (
        mechanism_rows,
        mechanisms_table,
        plot_curves,
        run_mechanisms,
    )
    from verimath.trainer.ablation.report import (
        markdown_table,
        plot_ablation,
        read_run,
        summarize,
    )

    results: dict[str, list] = {}
    records: dict[str, dict[int, list[dict]]] = {}
    for job in jobs:
        if not job.ok or job.name.startswith("warmstart/"):
            continue
        name, seed = job.name.rsplit("/seed", 1)
        try:
            results.setdefault(name, []).append(read_run(job.run_dir, int(seed)))
            records.setdefault(name, {})[int(seed)] = _records(job.run_dir)
        except ValueError as exc:
            _say(f"left out of the report: {exc}")
    try:
        rows, budget = summarize(results, variants)
    except ValueError as exc:
        _say(f"no report: {exc}")
        return 1
    k, steps = config.eval.k, config.optim.steps
    befores = [r.acc_before for rs in results.values() for r in rs if r.acc_before is not None]
    table = markdown_table(rows, budget, k=k, steps=steps,
                           acc_before=sum(befores) / len(befores) if befores else None)
    labels = {row.name: row.label for row in rows}
    per_run = {name: {seed: run_mechanisms(recs) for seed, recs in seeds.items()}
               for name, seeds in records.items()}
    table += "\n" + mechanisms_table(mechanism_rows(per_run, labels))
    (output / "ablation.md").write_text(table, encoding="utf-8")
    print(table)
    try:
        plot_ablation(rows, budget, output / "ablation.png", k=k, steps=steps,
                      title=f"verimath ablate: {output.name}")
        plot_curves({name: list(seeds.values()) for name, seeds in records.items()}, labels,
                    output / "ablation-curves.png", k=k,
                    title=f"verimath ablate: {output.name}, mean over seeds")
        _say(f"report: {output / 'ablation.md'}, {output / 'ablation.png'}, "
             f"{output / 'ablation-curves.png'}")
    except (ValueError, ImportError) as exc:  # no matplotlib
        _say(f"report: {output / 'ablation.md'} (charts not drawn: {exc})")
    return 0


def _records(run_dir: Path) -> list[dict]:
    import warnings

    from verimath.trainer.run.metrics import read_metrics

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn last line
        return read_metrics(run_dir / "metrics.jsonl")


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _say(message: str) -> None:
    print(f"verimath ablate: {message}", file=sys.stderr, flush=True)
