"""LoRA adapters on the policy (``model.lora_rank > 0``, needs ``verimath[lora]``: peft).

:func:`add_lora` injects rank-``r`` adapters into the policy's linear layers in place (peft's
``get_peft_model``) and freezes everything else; the policy stays the same transformers
module, so the log-prob forward, ``generate``, FSDP2 sharding and the optimizer see it as
before, with only the adapters trainable. Around it:

- :class:`AdaptersOff`, the KL reference: the same module with its adapters switched off
  for the duration of each call, so the base model is never copied;
- :func:`merged_parameters`, what a rollout engine that keeps its own weights receives
  (vLLM, the HF copy of several ranks): every base weight with its adapter added,
  ``W + (alpha / r) B A``, under the base model's parameter names (gathered one tensor at a
  time when sharded);
- :func:`save_adapter` / :func:`load_adapter`: the adapter in peft's format
  (``adapter_config.json``, ``adapter_model.safetensors``), which
  ``peft.PeftModel.from_pretrained(base, folder)`` loads as well;
- ``model.lora_dropout`` applies in the update only (``algo.update.UpdateOnlyDropout``), never
  to rollouts or the old and reference log-probs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import torch
from verimath.trainer.algo.update import UpdateOnlyDropout
from verimath.trainer.config import ModelConfig
from verimath.trainer.core.distributed import FORWARD_METHOD

ADAPTER = "default"
"""peft's name of the one adapter a policy carries."""
ADAPTER_DIR = "adapter"
"""The adapter's folder in a checkpoint."""
_PREFIX = "base_model.model."  # peft's key prefix in adapter_model.safetensors
_WEIGHTS = "adapter_model.safetensors"

__all__ = ["ADAPTER_DIR", "AdaptersOff", "MergedModel", "add_lora", "check_lora",
           "is_lora", "load_adapter", "merged_parameters", "save_adapter",
           "trainable_parameters"]


def check_lora(config: ModelConfig) -> None:
    """ValueError naming the extra when ``model.lora_rank`` is set and peft is missing."""
    if config.lora_rank and importlib.util.find_spec("peft") is None:
        raise ValueError("model.lora_rank needs peft: pip install 'verimath[lora]' (or set "
                         "model.lora_rank=0 to train the full model)")


def lora_alpha(config: ModelConfig) -> float:
    """``model.lora_alpha``, or ``2 x lora_rank`` when it is None."""
    return float(config.lora_alpha if config.lora_alpha is not None else 2 * config.lora_rank)


def add_lora(model: torch.nn.Module, config: ModelConfig, *, base: str | None = None
             ) -> torch.nn.Module:
    """``model`` itself with LoRA adapters of ``config`` in its linear layers (B zero, so
    the function is unchanged) and every other parameter frozen. ``base`` is recorded in
    the adapter's config as the model it applies to. ValueError names
    ``model.lora_target_modules`` when they match no linear layer, or a layer peft adapts
    in a way the merged push cannot express."""
    check_lora(config)
    from peft import LoraConfig, get_peft_model

    targets = list(config.lora_target_modules)
    settings = LoraConfig(
        r=config.lora_rank, lora_alpha=lora_alpha(config), lora_dropout=config.lora_dropout,
        target_modules="all-linear" if targets == ["all-linear"] else targets,
        task_type="CAUSAL_LM", bias="none")
    try:
        with warnings.catch_warnings():  # peft 0.21 asks transformers 5 a deprecated name
            warnings.filterwarnings("ignore", ".*is_gradient_checkpointing", FutureWarning)
            inner = get_peft_model(model, settings).get_base_model()
    except ValueError as exc:
        raise ValueError(f"model.lora_target_modules={targets}: {exc}") from None
    inner.peft_config[ADAPTER].base_model_name_or_path = base  # peft takes the model's own
    layers = dict(_lora_layers(inner))
    odd = [name for name, layer in layers.items()
           if not isinstance(layer.get_base_layer(), torch.nn.Linear) or layer.fan_in_fan_out
           or getattr(layer, "use_dora", {}).get(ADAPTER, False)]
    if odd:
        raise ValueError(f"model.lora_target_modules={targets} adapts {odd[:3]}, which are not "
                         "plain linear layers; list linear layers only (q_proj, v_proj, ...)")
    for layer in layers.values():  # dropout in the update only
        dropout = layer.lora_dropout[ADAPTER]
        if isinstance(dropout, torch.nn.Dropout):
            layer.lora_dropout[ADAPTER] = UpdateOnlyDropout(dropout.p)
    return inner


def is_lora(model: torch.nn.Module) -> bool:
    """Whether ``model`` carries LoRA adapters (from :func:`add_lora`)."""
    return ADAPTER in (getattr(_unwrapped(model), "peft_config", None) or {})


def trainable_parameters(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The parameters the optimizer updates: those that require gradients (only the
    adapters under LoRA, every one otherwise)."""
    return [p for p in model.parameters() if p.requires_grad]


def _unwrapped(model):
    return getattr(model, "module", model)


def _lora_layers(model) -> Iterator[tuple[str, torch.nn.Module]]:
    from peft.tuners.lora import LoraLayer

    for name, module in model.named_modules():
        if isinstance(module, LoraLayer):
            yield name, module


@contextlib.contextmanager
def adapters_disabled(model: torch.nn.Module):
    """The base model for the duration: every adapter switched off, then on again."""
    layers = [layer for _, layer in _lora_layers(model)]
    for layer in layers:
        layer.enable_adapters(False)
    try:
        yield model
    finally:
        for layer in layers:
            layer.enable_adapters(True)


class AdaptersOff(torch.nn.Module):
    """The KL reference of a LoRA policy: calls run ``module`` (the policy or one of its
    parts) with the adapters switched off. Nothing is copied or registered: the wrapper
    has no parameters of its own, and its base model and output head are wrapped the same
    way, so the chunked log-prob forward (base, then head) sees the base model too."""

    def __init__(self, module: torch.nn.Module, root: torch.nn.Module | None = None) -> None:
        super().__init__()
        object.__setattr__(self, "_wrapped", module)  # not a submodule: no parameters here
        object.__setattr__(self, "_root", module if root is None else root)
        self.config = getattr(module, "config", None)
        self.base_model_prefix = "reference_base"
        method = getattr(module, FORWARD_METHOD, None)
        if method is not None:  # a sharded policy: its FSDP forward method, adapters off
            def forward_method(*args, **kwargs):
                with torch.no_grad(), adapters_disabled(self._root):
                    return method(*args, **kwargs)
            object.__setattr__(self, FORWARD_METHOD, forward_method)

    def forward(self, *args, **kwargs):
        with torch.no_grad(), adapters_disabled(self._root):
            return self._wrapped(*args, **kwargs)

    @property
    def reference_base(self):
        prefix = getattr(self._wrapped, "base_model_prefix", "")
        base = getattr(self._wrapped, prefix, None) if prefix else None
        return None if base is None else AdaptersOff(base, self._root)

    def get_output_embeddings(self):
        head = self._wrapped.get_output_embeddings()
        return None if head is None else AdaptersOff(head, self._root)


def _full(tensor: torch.Tensor) -> torch.Tensor:
    """A sharded (DTensor) parameter gathered, a plain one as is (a collective when sharded)."""
    return (tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor).detach()


def merged_parameters(model: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """``(base model name, full tensor)`` one at a time: each adapted weight as ``W + (alpha
    / r) B A`` (computed in float32, returned in ``W``'s dtype), the other parameters as
    they are, the adapters themselves left out. With several ranks every rank must iterate
    in step (each gather is a collective)."""
    module = _unwrapped(model)
    layers = dict(_lora_layers(module))
    for name, param in module.named_parameters():
        if ".lora_A." in name or ".lora_B." in name:
            continue
        full = _full(param)
        owner, _, leaf = name.rpartition(".")
        if owner.endswith(".base_layer"):
            owner = owner.removesuffix(".base_layer")
            layer = layers[owner]
            if leaf == "weight" and not layer.merged:
                a = _full(layer.lora_A[ADAPTER].weight).float()  # (r, in)
                b = _full(layer.lora_B[ADAPTER].weight).float()  # (out, r)
                full = (full.float() + (b @ a) * layer.scaling[ADAPTER]).to(full.dtype)
            name = f"{owner}.{leaf}"
        yield name, full


class MergedModel:
    """What a checkpoint's ``model/`` holds for a LoRA policy: ``save_pretrained(folder)``
    writes the merged weights (:func:`merged_parameters`) as a plain Hugging Face model."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = _unwrapped(model)

    def save_pretrained(self, folder: str | os.PathLike, *, state=None) -> None:
        merged = dict(merged_parameters(self.model)) if state is None else state
        self.model.save_pretrained(folder, state_dict={k: v.cpu() for k, v in merged.items()})
        (Path(folder) / "adapter_config.json").unlink(missing_ok=True)


def adapter_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The adapter's tensors under peft's file keys (``base_model.model.<layer>.lora_A.weight``),
    gathered when sharded (every rank must call it)."""
    out = {}
    for name, param in _unwrapped(model).named_parameters():
        if ".lora_A." in name or ".lora_B." in name:
            out[_PREFIX + name.replace(f".{ADAPTER}.", ".")] = _full(param).cpu().contiguous()
    return out


def save_adapter(model: torch.nn.Module, folder: str | os.PathLike, *,
                 state: dict[str, torch.Tensor] | None = None) -> Path:
    """Write the adapter in peft's format into ``folder`` (created): ``adapter_config.json``
    and ``adapter_model.safetensors`` (``state``: already gathered tensors)."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    settings = _unwrapped(model).peft_config[ADAPTER]
    settings.save_pretrained(str(folder))
    save_file(adapter_state(model) if state is None else state, str(folder / _WEIGHTS))
    return folder


def adapter_base(folder: str | os.PathLike) -> str | None:
    """The base model an adapter folder names (``base_model_name_or_path``), or None."""
    try:
        saved = json.loads((Path(folder) / "adapter_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return saved.get("base_model_name_or_path") if isinstance(saved, dict) else None


def load_adapter(model: torch.nn.Module, folder: str | os.PathLike) -> None:
    """The adapter saved in ``folder`` into ``model`` (which carries adapters of the same
    rank and targets); ValueError naming the folder when they do not fit."""
    from safetensors.torch import load_file

    file = Path(folder) / _WEIGHTS
    if not file.is_file():
        raise ValueError(f"{folder} holds no LoRA adapter ({_WEIGHTS}); resume from a "
                         "checkpoint written by a run with the same model.lora_rank")
    saved = load_file(str(file))
    module = _unwrapped(model)
    own = {k for k in module.state_dict() if ".lora_A." in k or ".lora_B." in k}
    state = {k.removeprefix(_PREFIX).replace(".lora_A.", f".lora_A.{ADAPTER}.")
             .replace(".lora_B.", f".lora_B.{ADAPTER}."): v for k, v in saved.items()}
    if set(state) != own:
        raise ValueError(f"the LoRA adapter in {folder} does not fit the model: missing "
                         f"{sorted(own - set(state))[:3]}, unexpected "
                         f"{sorted(set(state) - own)[:3]} (same model.lora_rank and "
                         "model.lora_target_modules as the run that saved it?)")
    try:
        module.load_state_dict(state, strict=False)
    except RuntimeError as exc:  # shapes: another rank
        raise ValueError(f"the LoRA adapter in {folder} does not fit the model: {exc}") from None
