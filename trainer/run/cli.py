"""``verimath train``: train with DAPO from a preset or YAML file plus dotted overrides.

    verimath train                                   # preset tiny: the embedded CPU default
    verimath train --config grpo                     # naive GRPO, same task
    verimath train --config my.yaml algo.eps_high=0.28 optim.lr=1e-6
    verimath train --resume runs/tiny-20250101-120000 optim.steps=200
    verimath train --nproc 8 --config dapo-qwen2.5-math-7b model.path=... data.train_file=...
    torchrun --nproc-per-node 8 -m verimath.trainer.worker --config ...   # the same, by hand

Every torchrun process runs ``verimath.trainer.worker``, which takes the same arguments and
calls :func:`main` as its rank; ``--nproc N`` launches ``torch.distributed.run`` with it.
The training loop itself is ``verimath.trainer.run.loop.train``; the run's objects are built
by ``verimath.trainer.run.setup.open_state``.

Overrides may stand anywhere on the line, before or after options. ``--output-dir`` must
be a new or empty directory: an existing run is continued with ``--resume`` or replaced
with ``--overwrite``. ``--resume`` takes a run directory (its latest checkpoint) or a
checkpoint directory and continues from the checkpoint's step with the checkpoint's config
(overrides still apply); every changed setting is printed, and changes beyond
:data:`~verimath.trainer.config.files.SAFE_ON_RESUME` need ``--allow-config-change``. The run
directory's ``config.yaml`` is rewritten with that config once the checkpoint has loaded.
Errors in settings, files or checkpoints exit with code 2 and a message naming the setting
or file; a run that finished without training on anything (every group all right or all
wrong) exits with 3 and says why; Ctrl-C exits with 130 and names the checkpoint to resume
from; SIGTERM finishes the current step, saves a checkpoint and exits with 0 and the resume
command.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

from verimath.trainer.run.launch import (
    add_node_arguments,
    check_node_arguments,
    checkpoint_ranks,
    clear_dir,
    interrupted_message,
    is_launch,
    launch,
    launched_by_verimath,
    launched_ranks,
)

RUN_FILES = ("config.yaml", "metrics.jsonl", "summary.json", "checkpoints")
TRAINED_NOTHING = 3
"""Exit code of a run that finished (summary and checkpoint written) but whose steps had no
group to learn from, so the model is the one RL started with."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default=None, metavar="PRESET_OR_YAML",
                        help="a preset name (see --list-presets) or a YAML file "
                             "(default: tiny, or the checkpoint's config with --resume)")
    parser.add_argument("--output-dir", default=None, metavar="DIR",
                        help="run directory, new or empty (default: a new folder under runs/)")
    parser.add_argument("--overwrite", action="store_true",
                        help="delete the run already in --output-dir, then start a new one")
    parser.add_argument("--resume", default=None, metavar="DIR",
                        help="continue from a checkpoint or the latest one of a run directory")
    parser.add_argument("--allow-config-change", action="store_true",
                        help="with --resume: accept settings that change what the run trains "
                             "(every change is printed either way)")
    parser.add_argument("--list-presets", action="store_true",
                        help="print the presets with their purpose and exit")
    parser.add_argument("--print-config", action="store_true",
                        help="print the resolved config as YAML, each field documented, and exit")
    parser.add_argument("--nproc", type=int, default=None, metavar="N",
                        help="processes for data-parallel training, one per GPU (launches "
                             "torchrun; per node with --nnodes: docs/distributed.md)")
    add_node_arguments(parser)
    from verimath.trainer.estimate import cli as estimate_cli

    estimate_cli.add_arguments(parser)  # --estimate and its inputs
    parser.add_argument("overrides", nargs="*", metavar="SECTION.KEY=VALUE",
                        help="config overrides, e.g. algo.eps_high=0.28 optim.steps=50")


def claim_extra(args: argparse.Namespace, extra: list[str]) -> list[str]:
    """Take overrides that stand after an option (``a.b=1 --output-dir r c.d=2``) into
    ``args.overrides``, in order; returns what is left (unknown options)."""
    args.overrides = [*args.overrides, *(a for a in extra if not a.startswith("-"))]
    return [a for a in extra if a.startswith("-")]


def resolve_config(args: argparse.Namespace, *, echo=None):
    """``(config, run_dir, resume_path)`` from the command line; raises ValueError.

    With ``--resume``, the settings that differ from the checkpoint's config are passed to
    ``echo`` (``field: old -> new``); changes outside the safe list need
    ``--allow-config-change``.
    """
    from verimath.trainer.config.files import load_config

    if args.resume is not None:
        return _resolve_resume(args, echo or _stderr)
    name = args.config or "tiny"  # printing a preset's config needs none of its __requires__
    config = load_config(name, args.overrides,
                         check_required=not (args.print_config or args.estimate))
    run_dir = args.output_dir or config.logging.output_dir
    if run_dir is None:
        run_dir = new_run_dir("runs", Path(name).stem)
    return config, Path(run_dir), None


def _resolve_resume(args: argparse.Namespace, echo):
    from verimath.trainer.checkpoint.files import load_checkpoint, resolve_checkpoint
    from verimath.trainer.config.files import (
        apply_overrides,
        config_changes,
        config_from_dict,
        is_safe_on_resume,
        load_config,
        yaml_value,
    )

    try:
        resume = resolve_checkpoint(args.resume)
    except FileNotFoundError:
        restart = _unstarted_run(args, echo)
        if restart is None:
            raise
        return restart
    meta = load_checkpoint(resume, restore_rng=False)
    saved = config_from_dict(meta["config"], source=f"checkpoint {resume}")
    if args.config is None:
        config = apply_overrides(saved, list(args.overrides))
    else:
        config = load_config(args.config, args.overrides)
    changes = config_changes(saved, config)
    if changes:
        echo(f"resuming {resume} with changed settings:\n" + "\n".join(
            f"  {key}: {yaml_value(old)} -> {yaml_value(new)}" for key, old, new in changes))
    unsafe = [key for key, _, _ in changes if not is_safe_on_resume(key)]
    if unsafe and not args.allow_config_change:
        raise ValueError(
            f"--resume: {', '.join(unsafe)} would change what the run trains, and the result "
            "would mix two experiments; start a new run for them (drop --resume), or pass "
            "--allow-config-change to continue this one with them")
    run_dir = Path(args.output_dir) if args.output_dir else resume.parent.parent
    saved_ranks, ranks = checkpoint_ranks(resume), launched_ranks(args)
    if saved_ranks != ranks:
        echo(f"{resume} was written by {saved_ranks} process{'es' * (saved_ranks > 1)} and "
             f"resumes on {ranks}: the model and optimizer reshard, but the problem streams "
             "and sampling RNGs do not continue as they would have (pass "
             f"--nproc {saved_ranks} to continue the run exactly)")
    return config, run_dir, resume


def _unstarted_run(args: argparse.Namespace, echo):
    """``--resume DIR`` of a run stopped before its first checkpoint (e.g. Ctrl-C during the
    warm start): ``(config, DIR, None)`` to start it again from its ``config.yaml``, with
    ``args.restart`` set so that its leftovers are cleared; None when DIR is no such run."""
    from verimath.trainer.checkpoint.files import latest_checkpoint
    from verimath.trainer.config.files import load_config

    run_dir = Path(args.resume)
    saved = run_dir / "config.yaml"
    if not saved.is_file() or latest_checkpoint(run_dir / "checkpoints") is not None:
        return None
    if args.output_dir and Path(args.output_dir).resolve() != run_dir.resolve():
        raise ValueError(f"--resume {run_dir}: the run has no checkpoint to continue from; "
                         "start a new run in --output-dir without --resume")
    config = load_config(args.config or str(saved), args.overrides)
    echo(f"{run_dir} stopped before its first checkpoint: starting it again from step 0 with "
         "its config.yaml")
    args.restart = True
    return config, run_dir, None


def _stderr(message: str) -> None:
    print(f"verimath train: {message}", file=sys.stderr)


def check_run_dir(run_dir: Path, *, resume: Path | None, overwrite: bool) -> None:
    """ValueError unless ``run_dir`` may receive this run: new or empty, the run being
    resumed, or (``overwrite``) a finished or abandoned run that is to be deleted."""
    run_dir = Path(run_dir)
    same_run = resume is not None and run_dir.resolve() == resume.parent.parent.resolve()
    if overwrite and same_run:
        raise ValueError(f"--overwrite would delete {run_dir}, which holds the checkpoint "
                         "being resumed; drop --overwrite, or pass another --output-dir")
    if same_run or not run_dir.exists():
        return
    if not run_dir.is_dir():
        raise ValueError(f"--output-dir {run_dir} is a file; pass a new directory")
    if not any(run_dir.iterdir()):
        return
    is_run = any((run_dir / name).exists() for name in RUN_FILES)
    if not is_run:
        raise ValueError(f"--output-dir {run_dir} is not empty and holds no verimath run; "
                         "pass a new or empty directory")
    if not overwrite:
        raise ValueError(
            f"--output-dir {run_dir} already holds a run; continue it with "
            f"`verimath train --resume {run_dir}`, pass --overwrite to delete it and start "
            "again, or choose another --output-dir")


def check_paths(config) -> None:
    """Fail early, naming the setting, when a path the run needs is missing or unreadable
    (a problems file is read through once, so a bad row is reported before any work)."""
    if config.model.path is not None:  # a directory, or a hub id fetched into the cache now
        from verimath.trainer.model.hub import resolve_model_dir

        resolve_model_dir(config.model.path)
    from verimath.envs.problem import iter_problems

    for key in ("train_file", "heldout_file"):
        value = getattr(config.data, key)
        if value is None:
            continue
        if Path(value).is_dir():
            raise ValueError(f"data.{key}={value!r} is a directory; pass a problems file "
                             "(.jsonl or .parquet written by verimath prep)")
        if not Path(value).is_file():
            raise FileNotFoundError(f"data.{key}={value!r}: no such file")
        try:  # read it through once: a bad row fails now, not after the warm start
            count = sum(1 for _ in iter_problems(value))
        except (ValueError, OSError) as exc:  # ProblemFileError names the file, row and field
            raise ValueError(f"data.{key}: {exc}") from None
        if count == 0:
            raise ValueError(f"data.{key}={value!r} holds no problems")


def main(args: argparse.Namespace, *, comm=None) -> int:
    if args.list_presets:
        from verimath.trainer.config.files import preset_descriptions

        presets = preset_descriptions()
        width = max(map(len, presets))
        print("\n".join(f"{name:<{width}}  {purpose}" for name, purpose in presets.items()))
        return 0
    main_rank = comm is None or comm.is_main
    speaks = main_rank and not (comm is not None and launched_by_verimath())
    error = None
    try:
        config, run_dir, resume = resolve_config(args, echo=None if speaks else _silent)
        if args.print_config:
            print(_documented_config(config, args), end="")
            return 0
        if args.estimate:
            from verimath.trainer.estimate.cli import estimate_report

            print(estimate_report(config, args), end="")
            return 0
        check_node_arguments(args)
        if main_rank:  # rank 0 checks for all (the others would see its new directory)
            check_paths(config)  # before anything is created on disk
            from verimath.trainer.core.processes import check_not_in_use
            from verimath.trainer.rollout.context_length import check_config_context

            # the launcher of node 0 (its rank 0 creates the run)
            if not getattr(args, "node_rank", 0):
                check_run_dir(run_dir, resume=resume, overwrite=_replaces(args))
                check_not_in_use(run_dir)
            check_config_context(config)  # prompt + max_new_tokens within the positions
    except (ValueError, OSError) as exc:
        error = exc
    if comm is not None and comm.enabled:  # every rank stops, or none does
        failed = comm.all_sum([float(error is not None)])[0] > 0
        run_dir = comm.broadcast_object(None if failed else run_dir)
        error = error or (RuntimeError("rank 0 found an error") if failed else None)
    if error is not None:
        if main_rank:
            _stderr(f"error: {error}")
        return 2
    if is_launch(args) and comm is None:
        return launch(args, run_dir)
    return _train(config, run_dir, resume, overwrite=_replaces(args), comm=comm,
                  nproc=comm.world if comm is not None else 1, speaks=speaks,
                  restart=getattr(args, "restart", False))


def _replaces(args: argparse.Namespace) -> bool:
    """Whether the run directory's contents are deleted first: --overwrite, or the restart
    of a run that stopped before its first checkpoint."""
    return bool(args.overwrite or getattr(args, "restart", False))


def new_run_dir(root: str | Path = "runs", name: str = "run") -> Path:
    """A fresh ``root/<name>-<UTC timestamp>`` directory path (suffixed if it exists)."""
    base = Path(root) / f"{name}-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}"
    path, i = base, 1
    while path.exists():
        path, i = Path(f"{base}-{i}"), i + 1
    return path


def _silent(message: str) -> None:
    """What ranks other than 0 print: nothing (rank 0 speaks for the run)."""


def _documented_config(config, args: argparse.Namespace) -> str:
    from verimath.trainer.config.files import config_to_commented_yaml, required_settings, setting

    source = args.resume or args.config or "tiny"
    header = [f"verimath train {'--resume' if args.resume else '--config'} {source} (each "
              "field's documentation is the comment above it)"]
    if args.resume is None:
        header += [f"{key} must be set to train with this config: {hint}"
                   for key, hint in required_settings(source).items()
                   if setting(config, key) is None]
    return config_to_commented_yaml(config, header)


def _train(config, run_dir: Path, resume: Path | None, *, overwrite: bool, comm=None,
           nproc: int = 1, speaks: bool = True, restart: bool = False) -> int:
    # transformers' own load/save bars ("Writing model shards" at every checkpoint) would
    # interleave with the step lines: the run's bar and lines say what happens
    from transformers.utils import logging as hf_logging
    from verimath.trainer.run.loop import Stopped, train
    from verimath.trainer.run.setup import open_state

    hf_logging.disable_progress_bar()
    from verimath.trainer.core.processes import RunDirInUse, RunLock

    main_rank = comm is None or comm.is_main
    say = _stderr if main_rank else _silent
    created = main_rank and not run_dir.exists()
    lock = RunLock(run_dir)
    try:
        if main_rank:  # one live process per run directory, from here to the end
            run_dir.mkdir(parents=True, exist_ok=True)
            lock.acquire()
        if overwrite and main_rank:
            say(f"deleting what the interrupted run left in {run_dir}" if restart else
                f"--overwrite: deleting the run in {run_dir}")
            clear_dir(run_dir)
        say(f"run directory {run_dir}")
        state = open_state(config, run_dir, resume=resume, comm=comm)
    except (ValueError, FileNotFoundError) as exc:  # bad model dir, data file, checkpoint
        say(f"error: {exc}")
        lock.release()
        if created and not isinstance(exc, RunDirInUse) and not any(run_dir.iterdir()):
            run_dir.rmdir()  # a user error leaves no directory behind
        return 2
    except KeyboardInterrupt:  # during the warm start or the first evaluation
        lock.release()
        if speaks:
            print(f"\nverimath train: {interrupted_message(run_dir, nproc=nproc)}",
                  file=sys.stderr)
        return 130
    try:
        with state:
            train(state)
    except Stopped as stop:  # SIGTERM, or too many NaN updates: a checkpoint was saved
        say(str(stop))
        return stop.exit_code
    except KeyboardInterrupt:  # Ctrl-C: the checkpoints on disk are complete, say which
        if speaks:
            print(f"\nverimath train: {interrupted_message(run_dir, nproc=nproc)}",
                  file=sys.stderr)
        return 130
    finally:
        lock.release()
    if state.trained_nothing:
        say("error: the run trained on nothing: in every step each group was all right or all "
            "wrong, so no response had an advantage and the model is the one this session "
            "started from "
            f"(the warning above names the likely cause); exit code {TRAINED_NOTHING}")
        return TRAINED_NOTHING
    return 0
