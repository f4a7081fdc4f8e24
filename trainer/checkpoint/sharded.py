"""Checkpoints of a sharded (data-parallel) run, written with torch distributed checkpointing.

``step_<n>/`` of a run on several ranks holds::

    dcp/                  model and optimizer state (``torch.distributed.checkpoint``): every
                          rank writes its own shards, nothing is gathered on one rank
    rank_<r>.pt           each rank's RNG states, problem stream and surplus groups
    scheduler.pt, config.json, extra_state.json (the run record), checkpoint.json (manifest)
    model/                the final checkpoint only: a Hugging Face export, gathered one
                          parameter at a time (a LoRA policy's adapters merged in)
    adapter/              a LoRA policy's adapter (peft format), in every checkpoint

The directory is written under a temporary name and renamed by rank 0 once every rank has
finished, so an interrupted save leaves the previous checkpoint as the latest complete one.
DCP loads into any number of ranks (resharding as needed), so ``--resume`` works with
another world size; each rank's stream state is restored when ``rank_<r>.pt`` exists (the
same number of ranks continues exactly; a different one starts the missing ranks' streams
afresh).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import torch
from verimath.trainer.checkpoint.files import fsync, fsync_tree, move_into_place, write_json
from verimath.trainer.checkpoint.layout import (
    FORMAT_VERSION,
    MANIFEST,
    checkpoint_name,
    list_checkpoints,
)
from verimath.trainer.checkpoint.rng import rng_state, set_rng_state
from verimath.trainer.core.distributed import Comm, full_parameters
from verimath.trainer.model.lora import (
    ADAPTER_DIR,
    MergedModel,
    adapter_state,
    is_lora,
    merged_parameters,
    save_adapter,
)

SHARDS = "dcp"


def is_sharded(path: str | Path) -> bool:
    return (Path(path) / SHARDS).is_dir()


def save_sharded(directory: Path, *, model, optimizer, scheduler, step: int, config: dict,
                 record: dict, rank_state: dict, comm: Comm, keep_last: int,
                 tokenizer=None, export: bool = False) -> Path:
    """Write ``directory/step_<step>/`` from every rank (a collective call)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    final = Path(directory) / checkpoint_name(step)
    tmp = Path(directory) / f".{final.name}.tmp-sharded"
    if comm.is_main:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    comm.barrier()
    model_state, optim_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=str(tmp / SHARDS))
    torch.save({"rng": rng_state(), "state": rank_state}, tmp / f"rank_{comm.rank}.pt")
    if export:
        _export(model, tokenizer, tmp / "model", comm)
    if is_lora(model):
        _export_adapter(model, tokenizer, tmp / ADAPTER_DIR, comm)
    comm.barrier()
    if comm.is_main:
        torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
        write_json(tmp / "config.json", config)
        write_json(tmp / "extra_state.json", record)
        files = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())
        write_json(tmp / MANIFEST, {"step": int(step), "format": FORMAT_VERSION, "files": files,
                                    "time": time.time(), "ranks": comm.world})
        fsync_tree(tmp)
        move_into_place(tmp, final)
        fsync(final.parent)
        for old in list_checkpoints(directory)[:-keep_last]:
            if old != final:
                shutil.rmtree(old, ignore_errors=True)
    comm.barrier()
    return final


def load_sharded(path: Path, *, model, optimizer, comm: Comm) -> dict | None:
    """Model and optimizer from ``path/dcp`` (any number of ranks), this rank's RNG states;
    returns this rank's saved state, or None when the run had fewer ranks."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    model_state, optim_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optim": optim_state}
    dcp.load(state, checkpoint_id=str(Path(path) / SHARDS))
    set_state_dict(model, optimizer, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
    own = Path(path) / f"rank_{comm.rank}.pt"
    if not own.is_file():
        return None
    saved = torch.load(own, weights_only=True)
    set_rng_state(saved["rng"])
    return saved["state"]


def load_full_optimizer(model, optimizer, saved: dict) -> None:
    """A one-process ``optimizer.state_dict()`` (parameters by position) into an optimizer
    over a sharded ``model``: positions become parameter names, then each rank keeps its
    shard."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

    names = [name for name, _ in model.named_parameters()]
    by_name = {"state": {names[i]: value for i, value in saved["state"].items()},
               "param_groups": [{**group, "params": [names[i] for i in group["params"]]}
                                for group in saved["param_groups"]]}
    set_state_dict(model, optimizer, model_state_dict={}, optim_state_dict=by_name,
                   options=StateDictOptions(full_state_dict=True, strict=False))


def _export(model, tokenizer, folder: Path, comm: Comm) -> None:
    """A Hugging Face directory of the full model on rank 0, gathered one parameter at a time
    (every rank takes part in each gather); a LoRA policy's adapters merged in."""
    lora = is_lora(model)
    state = {}
    for name, tensor in (merged_parameters if lora else full_parameters)(model):
        if comm.is_main:
            state[name] = tensor.to("cpu", copy=True)
    if comm.is_main:
        module = getattr(model, "module", model)
        if lora:
            MergedModel(module).save_pretrained(folder, state=state)
        else:
            module.save_pretrained(folder, state_dict=state)
        if tokenizer is not None:
            tokenizer.save_pretrained(folder)


def _export_adapter(model, tokenizer, folder: Path, comm: Comm) -> None:
    """A LoRA policy's adapter (peft format) on rank 0, gathered on every rank."""
    state = adapter_state(model)
    if comm.is_main:
        save_adapter(model, folder, state=state)
        if tokenizer is not None:
            tokenizer.save_pretrained(folder)
