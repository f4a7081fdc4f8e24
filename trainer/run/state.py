"""A training run's long-lived objects, in one typed :class:`TrainState`, and how they are
built (:func:`open_state`); saving and restoring them is ``verimath.trainer.checkpoint.run_state``.

``open_state`` checks everything that can fail on user input (device, engine, model
directory, problem files, checkpoint) before it creates the run directory, then writes
``config.yaml``, runs the warm start (the built tiny model only, unless
``warmstart.pretrained``), evaluates the held-out set once, and builds the KL reference,
optimizer, scheduler and episode source; with ``resume`` it restores them from a checkpoint
instead. With several ranks (``verimath.trainer.run.distributed``) the policy is sharded with
FSDP2 after those steps, and each rank gets its own problem stream and rollout engine. The RL
step itself is ``verimath.trainer.algo.step.rl_step``; the loop around it, evaluation cadence,
checkpoints and the summary are in ``verimath.trainer.run.loop``.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from verimath.envs import Problem
from verimath.rewards.pool import configure_default_pool
from verimath.trainer.algo.schedule import make_lr_lambda
from verimath.trainer.checkpoint.files import load_checkpoint, resolve_checkpoint
from verimath.trainer.checkpoint.run_state import RunRecord, is_sharded, restore_state, saved_record
from verimath.trainer.config import TrainConfig
from verimath.trainer.config_io import save_config
from verimath.trainer.evaluation.evaluate import evaluate
from verimath.trainer.model.policy import (
    load_policy,
    load_reference,
    resolve_device,
    save_reference,
    seed_everything,
)
from verimath.trainer.model.warmstart import warmstart
from verimath.trainer.rollout.engine import RolloutEngine, SamplingParams
from verimath.trainer.rollout.episodes import EpisodeSource, Group, heldout_problems
from verimath.trainer.rollout.factory import check_engine, make_engine
from verimath.trainer.run.distributed import Comm, broadcast_parameters, rank_seed, shard_model
from verimath.trainer.run.metrics import check_backend_packages
from verimath.trainer.run.progress import progress_bar

REFERENCE_DIR = "reference"


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
    comm: Comm = field(default_factory=Comm)
    """This process's place among the data-parallel ranks."""
    surplus: list[Group] = field(default_factory=list)
    """Informative groups left over by dynamic sampling, for the next steps."""
    skipped_in_a_row: int = 0
    """Consecutive optimizer updates skipped for a non-finite gradient."""
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
               echo: Callable[[str], None] = print, comm: Comm | None = None) -> TrainState:
    """Build (or, with ``resume``, restore) every object of a run; see the module docstring.
    ``comm`` places this process among torchrun's ranks (default: one process)."""
    cfg, comm = config, comm or Comm()
    check_data_parallel(cfg, comm)
    if cfg.model.threads:
        torch.set_num_threads(cfg.model.threads)
    device, dtype = resolve_device(cfg.model.device, cfg.model.dtype)
    if comm.enabled and device.type == "cuda":
        device = torch.device("cuda", comm.local_rank)
        if cfg.model.dtype == "auto":  # fp32 master weights; FSDP computes in bf16
            dtype = torch.float32
    check_engine(cfg.rollout)
    check_backend_packages(cfg.logging.backends)
    ckpt = load_checkpoint(resolve_checkpoint(resume), restore_rng=False) if resume else None
    record = RunRecord() if ckpt is None else saved_record(ckpt)
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
    if comm.is_main:
        run_dir.mkdir(parents=True, exist_ok=True)  # no user error above leaves a directory
        if ckpt is None:
            save_config(cfg, run_dir / "config.yaml")
    comm.barrier()
    if ckpt is None:
        record.warmstart = _warm_start(model, tokenizer, cfg, heldout, echo, comm)
    elif not is_sharded(ckpt["path"]):
        load_checkpoint(ckpt["path"], model=model, restore_rng=False)
    engine = make_engine(cfg, model, tokenizer, run_dir=run_dir, device=device, comm=comm)
    state = TrainState(config=cfg, run_dir=run_dir, device=device, model=model,
                       tokenizer=tokenizer, engine=engine, heldout=heldout, record=record,
                       resumed=ckpt is not None, echo=echo if comm.is_main else _quiet,
                       comm=comm)
    try:
        _build_training_objects(state, ckpt)
    except BaseException:
        state.close()
        raise
    return state


def _build_training_objects(state: TrainState, ckpt: dict | None) -> None:
    """Held-out start, KL reference, sharding, optimizer, episodes; or restore them."""
    cfg, comm = state.config, state.comm
    if ckpt is None:
        state.record.before = evaluate_heldout(state)
        if state.record.before:
            state.echo("held-out before RL: " + format_metrics(state.record.before))
    state.ref_model = _reference_model(state, ckpt) if cfg.algo.kl_coef > 0 else None
    if comm.enabled:
        shard = {"device": state.device, "activation_checkpointing":
                 cfg.algo.activation_checkpointing}
        state.model = shard_model(state.model, comm, **shard)
        if state.ref_model is not None:
            state.ref_model = shard_model(state.ref_model, comm, **shard)
    state.optimizer, state.scheduler = _optimizer(state.model, cfg)
    state.episodes = _episodes(state)
    if ckpt is not None:
        restore_state(state, ckpt)
        if comm.is_main:
            save_config(cfg, state.run_dir / "config.yaml")  # the resumed config, overrides too
        state.echo(f"resumed from {ckpt['path']} at step {state.step}")
    elif comm.enabled:  # every rank samples its own responses
        seed_everything(rank_seed(cfg.optim.seed, comm.rank))


def check_data_parallel(config: TrainConfig, comm: Comm) -> None:
    """ValueError when the batch does not split evenly over the ranks."""
    if comm.world > 1 and config.rollout.gen_prompts % comm.world:
        raise ValueError(f"rollout.gen_prompts ({config.rollout.gen_prompts}) must be a "
                         f"multiple of the number of processes ({comm.world}): each rank "
                         "generates an equal share of every round")


def _quiet(message: str) -> None:
    """The echo of ranks other than 0: rank 0 speaks for the run."""


def evaluate_heldout(state: TrainState) -> dict[str, float]:
    """Held-out ``eval/avg@k``, ``eval/greedy`` and ``eval/problems`` ({} without problems);
    its sampling is seeded by ``eval.seed`` alone, never by the training RNG. With several
    ranks each evaluates its share of the problems and the results are combined."""
    cfg, comm = state.config, state.comm
    mine = state.heldout[comm.rank::comm.world]
    if not state.heldout:
        return {}
    out = evaluate(state.engine, state.tokenizer, mine, k=cfg.eval.k,
                   temperature=cfg.rollout.temperature, top_p=cfg.rollout.top_p,
                   max_new_tokens=cfg.rollout.max_new_tokens,
                   template=cfg.model.prompt_template,
                   use_chat_template=cfg.model.use_chat_template,
                   answer_style=cfg.reward.answer_style, mode=cfg.reward.mode,
                   timeout=cfg.reward.timeout, batch_size=cfg.eval.batch_size,
                   seed=cfg.eval.seed + comm.rank)
    if not comm.enabled:
        return out
    keys = [f"eval/avg@{cfg.eval.k}", "eval/greedy"]
    n = float(len(mine))
    total = comm.all_sum([out.get(k, 0.0) * n for k in keys] + [n])
    return {**{k: float(v / total[-1]) for k, v in zip(keys, total)},
            "eval/problems": float(total[-1])}


def sampling_params(config: TrainConfig) -> SamplingParams:
    r = config.rollout
    return SamplingParams(temperature=r.temperature, top_p=r.top_p,
                          max_new_tokens=r.max_new_tokens)


def _warm_start(model, tokenizer, cfg: TrainConfig, heldout: list[Problem], echo,
                comm: Comm) -> dict[str, float]:
    """The supervised warm start, for the built tiny model (or ``warmstart.pretrained``);
    every rank runs the same one, then takes rank 0's weights."""
    ws = cfg.warmstart
    if ws.steps and cfg.model.path is not None and not ws.pretrained:
        echo(f"model.path is set: the warm start (warmstart.steps={ws.steps}) is for the "
             "built tiny model and is skipped; set warmstart.pretrained=true to run it")
        return {}
    if not ws.steps:
        return {}
    bar = progress_bar(ws.steps, 0, cfg.logging.progress and comm.is_main, "warm start")
    out = warmstart(
        model, tokenizer, family=cfg.data.family, level=cfg.data.level,
        seed=cfg.data.seed + 1, excluded={p.prompt for p in heldout},
        skip_containing=cfg.data.skip_containing, steps=ws.steps,
        batch_size=ws.batch_size, lr=ws.lr, template=cfg.model.prompt_template,
        use_chat_template=cfg.model.use_chat_template, answer_prefix=ws.answer_prefix,
        noise=ws.noise, progress=bar)
    bar.close()
    broadcast_parameters(model, comm)
    return out


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
        num_problems=cfg.rollout.gen_prompts // state.comm.world,
        group_size=cfg.rollout.group_size,
        template=cfg.model.prompt_template, use_chat_template=cfg.model.use_chat_template,
        family=cfg.data.family, level=cfg.data.level,
        seed=rank_seed(cfg.data.seed, state.comm.rank),  # each rank its own problems
        train_file=cfg.data.train_file, excluded={p.prompt for p in state.heldout},
        reward_kwargs=reward_kwargs, skip_containing=cfg.data.skip_containing)


def format_metrics(metrics: dict[str, float]) -> str:
    return ", ".join(f"{k.split('/')[-1]} {v:.3f}" for k, v in metrics.items()
                     if k != "eval/problems")
