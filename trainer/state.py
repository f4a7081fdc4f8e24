"""A training run's long-lived objects, in one typed :class:`TrainState`, and how they are
built (:func:`open_state`), saved and restored (:func:`save_state`).

``open_state`` checks everything that can fail on user input (device, engine, model
directory, problem files, checkpoint) before it creates the run directory, then writes
``config.yaml``, runs the warm start (the built tiny model only, unless
``warmstart.pretrained``), evaluates the held-out set once, and builds the KL reference,
optimizer, scheduler and episode source; with ``resume`` it restores them from a checkpoint
instead. The RL step itself is ``verimath.trainer.step.rl_step``; the loop around it,
evaluation cadence, checkpoints and the summary are in ``verimath.trainer.train``.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from verimath.envs import Problem
from verimath.rewards.pool import configure_default_pool
from verimath.trainer.checkpoint import load_checkpoint, resolve_checkpoint, save_checkpoint
from verimath.trainer.config import TrainConfig
from verimath.trainer.config_io import save_config
from verimath.trainer.engines import check_engine, make_engine
from verimath.trainer.episodes import EpisodeSource, Group, heldout_problems
from verimath.trainer.evaluate import evaluate
from verimath.trainer.policy import (
    load_policy,
    load_reference,
    resolve_device,
    save_reference,
    seed_everything,
)
from verimath.trainer.progress import progress_bar
from verimath.trainer.rollout import RolloutEngine, SamplingParams
from verimath.trainer.schedule import make_lr_lambda
from verimath.trainer.warmstart import warmstart

REFERENCE_DIR = "reference"


@dataclass
class RunRecord:
    """What a run has accumulated; saved (as JSON) in every checkpoint."""

    generated_tokens: int = 0
    trained_tokens: int = 0
    before: dict[str, float] = field(default_factory=dict)
    """Held-out metrics before RL (after the warm start)."""
    after: dict[str, float] | None = None
    """Held-out metrics after the last RL step."""
    warmstart: dict[str, float] = field(default_factory=dict)
    reference: str | None = None
    """Where the KL reference model lives (``model.path``, or ``reference/`` in the run)."""
    seconds_before: float = 0.0
    """Wall seconds of earlier sessions of a resumed run."""


@dataclass
class TrainState:
    """The objects of one run; ``step`` counts finished RL steps. Close it (or use it as a
    context manager) to end the engine and the env; ``close()`` is idempotent."""

    config: TrainConfig
    run_dir: Path
    device: torch.device
    model: torch.nn.Module
    tokenizer: Any
    engine: RolloutEngine
    heldout: list[Problem]
    record: RunRecord
    optimizer: torch.optim.Optimizer | None = None
    scheduler: Any = None
    episodes: EpisodeSource | None = None
    ref_model: torch.nn.Module | None = None
    surplus: list[Group] = field(default_factory=list)
    """Informative groups left over by dynamic sampling, for the next steps."""
    step: int = 0
    start_step: int = 0
    """The step this session started at (the checkpoint's step after a resume)."""
    resumed: bool = False
    echo: Callable[[str], None] = print
    t_start: float = field(default_factory=time.perf_counter)
    closed: bool = False

    @property
    def pad_id(self) -> int:
        return self.tokenizer.pad_token_id

    def elapsed(self) -> float:
        """Wall seconds of this run, earlier sessions of a resumed run included."""
        return self.record.seconds_before + time.perf_counter() - self.t_start

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.episodes is not None:
            self.episodes.close()
        self.engine.close()

    def __enter__(self) -> TrainState:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_state(config: TrainConfig, run_dir: str | Path, *, resume: str | Path | None = None,
               echo: Callable[[str], None] = print) -> TrainState:
    """Build (or, with ``resume``, restore) every object of a run; see the module docstring."""
    cfg = config
    if cfg.model.threads:
        torch.set_num_threads(cfg.model.threads)
    device, dtype = resolve_device(cfg.model.device, cfg.model.dtype)
    check_engine(cfg.rollout)
    ckpt = load_checkpoint(resolve_checkpoint(resume), restore_rng=False) if resume else None
    record = RunRecord() if ckpt is None else _saved_record(ckpt)
    seed_everything(cfg.optim.seed)
    model, tokenizer = load_policy(cfg.model, device=device, dtype=dtype, seed=cfg.optim.seed)
    procedural = cfg.data.train_file is None  # a file run evaluates on heldout_file only
    heldout = heldout_problems(
        family=cfg.data.family, level=cfg.data.level, seed=cfg.eval.seed,
        count=cfg.eval.num_problems if procedural else 0, path=cfg.data.heldout_file,
        skip_containing=cfg.data.skip_containing)
    if cfg.reward.workers:
        configure_default_pool(cfg.reward.workers)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)  # every user error above leaves no directory
    if ckpt is None:
        save_config(cfg, run_dir / "config.yaml")
    engine = make_engine(cfg, model, tokenizer, run_dir=run_dir, device=device)
    state = TrainState(config=cfg, run_dir=run_dir, device=device, model=model,
                       tokenizer=tokenizer, engine=engine, heldout=heldout, record=record,
                       resumed=ckpt is not None, echo=echo)
    try:
        if ckpt is None:
            _warm_start_and_evaluate(state)
        else:
            load_checkpoint(ckpt["path"], model=model, restore_rng=False)
            state.step = state.start_step = ckpt["step"]
        state.ref_model = _reference_model(state, ckpt) if cfg.algo.kl_coef > 0 else None
        state.optimizer, state.scheduler = _optimizer(model, cfg)
        state.episodes = _episodes(state)
        if ckpt is not None:  # optimizer, scheduler, RNG and the problem stream
            load_checkpoint(ckpt["path"], optimizer=state.optimizer, scheduler=state.scheduler)
            state.episodes.load_state_dict(_trainer_state(ckpt)["episodes"])
            state.surplus = [Group.from_dict(g) for g in _trainer_state(ckpt).get("surplus", [])]
            engine.sync_weights(model)
            save_config(cfg, run_dir / "config.yaml")  # the resumed config, overrides included
            echo(f"resumed from {ckpt['path']} at step {state.step}")
    except BaseException:
        state.close()
        raise
    return state


def save_state(state: TrainState) -> Path:
    """A checkpoint of the run at ``state.step`` (model, optimizer, scheduler, RNGs, record,
    problem stream)."""
    record = dataclasses.replace(state.record, seconds_before=state.elapsed())
    extra = {"run": dataclasses.asdict(record), "episodes": state.episodes.state_dict(),
             "surplus": [g.to_dict() for g in state.surplus]}
    return save_checkpoint(state.run_dir / "checkpoints", model=state.model,
                           tokenizer=state.tokenizer, optimizer=state.optimizer,
                           scheduler=state.scheduler, step=state.step,
                           config=state.config.to_dict(), extra_state=extra,
                           keep_last=state.config.logging.keep_checkpoints)


def evaluate_heldout(state: TrainState) -> dict[str, float]:
    """Held-out ``eval/avg@k``, ``eval/greedy`` and ``eval/problems`` ({} without problems);
    its sampling is seeded by ``eval.seed`` alone, never by the training RNG."""
    cfg = state.config
    if not state.heldout:
        return {}
    return evaluate(state.engine, state.tokenizer, state.heldout, k=cfg.eval.k,
                    temperature=cfg.rollout.temperature, top_p=cfg.rollout.top_p,
                    max_new_tokens=cfg.rollout.max_new_tokens,
                    template=cfg.model.prompt_template,
                    use_chat_template=cfg.model.use_chat_template,
                    answer_style=cfg.reward.answer_style, mode=cfg.reward.mode,
                    timeout=cfg.reward.timeout, batch_size=cfg.eval.batch_size,
                    seed=cfg.eval.seed)


def sampling_params(config: TrainConfig) -> SamplingParams:
    r = config.rollout
    return SamplingParams(temperature=r.temperature, top_p=r.top_p,
                          max_new_tokens=r.max_new_tokens)


def _warm_start_and_evaluate(state: TrainState) -> None:
    cfg, ws = state.config, state.config.warmstart
    if ws.steps and cfg.model.path is not None and not ws.pretrained:
        state.echo(f"model.path is set: the warm start (warmstart.steps={ws.steps}) is for the "
                   "built tiny model and is skipped; set warmstart.pretrained=true to run it")
    elif ws.steps:
        bar = progress_bar(ws.steps, 0, cfg.logging.progress, "warm start")
        state.record.warmstart = warmstart(
            state.model, state.tokenizer, family=cfg.data.family, level=cfg.data.level,
            seed=cfg.data.seed + 1, excluded={p.prompt for p in state.heldout},
            skip_containing=cfg.data.skip_containing, steps=ws.steps,
            batch_size=ws.batch_size, lr=ws.lr, template=cfg.model.prompt_template,
            use_chat_template=cfg.model.use_chat_template, answer_prefix=ws.answer_prefix,
            noise=ws.noise, progress=bar)
        bar.close()
        state.engine.sync_weights(state.model)
    state.record.before = evaluate_heldout(state)
    if state.record.before:
        state.echo("held-out before RL: " + format_metrics(state.record.before))


def _reference_model(state: TrainState, ckpt: dict | None):
    """The frozen KL reference: the policy as RL started (after the warm start), also after
    ``--resume``. Its origin is recorded in ``state.record`` (so in every checkpoint):
    ``model.path`` when RL starts from that directory unchanged, else a copy written once to
    ``<run dir>/reference/`` (a relative origin resolves against the checkpoint's run
    directory)."""
    cfg, record = state.config, state.record
    if ckpt is None:
        if cfg.model.path is not None and not record.warmstart.get("warmstart/steps"):
            record.reference = str(Path(cfg.model.path).resolve())
        else:
            save_reference(state.model, state.run_dir / REFERENCE_DIR)
            record.reference = REFERENCE_DIR
        return copy.deepcopy(state.model).eval().requires_grad_(False)
    if record.reference is None:
        raise ValueError(
            f"algo.kl_coef > 0 but checkpoint {ckpt['path']} records no KL reference model "
            "(the run started with algo.kl_coef=0); resume with algo.kl_coef=0 or start a "
            "new run")
    path = Path(ckpt["path"]).parent.parent / record.reference  # an absolute one stays as is
    if path.resolve().parent != state.run_dir.resolve():  # resumed into another directory
        record.reference = str(path.resolve())
    _, dtype = resolve_device(cfg.model.device, cfg.model.dtype)
    return load_reference(path, device=state.device, dtype=dtype)


def _optimizer(model, cfg: TrainConfig):
    """AdamW and its schedule, counted in optimizer updates (``ppo_epochs`` x mini-batches
    per step)."""
    o, a = cfg.optim, cfg.algo
    optimizer = torch.optim.AdamW(model.parameters(), lr=o.lr, betas=o.betas,
                                  weight_decay=o.weight_decay)
    per_step = a.ppo_epochs * math.ceil(a.train_prompts / a.mini_batch_prompts)
    total = max(1, o.steps * per_step)
    lam = make_lr_lambda(warmup_steps=min(o.warmup_steps, total - 1),  # total >= 1
                         total_steps=total, schedule=o.schedule)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lam)


def _episodes(state: TrainState) -> EpisodeSource:
    cfg, r = state.config, state.config.reward
    reward_kwargs = {"style": r.answer_style, "mode": r.mode, "timeout": r.timeout}
    if r.overlong_punishment:  # DAPO 4: soft overlong punishment, added by the env
        reward_kwargs.update(max_length=cfg.rollout.max_new_tokens,
                             cache_length=r.overlong_buffer)
    return EpisodeSource(
        tokenizer=state.tokenizer, engine=state.engine, params=sampling_params(cfg),
        num_problems=cfg.rollout.gen_prompts, group_size=cfg.rollout.group_size,
        template=cfg.model.prompt_template, use_chat_template=cfg.model.use_chat_template,
        family=cfg.data.family, level=cfg.data.level, seed=cfg.data.seed,
        train_file=cfg.data.train_file, excluded={p.prompt for p in state.heldout},
        reward_kwargs=reward_kwargs, skip_containing=cfg.data.skip_containing)


def _trainer_state(ckpt: dict) -> dict:
    """The trainer's part of a checkpoint (``run`` record and ``episodes`` stream)."""
    extra = ckpt.get("extra_state")
    if not isinstance(extra, dict) or not {"run", "episodes"} <= extra.keys():
        raise ValueError(f"checkpoint {ckpt['path']} holds no trainer state (extra_state needs "
                         "'run' and 'episodes'): it was not written by verimath train, or is "
                         "corrupt; resume from an earlier checkpoint directory")
    return extra


def _saved_record(ckpt: dict) -> RunRecord:
    saved = _trainer_state(ckpt)["run"]
    names = {f.name for f in dataclasses.fields(RunRecord)}
    if not isinstance(saved, dict) or not names >= saved.keys():
        raise ValueError(f"checkpoint {ckpt['path']}: its run record does not match this "
                         "verimath (written by another version?); start a new run")
    return RunRecord(**copy.deepcopy(saved))


def format_metrics(metrics: dict[str, float]) -> str:
    return ", ".join(f"{k.split('/')[-1]} {v:.3f}" for k, v in metrics.items()
                     if k != "eval/problems")
