"""``verimath train``: train with DAPO from a preset or YAML file plus dotted overrides.

    verimath train                                   # preset tiny: the embedded CPU default
    verimath train --config grpo                     # naive GRPO, same task
    verimath train --config my.yaml algo.eps_high=0.28 optim.lr=1e-6
    verimath train --resume runs/tiny-20250101-120000 optim.steps=200

``--resume`` takes a run directory (its latest checkpoint) or a checkpoint directory and
continues from the checkpoint's step with the checkpoint's config (overrides still apply);
the run directory's ``config.yaml`` is rewritten with that config once the checkpoint has
loaded. Errors in settings, files or checkpoints exit with code 2 and a message naming the
setting or file; Ctrl-C exits with 130 and names the checkpoint to resume from.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default=None, metavar="PRESET_OR_YAML",
                        help="a preset name (tiny, dapo, grpo, ...) or a YAML file "
                             "(default: tiny, or the checkpoint's config with --resume)")
    parser.add_argument("--output-dir", default=None, metavar="DIR",
                        help="run directory (default: a new folder under runs/)")
    parser.add_argument("--resume", default=None, metavar="DIR",
                        help="continue from a checkpoint or the latest one of a run directory")
    parser.add_argument("--list-presets", action="store_true", help="print the presets and exit")
    parser.add_argument("--print-config", action="store_true",
                        help="print the resolved config as YAML and exit")
    parser.add_argument("overrides", nargs="*", metavar="SECTION.KEY=VALUE",
                        help="config overrides, e.g. algo.eps_high=0.28 optim.steps=50")


def resolve_config(args: argparse.Namespace):
    """``(config, run_dir, resume_path)`` from the command line; raises ValueError."""
    from verimath.trainer.config_io import apply_overrides, config_from_dict, load_config

    resume = None
    if args.resume is not None:
        from verimath.trainer.checkpoint import load_checkpoint, resolve_checkpoint

        resume = resolve_checkpoint(args.resume)
        if args.config is None:
            meta = load_checkpoint(resume, restore_rng=False)
            config = apply_overrides(config_from_dict(meta["config"], source=str(resume)),
                                     list(args.overrides))
        else:
            config = load_config(args.config, args.overrides)
        run_dir = Path(args.output_dir) if args.output_dir else resume.parent.parent
        return config, run_dir, resume
    name = args.config or "tiny"
    config = load_config(name, args.overrides)
    run_dir = args.output_dir or config.logging.output_dir
    if run_dir is None:
        from verimath.trainer.run import new_run_dir

        run_dir = new_run_dir("runs", Path(name).stem)
    return config, Path(run_dir), resume


def check_paths(config) -> None:
    """Fail early, naming the setting, when a path the run needs is missing or unreadable
    (a problems file is read through once, so a bad row is reported before any work)."""
    model_path = config.model.path
    if model_path is not None and not (Path(model_path) / "config.json").is_file():
        raise ValueError(f"model.path={model_path!r} is not a Hugging Face model directory (no "
                         "config.json); verimath never downloads models: pass a local directory")
    from verimath.envs.problem import iter_problems

    for key in ("train_file", "heldout_file"):
        value = getattr(config.data, key)
        if value is None:
            continue
        if not Path(value).is_file():
            raise FileNotFoundError(f"data.{key}={value!r}: no such file")
        try:  # read it through once: a bad row fails now, not after the warm start
            count = sum(1 for _ in iter_problems(value))
        except ValueError as exc:  # ProblemFileError names the file, row and field
            raise ValueError(f"data.{key}: {exc}") from None
        if count == 0:
            raise ValueError(f"data.{key}={value!r} holds no problems")


def main(args: argparse.Namespace) -> int:
    from verimath.trainer.config_io import config_to_yaml, preset_names

    if args.list_presets:
        print("\n".join(preset_names()))
        return 0
    try:
        config, run_dir, resume = resolve_config(args)
    except (ValueError, FileNotFoundError) as exc:
        print(f"verimath train: error: {exc}", file=sys.stderr)
        return 2
    if args.print_config:
        print(config_to_yaml(config), end="")
        return 0
    from verimath.trainer.loop import train
    from verimath.trainer.run import Run

    if not config.logging.progress:  # also silence transformers' load/save bars
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()

    try:
        check_paths(config)  # before anything is created on disk
        print(f"verimath train: run directory {run_dir}", file=sys.stderr)
        run = Run(config, run_dir=run_dir, resume=resume)
    except (ValueError, FileNotFoundError) as exc:  # bad model dir, data file, checkpoint
        print(f"verimath train: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # during the warm start or the first evaluation
        print(f"\nverimath train: {interrupted_message(run_dir)}", file=sys.stderr)
        return 130
    with run:
        try:
            train(run)
        except KeyboardInterrupt:  # Ctrl-C: the checkpoints on disk are complete, say which
            print(f"\nverimath train: {interrupted_message(run_dir)}", file=sys.stderr)
            return 130
    return 0


def interrupted_message(run_dir: Path) -> str:
    """What an interrupted run left: its latest complete checkpoint and how to continue."""
    from verimath.trainer.checkpoint import latest_checkpoint

    latest = latest_checkpoint(Path(run_dir) / "checkpoints")
    if latest is None:
        return (f"interrupted before the first checkpoint; nothing to resume in {run_dir} "
                "(lower logging.save_every to checkpoint more often)")
    return (f"interrupted; the latest complete checkpoint is {latest} (metrics.jsonl lines after "
            f"it are replaced on resume); continue with: verimath train --resume {run_dir}")
