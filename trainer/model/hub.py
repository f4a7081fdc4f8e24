"""Model locations: a local Hugging Face directory, or a hub id resolved through
huggingface_hub's cache.

``model.path`` (and ``verimath eval --model``) accepts either. A hub id such as
``Qwen/Qwen2.5-Math-7B`` is looked up in the cache (``$HF_HUB_CACHE``, else
``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``) and downloaded into it when it is not
there; with ``HF_HUB_OFFLINE=1`` only the cache is read. Either way the result is the local
snapshot directory, which everything downstream loads with ``local_files_only``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

MODEL_FILES = ("*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken")
"""What a download fetches: configs, tokenizer files and safetensors weights (not the
duplicate ``.bin``/``.pth``/``.gguf`` copies some repositories also hold)."""

_TRUE = {"1", "on", "yes", "true"}
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def hub_cache_dir() -> Path:
    """huggingface_hub's cache folder as the environment sets it now."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def is_hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` (read now, not at import): only the cache is used."""
    from huggingface_hub import constants

    value = os.environ.get("HF_HUB_OFFLINE")
    return value.strip().lower() in _TRUE if value is not None else bool(constants.HF_HUB_OFFLINE)


def is_hub_id(path: str | os.PathLike) -> bool:
    """Whether ``path`` reads as a hub repository id (``name`` or ``org/name`` of letters,
    digits, ``-``, ``_`` and ``.``, as the hub allows) rather than a filesystem path
    (absolute, ``./``, ``~``, or more than one ``/``)."""
    text = str(path)
    return (len(text) <= 96 and _REPO_ID.fullmatch(text) is not None
            and "--" not in text and ".." not in text and not text.endswith(".git"))


def mistyped_local_path(path: str | os.PathLike) -> str | None:
    """The error for an ``org/name`` that is no directory while ``org/`` is one here (a
    mistyped ``runs/tiny-...``, say): it reads as a local path, not as a hub id; else None."""
    text = str(path)
    parent = Path(text).parent
    if "/" in text and str(parent) not in ("", ".") and parent.is_dir() \
            and not Path(text).exists():
        return (f"{text!r}: no such directory ({parent}/ exists here, so this is read as a "
                "local path; a hub id is org/name with no folder of that org here)")
    return None


def resolve_model_dir(path: str | os.PathLike, *, field: str = "model.path",
                      config_only: bool = False) -> Path:
    """The local directory of a model: ``path`` itself when it is a directory holding
    ``config.json``, else the cached snapshot of the hub id ``path`` (downloaded when
    online and missing; ``config_only`` fetches ``config.json`` alone, enough for a shape).

    Raises:
        ValueError: naming ``field``, the path or id, and the cache: a directory without
            ``config.json``, a path that is neither a directory nor a hub id, or an id that
            is in neither the cache nor (online) the hub.
    """
    folder = Path(path).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            raise ValueError(f"{field}={str(path)!r} is a directory without config.json, not a "
                             "Hugging Face model directory")
        return folder
    if not is_hub_id(path):
        raise ValueError(f"{field}={str(path)!r}: no such directory, and not a Hugging Face "
                         "hub id (org/name)")
    if (local := mistyped_local_path(path)) is not None:
        raise ValueError(f"{field}={local}")
    return _snapshot(str(path), field=field, config_only=config_only)


def _snapshot(repo_id: str, *, field: str, config_only: bool) -> Path:
    """The cached snapshot folder of ``repo_id`` (downloading when allowed)."""
    try:
        from huggingface_hub import hf_hub_download, snapshot_download
        from huggingface_hub.errors import (
            GatedRepoError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
        )
    except ImportError:
        raise ValueError(f"{field}={repo_id!r} is a hub id, which needs huggingface_hub: "
                         "pip install 'verimath[train]'") from None

    cache, offline = hub_cache_dir(), is_hub_offline()
    where = f"{field}={repo_id!r} (a hub id; cache {cache})"
    try:
        if config_only:
            return Path(hf_hub_download(repo_id, "config.json", cache_dir=cache,
                                        local_files_only=offline)).parent
        return Path(snapshot_download(repo_id, cache_dir=cache, local_files_only=offline,
                                      allow_patterns=list(MODEL_FILES)))
    except LocalEntryNotFoundError as exc:
        how = ("HF_HUB_OFFLINE=1 allows the cache only" if offline
               else "and the hub could not be reached")
        raise ValueError(f"{where}: not in the cache, {how}; download it first (`hf download "
                         f"{repo_id}` with the same HF_HUB_CACHE / HF_HOME) or pass a local "
                         f"directory ({type(exc).__name__})") from None
    except GatedRepoError:
        raise ValueError(f"{where}: a gated repository; accept its terms on the hub and log in "
                         "(`hf auth login`) or pass a local directory") from None
    except RepositoryNotFoundError:
        raise ValueError(f"{where}: no such repository on the hub (or a private one; log in "
                         "with `hf auth login`), and no local directory of that name") from None
    except (HfHubHTTPError, OSError) as exc:
        raise ValueError(f"{where}: the download failed: {exc}") from None
