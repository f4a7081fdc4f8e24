"""Atomic training checkpoints: save, find the latest, restore.

One checkpoint is one directory ``<directory>/step_<step:08d>/``::

    model/            model.save_pretrained + tokenizer.save_pretrained: a Hugging Face
                      directory that ``from_pretrained`` loads as is (a plain nn.Module
                      without save_pretrained is stored as model/model.pt instead)
    adapter/          a LoRA run's adapter (peft format) and tokenizer; its checkpoints
                      hold model/ (the merged model) only at the last step
    optimizer.pt      optimizer.state_dict()
    scheduler.pt      scheduler.state_dict()
    rng.pt            python, numpy (legacy global), torch CPU and all CUDA RNG states
    config.json       the run's config (a dict or a dataclass)
    extra_state.json  trainer state (sampler, environments) when it survives a JSON round
                      trip unchanged; else extra_state.pt (tensors, tuples, int keys:
                      anything ``torch.load(weights_only=True)`` reads)
    checkpoint.json   manifest written last: step, format, file list

Atomicity: everything is written into a hidden temporary directory next to the final one
(same filesystem), files are fsync'ed, and the directory is renamed into place. A crash
mid-write leaves at worst a hidden ``.step_*.tmp-*`` directory, never a partial
``step_*``; ``latest_checkpoint`` only returns directories whose manifest exists.
All ``.pt`` files are read back with ``torch.load(weights_only=True)``.

The names and the search for complete checkpoints (:func:`latest_checkpoint`,
:func:`resolve_checkpoint`, ...) live in :mod:`verimath.trainer.checkpoint.layout`, the RNG
states in :mod:`verimath.trainer.checkpoint.rng`; both are re-exported here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from verimath.trainer.checkpoint.layout import (
    FORMAT_VERSION,
    MANIFEST,
    checkpoint_name,
    is_checkpoint,
    latest_checkpoint,
    list_checkpoints,
    resolve_checkpoint,
)
from verimath.trainer.checkpoint.rng import rng_state, set_rng_state

__all__ = ["MANIFEST", "checkpoint_name", "is_checkpoint", "latest_checkpoint",
           "list_checkpoints", "load_checkpoint", "resolve_checkpoint", "save_checkpoint"]


def _unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The user's module inside DistributedDataParallel / torch.compile wrappers."""
    while True:
        inner = getattr(model, "module", None) or getattr(model, "_orig_mod", None)
        if not isinstance(inner, torch.nn.Module):
            return model
        model = inner


def _config_dict(config) -> dict:
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        config = dataclasses.asdict(config)
    if not isinstance(config, Mapping):
        raise ValueError(f"config must be a dict or a dataclass, got {type(config).__name__}")
    try:
        json.dumps(dict(config))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"config must be JSON-serializable for config.json: {exc}") from None
    return dict(config)


def write_json(path: Path, value) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _json_exact(value) -> str | None:
    """JSON text of ``value`` if it reads back equal (no tuple, int key, NaN...), else None."""
    try:
        text = json.dumps(value, indent=2, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return text if json.loads(text) == value else None


def _write_contents(tmp: Path, *, model, tokenizer, optimizer, scheduler, step, config, extra,
                    write_more=None):
    if model is not None:
        model_dir = tmp / "model"
        model_dir.mkdir()
        module = _unwrap(model)
        if hasattr(module, "save_pretrained"):
            module.save_pretrained(model_dir)
        else:
            torch.save(module.state_dict(), model_dir / "model.pt")
        if tokenizer is not None:
            tokenizer.save_pretrained(model_dir)
    if write_more is not None:
        write_more(tmp)
    if optimizer is not None:
        torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    if scheduler is not None:
        torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
    torch.save(rng_state(), tmp / "rng.pt")
    write_json(tmp / "config.json", config)
    if extra is not None:
        text = _json_exact(extra)
        if text is None:
            torch.save(extra, tmp / "extra_state.pt")
        else:
            (tmp / "extra_state.json").write_text(text + "\n", encoding="utf-8")
    files = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())
    manifest = {"step": int(step), "format": FORMAT_VERSION, "files": files, "time": time.time()}
    write_json(tmp / MANIFEST, manifest)


def fsync(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    for path in [*sorted(root.rglob("*")), root]:
        fsync(path)


def save_checkpoint(
    directory: str | os.PathLike,
    *,
    model: torch.nn.Module | None,
    tokenizer=None,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler=None,
    step: int,
    config,
    extra_state: Any = None,
    keep_last: int | None = None,
    write_more=None,
) -> Path:
    """Write ``<directory>/step_<step>/`` atomically and return its path.

    ``directory`` holds all checkpoints of a run (created if missing). An existing
    checkpoint of the same step is replaced. ``keep_last=N`` then deletes all but the
    ``N`` newest complete checkpoints. Call it on one process only (rank 0). ``model=None``
    writes no ``model/``; ``write_more(folder)`` adds files of its own (e.g. a LoRA
    adapter) to the checkpoint before its manifest.

    Raises:
        ValueError: bad ``step``/``keep_last``, or a config that is not JSON-serializable
            (checked before anything is written).
    """
    if int(step) != step or step < 0:
        raise ValueError(f"step must be an integer >= 0, got {step!r}")
    if keep_last is not None and (int(keep_last) != keep_last or keep_last < 1):
        raise ValueError(f"keep_last must be a positive integer or None, got {keep_last!r}")
    config = _config_dict(config)
    parent = Path(directory)
    parent.mkdir(parents=True, exist_ok=True)
    final = parent / checkpoint_name(step)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=parent))
    try:
        _write_contents(
            tmp,
            model=model,
            tokenizer=tokenizer,
            optimizer=optimizer,
            scheduler=scheduler,
            step=step,
            config=config,
            extra=extra_state,
            write_more=write_more,
        )
        fsync_tree(tmp)
        move_into_place(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync(parent)  # make the rename durable
    if keep_last is not None:
        for old in list_checkpoints(parent)[:-keep_last]:
            if old != final:
                shutil.rmtree(old, ignore_errors=True)
    return final


def move_into_place(tmp: Path, final: Path) -> None:
    if not final.exists():
        os.rename(tmp, final)
        return
    trash = Path(tempfile.mkdtemp(prefix=f".{final.name}.old-", dir=final.parent))
    os.rename(final, trash / final.name)
    os.rename(tmp, final)
    shutil.rmtree(trash, ignore_errors=True)


def _load_pt(path: Path, what: str, map_location):
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except FileNotFoundError:
        raise ValueError(
            f"checkpoint {path.parent} has no {path.name}; cannot restore {what}"
        ) from None
    except Exception as exc:  # truncated or overwritten file: unpickling/zip errors
        raise ValueError(f"checkpoint file {path} is corrupt, cannot restore {what} "
                         f"({type(exc).__name__}: {_first_sentence(str(exc))}); "
                         "resume from an earlier checkpoint directory") from None


def _first_sentence(text: str, limit: int = 160) -> str:
    """The first sentence of an error message, shortened at a word boundary."""
    lines = text.strip().splitlines()
    sentence = lines[0].split(". ")[0] if lines else ""
    if len(sentence) <= limit:
        return sentence
    return sentence[:limit].rsplit(" ", 1)[0] + " ..."


def _read_json(path: Path):
    """A JSON file of a checkpoint; a missing or unreadable one raises ValueError naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"checkpoint {path.parent} has no {path.name}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"checkpoint file {path} is corrupt ({exc}); resume from an earlier "
                         "checkpoint directory") from None


def _model_state_from_dir(model_dir: Path, map_location) -> dict[str, torch.Tensor]:
    if (model_dir / "model.pt").is_file():
        return _load_pt(model_dir / "model.pt", "the model", map_location)
    from safetensors.torch import load_file

    shards = sorted(model_dir.glob("*.safetensors"))
    if not shards:
        raise ValueError(f"checkpoint model directory {model_dir} holds no weights")
    device = str(map_location) if map_location is not None else "cpu"
    state: dict[str, torch.Tensor] = {}
    for shard in shards:
        try:
            state.update(load_file(shard, device=device))
        except Exception as exc:  # safetensors raises its own error type on a bad header
            raise ValueError(f"checkpoint weights {shard} are corrupt ({exc}); resume from an "
                             "earlier checkpoint directory") from None
    return state


def _load_model_weights(model: torch.nn.Module, model_dir: Path, map_location) -> None:
    """Load saved weights into ``model``; keys save_pretrained dropped must be tied ones."""
    module = _unwrap(model)
    state = _model_state_from_dir(model_dir, map_location)
    try:
        missing, unexpected = module.load_state_dict(state, strict=False)
    except RuntimeError as exc:  # shape mismatches
        raise ValueError(f"checkpoint weights in {model_dir} do not fit the model: {exc}") from None
    own = module.state_dict()
    loaded_ptrs = {own[k].data_ptr() for k in state if k in own}
    untied = [k for k in missing if own[k].data_ptr() not in loaded_ptrs]
    if unexpected or untied:
        raise ValueError(
            f"checkpoint weights in {model_dir} do not fit the model: "
            f"missing {untied[:5]}, unexpected {list(unexpected)[:5]} "
            "(was the model built from the same config?)"
        )


def load_checkpoint(
    directory: str | os.PathLike,
    *,
    model: torch.nn.Module | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler=None,
    restore_rng: bool = True,
    map_location="cpu",
) -> dict[str, Any]:
    """Restore what is given from the checkpoint ``directory`` (a ``step_*`` directory).

    Loads the weights into ``model`` (already built, e.g. from the same config), the
    optimizer and scheduler states, and (``restore_rng``) the global RNG states. The
    tokenizer is not restored here: load it with ``from_pretrained(result["model_dir"])``.

    Returns ``{"step", "config", "extra_state", "path", "model_dir"}``; ``extra_state`` is
    None when none was saved.

    Raises:
        ValueError: ``directory`` is not a complete checkpoint, or lacks a part asked for,
            or the weights do not fit the model.
    """
    path = Path(directory)
    if not is_checkpoint(path):
        raise ValueError(
            f"{path} is not a complete checkpoint (no {MANIFEST}; an interrupted write, or "
            "a run directory: use resolve_checkpoint/latest_checkpoint to find one)"
        )
    manifest = _read_json(path / MANIFEST)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("step"), int):
        raise ValueError(f"{path / MANIFEST}: not a checkpoint manifest (no integer 'step')")
    if manifest.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path}: checkpoint format {manifest.get('format')!r} is not supported")
    if model is not None:
        _load_model_weights(model, path / "model", map_location)
    if optimizer is not None:
        optimizer.load_state_dict(_load_pt(path / "optimizer.pt", "the optimizer", map_location))
    if scheduler is not None:
        scheduler.load_state_dict(_load_pt(path / "scheduler.pt", "the scheduler", map_location))
    if restore_rng:
        set_rng_state(_load_pt(path / "rng.pt", "the RNG states", "cpu"))
    extra = None
    if (path / "extra_state.json").is_file():
        extra = _read_json(path / "extra_state.json")
    elif (path / "extra_state.pt").is_file():
        extra = _load_pt(path / "extra_state.pt", "the extra state", map_location)
    return {
        "step": int(manifest["step"]),
        "config": _read_json(path / "config.json"),
        "extra_state": extra,
        "path": path,
        "model_dir": path / "model",
    }
