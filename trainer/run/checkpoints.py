"""Saving a run's ``TrainState`` in a checkpoint and restoring it, in one or several processes.

One process writes ``verimath.trainer.checkpoint.files`` directories (a Hugging Face ``model/``, or
with LoRA the ``adapter/`` and, at the last step, the merged ``model/``; ``optimizer.pt``,
``rng.pt``, the run record with the problem stream and the surplus groups in ``extra_state``).
Several ranks write ``verimath.trainer.checkpoint.sharded`` directories (DCP shards and one state
file per rank). Either kind resumes with any number of ranks. The run record
(:class:`verimath.trainer.core.state.RunRecord`) travels as JSON in both.
"""

from __future__ import annotations

import copy
import dataclasses
from functools import partial
from pathlib import Path

from verimath.trainer.checkpoint.files import load_checkpoint, save_checkpoint
from verimath.trainer.checkpoint.sharded import (
    is_sharded,
    load_full_optimizer,
    load_sharded,
    save_sharded,
)
from verimath.trainer.core.distributed import rank_seed
from verimath.trainer.core.groups import Group
from verimath.trainer.core.state import RunRecord, TrainState
from verimath.trainer.model.lora import ADAPTER_DIR, MergedModel, is_lora, save_adapter
from verimath.trainer.model.policy import seed_everything

__all__ = ["is_sharded", "restore_state", "save_state", "saved_record"]


def save_state(state: TrainState) -> Path:
    """A checkpoint of the ``TrainState`` at ``state.step`` (model, optimizer, scheduler,
    RNGs, run record, problem stream, surplus groups); every rank calls it."""
    record = dataclasses.replace(state.record, seconds_before=state.elapsed())
    streams = {"episodes": state.episodes.state_dict(),
               "surplus": [g.to_dict() for g in state.surplus]}
    cfg = state.config
    if state.comm.enabled:
        return save_sharded(state.run_dir / "checkpoints", model=state.model,
                            optimizer=state.optimizer, scheduler=state.scheduler,
                            step=state.step, config=cfg.to_dict(),
                            record={"run": dataclasses.asdict(record)}, rank_state=streams,
                            comm=state.comm, keep_last=cfg.logging.keep_checkpoints,
                            tokenizer=state.tokenizer, export=state.finished)
    model, write_more = state.model, None
    if is_lora(state.model):  # the adapter always, the merged model at the last step
        model = MergedModel(state.model) if state.finished else None
        write_more = partial(_write_adapter, state.model, state.tokenizer)
    return save_checkpoint(state.run_dir / "checkpoints", model=model,
                           tokenizer=state.tokenizer, optimizer=state.optimizer,
                           scheduler=state.scheduler, step=state.step, config=cfg.to_dict(),
                           extra_state={"run": dataclasses.asdict(record), **streams},
                           keep_last=cfg.logging.keep_checkpoints, write_more=write_more)


def _write_adapter(model, tokenizer, checkpoint: Path) -> None:
    save_adapter(model, checkpoint / ADAPTER_DIR)
    tokenizer.save_pretrained(checkpoint / ADAPTER_DIR)


def restore_state(state: TrainState, ckpt: dict) -> None:
    """Optimizer, scheduler, RNGs, problem stream and surplus of ``state`` from ``ckpt``
    (the model's weights of a one-process checkpoint are loaded before sharding)."""
    path, comm = Path(ckpt["path"]), state.comm
    state.step = state.start_step = ckpt["step"]
    if is_sharded(path):
        streams = load_sharded(path, model=state.model, optimizer=state.optimizer, comm=comm)
        load_checkpoint(path, scheduler=state.scheduler, restore_rng=False)
    elif comm.enabled:  # a one-process run continued on several ranks
        import torch

        saved = torch.load(path / "optimizer.pt", map_location="cpu", weights_only=True)
        load_full_optimizer(state.model, state.optimizer, saved)
        load_checkpoint(path, scheduler=state.scheduler, restore_rng=comm.is_main)
        streams = _trainer_state(ckpt) if comm.is_main else None
    else:
        load_checkpoint(path, optimizer=state.optimizer, scheduler=state.scheduler)
        streams = _trainer_state(ckpt)
    if streams is None:  # a rank the saved run did not have: a stream of its own
        seed_everything(rank_seed(state.config.optim.seed, comm.rank) + state.step)
    else:
        state.episodes.load_state_dict(streams["episodes"])
        state.surplus = [Group.from_dict(g) for g in streams.get("surplus", [])]
    state.engine.sync_weights(state.model)


def saved_record(ckpt: dict) -> RunRecord:
    """The run record stored in a checkpoint (ValueError when it is not verimath's)."""
    extra = ckpt.get("extra_state")
    saved = extra.get("run") if isinstance(extra, dict) else None
    names = {f.name for f in dataclasses.fields(RunRecord)}
    if not isinstance(saved, dict) or not names >= saved.keys():
        raise ValueError(f"checkpoint {ckpt['path']} holds no verimath run record (extra_state "
                         "needs 'run'): it was not written by verimath train, or is corrupt; "
                         "resume from an earlier checkpoint directory")
    return RunRecord(**copy.deepcopy(saved))


def _trainer_state(ckpt: dict) -> dict:
    """The problem stream of a one-process checkpoint (``episodes``, ``surplus``)."""
    extra = ckpt.get("extra_state")
    if not isinstance(extra, dict) or not {"run", "episodes"} <= extra.keys():
        raise ValueError(f"checkpoint {ckpt['path']} holds no trainer state (extra_state needs "
                         "'run' and 'episodes'): it was not written by verimath train, or is "
                         "corrupt; resume from an earlier checkpoint directory")
    return extra
