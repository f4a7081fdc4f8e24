"""Device choice, seeding, and loading the policy (a Hugging Face directory or the tiny model)."""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from verimath.trainer.config import ModelConfig
from verimath.trainer.model.hub import resolve_model_dir


def resolve_device(device: str = "auto", dtype: str = "auto") -> tuple[torch.device, torch.dtype]:
    """``auto``: CUDA with bfloat16 when a GPU is visible, else CPU with float32."""
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"model.device={device!r} but no CUDA device is visible; use auto or cpu")
    dev = torch.device(device)
    if dev.type == "cpu" and dtype == "float16":  # CPU half-precision sampling yields NaN probs
        raise ValueError("model.dtype='float16' is not supported on the CPU (sampling overflows "
                         "to NaN); use float32 (or auto) or bfloat16")
    if dtype == "auto":
        return dev, (torch.bfloat16 if dev.type == "cuda" else torch.float32)
    return dev, getattr(torch, dtype)


def seed_everything(seed: int) -> None:
    """Seed python, numpy's legacy global RNG and torch (the trainer owns these RNGs)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def load_policy(config: ModelConfig, *, device: torch.device, dtype: torch.dtype, seed: int = 0):
    """``(model, tokenizer)``: ``config.path`` loaded with transformers, or the tiny model.

    A path is a local directory or a hub id (downloaded into huggingface_hub's cache when
    missing, cache only with ``HF_HUB_OFFLINE=1``). A tokenizer without a pad token gets its
    EOS token as pad.
    """
    if config.path is None:
        from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model

        tokenizer = make_char_tokenizer()
        model = make_tiny_model(tokenizer, hidden_size=config.tiny_hidden_size,
                                num_layers=config.tiny_layers, num_heads=config.tiny_heads,
                                seed=seed)
    else:
        model, tokenizer = load_pretrained(config.path, dtype=dtype)
    return model.to(device=device, dtype=dtype), tokenizer


def load_pretrained(path: str | os.PathLike, *, dtype: torch.dtype, field: str = "model.path"):
    """A causal LM and its tokenizer from a local Hugging Face directory or a hub id (resolved
    through huggingface_hub's cache, :func:`verimath.trainer.model.hub.resolve_model_dir`;
    ValueError naming ``field``). A LoRA adapter folder loads as its base model with the
    adapter merged in."""
    from transformers import AutoModelForCausalLM

    if is_adapter_dir(path):
        return _load_adapted(Path(path), dtype=dtype, field=field)
    folder = resolve_model_dir(path, field=field)
    tokenizer = load_tokenizer(folder)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, local_files_only=True)
    return model, tokenizer


def is_adapter_dir(path: str | os.PathLike) -> bool:
    """A LoRA adapter folder (``adapter_config.json``, no ``config.json``), e.g. a LoRA
    checkpoint's ``adapter/``."""
    folder = Path(path)
    return (folder / "adapter_config.json").is_file() and not (folder / "config.json").is_file()


def _load_adapted(folder: Path, *, dtype: torch.dtype, field: str):
    """The base model an adapter folder names, with the adapter merged in, and the tokenizer
    saved beside the adapter (else the base's)."""
    import json

    try:
        base = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8")).get(
            "base_model_name_or_path")
    except (OSError, ValueError, AttributeError):
        base = None
    if not base:
        raise ValueError(f"{field}={str(folder)!r} is a LoRA adapter without "
                         "base_model_name_or_path in adapter_config.json; load its base model "
                         "and the adapter with peft")
    try:
        from peft import PeftModel
    except ImportError:
        raise ValueError(f"{field}={str(folder)!r} is a LoRA adapter, which needs peft: "
                         "pip install 'verimath[lora]'") from None
    model, tokenizer = load_pretrained(base, dtype=dtype, field=f"{field} (the adapter's base)")
    if (folder / "tokenizer_config.json").is_file():
        tokenizer = load_tokenizer(folder)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
    return PeftModel.from_pretrained(model, folder).merge_and_unload(), tokenizer


GENERIC_TOKENIZER_CLASSES = ("TokenizersBackend", "PreTrainedTokenizerFast")


def load_tokenizer(folder: str | os.PathLike):
    """The tokenizer of a local model directory (a path or a string), exactly as saved.

    A tokenizer saved as a generic fast tokenizer (``tokenizer_class`` ``TokenizersBackend``
    or ``PreTrainedTokenizerFast``, e.g. the tiny character tokenizer) is loaded as such:
    ``AutoTokenizer`` would pick the class of the model type instead (``Qwen2Tokenizer`` for
    a Qwen2 config) and replace its pre-tokenizer, silently dropping spaces and newlines."""
    import json

    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{str(folder)!r} is not a model directory; pass the folder that "
                         "holds tokenizer.json (e.g. a checkpoint's model/ directory)")
    config_file = folder / "tokenizer_config.json"
    declared = None
    if config_file.is_file():
        try:
            declared = json.loads(config_file.read_text(encoding="utf-8")).get("tokenizer_class")
        except (json.JSONDecodeError, AttributeError):
            declared = None
    if declared in GENERIC_TOKENIZER_CLASSES and (folder / "tokenizer.json").is_file():
        return PreTrainedTokenizerFast.from_pretrained(folder, local_files_only=True)
    return AutoTokenizer.from_pretrained(folder, local_files_only=True)


def save_reference(model, folder: str | os.PathLike) -> Path:
    """Write ``model`` as a Hugging Face directory at ``folder``, atomically (a temporary
    sibling renamed into place; an existing ``folder`` is replaced)."""
    final = Path(folder)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        model.save_pretrained(tmp)
        if final.exists():
            shutil.rmtree(final)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def load_reference(path: str | os.PathLike, *, device: torch.device, dtype: torch.dtype):
    """A frozen model (eval mode, no gradients) from a local Hugging Face directory."""
    from transformers import AutoModelForCausalLM

    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise ValueError(f"the KL reference model {str(folder)!r} is missing (no config.json); "
                         "it is the model the run started RL from")
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, local_files_only=True)
    return model.to(device=device, dtype=dtype).eval().requires_grad_(False)
