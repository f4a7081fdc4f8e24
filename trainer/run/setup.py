"""Building a run's :class:`~verimath.trainer.core.state.TrainState`: :func:`open_state`.

``open_state`` checks everything that can fail on user input (device, engine, model
directory, problem files, checkpoint) before it creates the run directory, then writes
``config.yaml``, runs the warm start (the built tiny model only, unless
``warmstart.pretrained``), evaluates the held-out set once (``verimath.trainer.run.heldout``),
and builds the KL reference, optimizer, scheduler and episode source; with ``resume`` it
restores them from a checkpoint instead (``verimath.trainer.run.checkpoints``). With several
ranks (``verimath.trainer.core.distributed``) the policy is sharded with FSDP2 after those
steps, and each rank gets its own problem stream and rollout engine. The RL step itself is
``verimath.trainer.run.step.rl_step``; the loop around it, evaluation cadence, checkpoints
and the summary are in ``verimath.trainer.run.loop``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from verimath.envs import Problem
from verimath.rewards.pool.scoring_pool import configure_default_pool
from verimath.trainer.algo.schedule import make_lr_lambda
from verimath.trainer.checkpoint.files import load_checkpoint, resolve_checkpoint
from verimath.trainer.config import TrainConfig
from verimath.trainer.config.files import save_config
from verimath.trainer.core.distributed import Comm, broadcast_parameters, rank_seed, shard_model
from verimath.trainer.core.protocols import RolloutEngine, SamplingParams
from verimath.trainer.core.state import RunRecord, TokenClock, TrainState
from verimath.trainer.model.hub import resolve_model_dir
from verimath.trainer.model.lora import (
    ADAPTER_DIR,
    AdaptersOff,
    add_lora,
    check_lora,
    load_adapter,
    trainable_parameters,
)
from verimath.trainer.model.policy import (
    load_policy,
    load_reference,
    resolve_device,
    save_reference,
    seed_everything,
)
from verimath.trainer.rollout.async_source import check_async
from verimath.trainer.rollout.episodes import EpisodeSource, heldout_problems
from verimath.trainer.rollout.factory import check_engine, make_engine
from verimath.trainer.run.checkpoints import is_sharded, restore_state, saved_record
from verimath.trainer.run.heldout import format_metrics, heldout_metrics
from verimath.trainer.run.metrics import check_backend_packages
from verimath.trainer.run.progress import progress_bar
from verimath.trainer.warmstart.supervised import (
    StopRule,
    probe_evaluator,
    probe_problems,
    warmstart,
)

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = ["REFERENCE_DIR", "check_data_parallel", "open_state", "sampling_params"]

REFERENCE_DIR = "reference"


def open_state(config: TrainConfig, run_dir: str | Path, *, resume: str | Path | None = None,
               echo: Callable[[str], None] = print, comm: Comm | None = None) -> TrainState:
    """Build (or, with ``resume``, restore) every object of a run; see the module docstring.
    ``comm`` places this process among torchrun's ranks (default: one process)."""
    cfg, comm = config, comm or Comm()
    check_data_parallel(cfg, comm)
    if cfg.model.threads:
        torch.set_num_threads(cfg.model.threads)
    device, dtype = _device(cfg, comm)
    check_engine(cfg.rollout)
    check_lora(cfg.model)
    check_async(cfg, comm)
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
    say = echo if comm.is_main else _quiet
    if ckpt is None:
        record.warmstart = _warm_start(model, tokenizer, cfg, heldout, say, comm)
    elif not is_sharded(ckpt["path"]) and not cfg.model.lora_rank:
        load_checkpoint(ckpt["path"], model=model, restore_rng=False)
    engine = make_engine(cfg, model, tokenizer, run_dir=run_dir, device=device, comm=comm)
    try:
        if cfg.model.lora_rank:  # after the engine: it starts from the base's weights
            model = _with_lora(model, cfg, record, run_dir, device, ckpt, comm)
        state = _assemble(cfg, run_dir, device, model, tokenizer, engine, heldout, record,
                          ckpt, say, comm)
    except BaseException:
        engine.close()
        raise
    try:
        _restore_or_seed(state, ckpt)
    except BaseException:
        state.close()
        raise
    return state


def _assemble(cfg: TrainConfig, run_dir: Path, device: torch.device, model: torch.nn.Module,
              tokenizer: PreTrainedTokenizerBase, engine: RolloutEngine, heldout: list[Problem],
              record: RunRecord, ckpt: dict | None, echo: Callable[[str], None],
              comm: Comm) -> TrainState:
    """Held-out start, KL reference, episodes (an asynchronous generator copies the policy
    before it is sharded), sharding and optimizer, in that order; the state they make up."""
    if ckpt is None:
        record.before = heldout_metrics(engine, tokenizer, heldout, cfg, comm)
        if record.before:
            echo("held-out before RL: " + format_metrics(record.before))
    ref_model = None
    if cfg.algo.kl_coef > 0 and not cfg.model.lora_rank:
        ref_model = _reference_model(model, cfg, record, run_dir, device, ckpt)
    episodes = _episodes(cfg, tokenizer, engine, heldout, comm, model, echo)
    if comm.enabled:
        shard = {"device": device, "activation_checkpointing":
                 cfg.algo.activation_checkpointing}
        model = shard_model(model, comm, **shard)
        if ref_model is not None:
            ref_model = shard_model(ref_model, comm, **shard)
    if cfg.algo.kl_coef > 0 and cfg.model.lora_rank:  # the base: the adapters off, no copy
        ref_model = AdaptersOff(model)
    optimizer, scheduler, clock = _optimizer(model, cfg)
    return TrainState(config=cfg, run_dir=run_dir, device=device, model=model,
                      tokenizer=tokenizer, engine=engine, heldout=heldout, record=record,
                      optimizer=optimizer, scheduler=scheduler, token_clock=clock,
                      episodes=episodes,
                      ref_model=ref_model, resumed=ckpt is not None, echo=echo, comm=comm)


def _restore_or_seed(state: TrainState, ckpt: dict | None) -> None:
    """A resumed run continues from ``ckpt``; with several ranks a new run samples each
    rank's responses from its own RNG."""
    cfg, comm = state.config, state.comm
    if ckpt is not None:
        restore_state(state, ckpt)
        if comm.is_main:
            save_config(cfg, state.run_dir / "config.yaml")  # the resumed config, overrides too
        state.echo(f"resumed from {ckpt['path']} at step {state.step}")
    elif comm.enabled:
        seed_everything(rank_seed(cfg.optim.seed, comm.rank))


def _device(cfg: TrainConfig, comm: Comm) -> tuple[torch.device, torch.dtype]:
    """The policy's device and dtype; each rank of a GPU run takes its local GPU."""
    device, dtype = resolve_device(cfg.model.device, cfg.model.dtype)
    if comm.enabled and device.type == "cuda":
        device = torch.device("cuda", comm.local_rank)
        if cfg.model.dtype == "auto":  # fp32 master weights; FSDP computes in bf16
            dtype = torch.float32
    return device, dtype


def check_data_parallel(config: TrainConfig, comm: Comm) -> None:
    """ValueError when the batch does not split evenly over the ranks."""
    if comm.world > 1 and config.rollout.gen_prompts % comm.world:
        raise ValueError(f"rollout.gen_prompts ({config.rollout.gen_prompts}) must be a "
                         f"multiple of the number of processes ({comm.world}): each rank "
                         "generates an equal share of every round")


def _quiet(message: str) -> None:
    """The echo of ranks other than 0: rank 0 speaks for the run."""


def sampling_params(config: TrainConfig) -> SamplingParams:
    """The rollout sampling settings of ``config.rollout``."""
    r = config.rollout
    return SamplingParams(temperature=r.temperature, top_p=r.top_p,
                          max_new_tokens=r.max_new_tokens)


def _warm_start(model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase, cfg: TrainConfig,
                heldout: list[Problem], echo: Callable[[str], None],
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
    excluded, evaluate, evaluate_fine = {p.prompt for p in heldout}, None, None
    if ws.target_accuracy is not None:
        count = ws.fine_probe_problems if ws.fine_every else ws.probe_problems
        probe = probe_problems(cfg.data.family, cfg.data.level, seed=ws.probe_seed, count=count,
                               excluded=excluded, skip_containing=cfg.data.skip_containing)
        excluded |= {p.prompt for p in probe}  # never trained on
        settings = dict(
            k=cfg.eval.k, temperature=cfg.rollout.temperature, top_p=cfg.rollout.top_p,
            max_new_tokens=cfg.rollout.max_new_tokens, template=cfg.model.prompt_template,
            use_chat_template=cfg.model.use_chat_template, answer_style=cfg.reward.answer_style,
            mode=cfg.reward.mode, timeout=cfg.reward.timeout,
            conventions=cfg.reward.conventions, batch_size=cfg.eval.batch_size,
            seed=ws.probe_seed)
        evaluate = probe_evaluator(model, tokenizer, probe[:ws.probe_problems], **settings)
        if ws.fine_every:
            evaluate_fine = probe_evaluator(model, tokenizer, probe, **settings)
    bar = progress_bar(ws.steps, 0, cfg.logging.progress and comm.is_main, "warm start")
    out = warmstart(
        model, tokenizer, family=cfg.data.family, level=cfg.data.level,
        seed=cfg.data.seed + 1, excluded=excluded,
        skip_containing=cfg.data.skip_containing, steps=ws.steps,
        batch_size=ws.batch_size, lr=ws.lr, template=cfg.model.prompt_template,
        use_chat_template=cfg.model.use_chat_template, answer_prefix=ws.answer_prefix,
        noise=ws.noise, targets=ws.targets, flaws=ws.flaws, noise_after=ws.noise_after,
        stop=StopRule(ws.target_accuracy, ws.eval_every, ws.target_checks, ws.near_every,
                      ws.fine_every, ws.fine_tolerance),
        evaluate=evaluate, evaluate_fine=evaluate_fine, echo=echo, progress=bar)
    bar.close()
    broadcast_parameters(model, comm)
    return out


def _reference_model(model: torch.nn.Module, cfg: TrainConfig, record: RunRecord,
                     run_dir: Path, device: torch.device, ckpt: dict | None) -> torch.nn.Module:
    """The frozen KL reference: the policy as RL started (after the warm start), also after
    ``--resume``. Its origin is recorded in ``record`` (so in every checkpoint):
    ``model.path`` when RL starts from that directory unchanged, else a copy written once to
    ``<run dir>/reference/`` (a relative origin resolves against the checkpoint's run
    directory)."""
    if ckpt is None:
        if cfg.model.path is not None and not record.warmstart.get("warmstart/steps"):
            record.reference = str(resolve_model_dir(cfg.model.path).resolve())  # id: snapshot
        else:
            save_reference(model, run_dir / REFERENCE_DIR)
            record.reference = REFERENCE_DIR
        return copy.deepcopy(model).eval().requires_grad_(False)
    if record.reference is None:
        raise ValueError(
            f"algo.kl_coef > 0 but checkpoint {ckpt['path']} records no KL reference model "
            "(the run started with algo.kl_coef=0); resume with algo.kl_coef=0 or start a "
            "new run")
    _, dtype = resolve_device(cfg.model.device, cfg.model.dtype)
    return load_reference(_saved_reference(record, ckpt, run_dir), device=device, dtype=dtype)


def _saved_reference(record: RunRecord, ckpt: dict, run_dir: Path) -> Path:
    """The directory ``record.reference`` names for a checkpoint (a relative one lies in the
    checkpoint's run directory); the record keeps an absolute path once resumed elsewhere."""
    path = Path(ckpt["path"]).parent.parent / record.reference  # an absolute one stays as is
    if path.resolve().parent != run_dir.resolve():  # resumed into another directory
        record.reference = str(path.resolve())
    return path


def _with_lora(model: torch.nn.Module, cfg: TrainConfig, record: RunRecord, run_dir: Path,
               device: torch.device, ckpt: dict | None, comm: Comm) -> torch.nn.Module:
    """The policy with LoRA adapters (``model.lora_rank``) on its frozen base, which
    ``record.reference`` names like the KL reference: ``model.path`` when RL starts from it
    unchanged, else a copy written once to ``<run dir>/reference/``. A resumed run reloads
    that base, then the checkpoint's adapter (a sharded one restores both later)."""
    if ckpt is None:
        if cfg.model.path is not None and not record.warmstart.get("warmstart/steps"):
            record.reference = str(resolve_model_dir(cfg.model.path).resolve())
        else:
            if comm.is_main:
                save_reference(model, run_dir / REFERENCE_DIR)
            comm.barrier()
            record.reference = REFERENCE_DIR
        return add_lora(model, cfg.model, base=str((run_dir / record.reference).resolve()))
    adapter = Path(ckpt["path"]) / ADAPTER_DIR
    if record.reference is None or not (adapter.is_dir() or is_sharded(ckpt["path"])):
        raise ValueError(f"model.lora_rank={cfg.model.lora_rank} but checkpoint {ckpt['path']} "
                         "holds no LoRA adapter (the run trained the full model); resume with "
                         "model.lora_rank=0 or start a new run")
    base = _saved_reference(record, ckpt, run_dir)
    if cfg.model.path is None or base.resolve() != resolve_model_dir(cfg.model.path).resolve():
        _, dtype = resolve_device(cfg.model.device, cfg.model.dtype)
        model.load_state_dict(load_reference(base, device=device, dtype=dtype).state_dict())
    model = add_lora(model, cfg.model, base=str(base.resolve()))
    if not is_sharded(ckpt["path"]):
        load_adapter(model, adapter)
    return model


def _optimizer(model: torch.nn.Module, cfg: TrainConfig) -> tuple[
        torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler, TokenClock | None]:
    """AdamW and its schedule, counted in optimizer updates (``ppo_epochs`` x mini-batches
    per step), and with ``optim.token_budget`` the clock its decay reads."""
    o, a = cfg.optim, cfg.algo
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=o.lr, betas=o.betas,
                                  weight_decay=o.weight_decay)  # the adapters only with LoRA
    per_step = a.ppo_epochs * math.ceil(a.train_prompts / a.mini_batch_prompts)
    total = max(1, o.steps * per_step)
    clock = TokenClock(o.token_budget) if o.token_budget else None  # decay over the budget
    lam = make_lr_lambda(clock, warmup_steps=min(o.warmup_steps, total - 1),  # total >= 1
                         total_steps=total, schedule=o.schedule)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lam), clock


def _episodes(cfg: TrainConfig, tokenizer: PreTrainedTokenizerBase, engine: RolloutEngine,
              heldout: list[Problem], comm: Comm, model: torch.nn.Module | None = None,
              echo: Callable[[str], None] = print) -> EpisodeSource:
    """The training problem stream of this rank, scored by the configured reward (with
    ``rollout.async_steps``, in a generator process holding a copy of ``model``)."""
    r = cfg.reward
    reward_kwargs = {"style": r.answer_style, "mode": r.mode, "timeout": r.timeout,
                     "conventions": r.conventions}
    if r.overlong_punishment:  # DAPO 4: soft overlong punishment, added by the env
        reward_kwargs.update(max_length=cfg.rollout.max_new_tokens,
                             cache_length=r.overlong_buffer)
    source = dict(
        params=sampling_params(cfg),
        num_problems=cfg.rollout.gen_prompts // comm.world,
        group_size=cfg.rollout.group_size,
        template=cfg.model.prompt_template, use_chat_template=cfg.model.use_chat_template,
        family=cfg.data.family, level=cfg.data.level,
        seed=rank_seed(cfg.data.seed, comm.rank),  # each rank its own problems
        train_file=cfg.data.train_file, excluded={p.prompt for p in heldout},
        reward_kwargs=reward_kwargs, skip_containing=cfg.data.skip_containing,
        **cfg.data.curriculum())  # adapt_level / skip_solved settings, None when off
    if cfg.rollout.async_steps:
        from verimath.trainer.rollout.async_source import make_async_source

        return make_async_source(cfg, model, tokenizer, source, echo=echo, comm=comm)
    return EpisodeSource(tokenizer=tokenizer, engine=engine, **source)
