"""Where the generator process of asynchronous rollouts runs (``rollout.async_device``).

Three placements, chosen from the setting and the trainer's own device:

- ``cpu``: the generator samples on the CPU (the trainer's device is a CPU, or the setting
  says ``cpu``);
- ``colocated``: the generator shares the trainer's GPU (``rollout.async_device`` unset, or
  naming that GPU). Both processes hold memory on it at once: vLLM takes
  ``rollout.vllm_gpu_memory_utilization`` of it, and with ``rollout.vllm_enable_sleep_mode``
  the generator puts vLLM to sleep whenever it has no request waiting, so that the update
  gets that memory back between rounds;
- ``split``: the generator has a GPU of its own (``rollout.async_device: cuda:1`` while the
  trainer is on ``cuda:0``).

The generator process sees only its GPU (``CUDA_VISIBLE_DEVICES`` set before it imports
torch, mapped through the trainer's own ``CUDA_VISIBLE_DEVICES``), so inside it that GPU is
``cuda:0``. Everything here is pure: the GPU count and the visible-devices string are
arguments, so the rules are tested without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from verimath.trainer.config.rollout import parse_device

__all__ = ["MODES", "Placement", "async_placement", "check_async_device"]

MODES = ("cpu", "colocated", "split")


@dataclass(frozen=True)
class Placement:
    """The generator's place, as the trainer starts it."""

    mode: str
    """One of :data:`MODES`."""
    device: str
    """The generator's torch device inside its own process (``cpu`` or ``cuda:0``)."""
    visible_devices: str | None = None
    """``CUDA_VISIBLE_DEVICES`` of the generator process (None: the trainer's, unchanged)."""
    gpu: int | None = None
    """The GPU's index among the trainer's visible GPUs (None on the CPU)."""


def check_async_device(async_device: str | None, *, gpu_count: int,
                       visible: str | None = None) -> None:
    """ValueError saying what to change when ``async_device`` asks for a GPU that is not
    visible (the checks that need no trainer device: run before anything is built)."""
    if async_device is None:
        return
    kind, index = parse_device(async_device)
    if kind == "cpu":
        return
    seen = f" (CUDA_VISIBLE_DEVICES={visible})" if visible is not None else ""
    if gpu_count == 0:
        raise ValueError(f"rollout.async_device={async_device!r} but no CUDA GPU is visible"
                         f"{seen}: use rollout.async_device=cpu, or unset it to generate on "
                         "the trainer's device")
    if index is not None and index >= gpu_count:
        plural = "GPU is" if gpu_count == 1 else "GPUs are"
        raise ValueError(
            f"rollout.async_device={async_device!r} asks for GPU {index}, but {gpu_count} "
            f"{plural} visible{seen}: a split placement needs a second GPU; unset "
            "rollout.async_device to share the trainer's GPU (colocated), or make more "
            "GPUs visible")


def async_placement(async_device: str | None, trainer_device: str, *, gpu_count: int,
                    visible: str | None = None) -> Placement:
    """The generator's :class:`Placement` for ``rollout.async_device`` (None: the trainer's
    device), the trainer's device (``cpu``, ``cuda``, ``cuda:N``), the number of GPUs the
    trainer sees and its ``CUDA_VISIBLE_DEVICES`` (None when unset)."""
    check_async_device(async_device, gpu_count=gpu_count, visible=visible)
    t_kind, t_index = parse_device(trainer_device, "the trainer's device (model.device)")
    if t_kind == "cuda" and t_index is None:
        t_index = 0  # torch's current device when none is named
    kind, index = parse_device(async_device) if async_device is not None else (t_kind, t_index)
    if kind == "cpu":
        return Placement("cpu", "cpu")
    if index is None:  # "cuda": the trainer's GPU when it has one, else the first
        index = t_index if t_kind == "cuda" else 0
    mode = "colocated" if (t_kind, t_index) == ("cuda", index) else "split"
    return Placement(mode, "cuda:0", _physical(index, visible), index)


def _physical(index: int, visible: str | None) -> str:
    """The ``CUDA_VISIBLE_DEVICES`` entry of the trainer's GPU ``index``."""
    if visible is None or not visible.strip():
        return str(index)
    entries = [v.strip() for v in visible.split(",") if v.strip()]
    if index >= len(entries):
        raise ValueError(f"GPU {index} is not among CUDA_VISIBLE_DEVICES={visible}")
    return entries[index]
