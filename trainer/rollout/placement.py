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

On the CPU the generator needs a core of its own to overlap with the update.
:func:`no_free_core` says when it has none: the process may use a single core
(``os.sched_getaffinity``), or, measured, it got less than :data:`FREE_CORE_SHARE` of a core
while it generated (its CPU seconds over its wall seconds, scoring apart) because other work
keeps every core busy. Then generating beside the update cannot make a step faster.
"""

from __future__ import annotations

from dataclasses import dataclass

from verimath.trainer.config.rollout import parse_device

__all__ = ["FREE_CORE_SHARE", "MODES", "Placement", "async_placement", "check_async_device",
           "no_free_core"]

MODES = ("cpu", "colocated", "split")
FREE_CORE_SHARE = 0.5
"""A CPU generator that got less than this share of a core while it generated had no core of
its own."""
MEASURED_SECONDS = 3.0
"""Generator wall seconds measured before its share of a core is judged."""


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


def no_free_core(*, usable_cpus: int, cpu_seconds: float, wall_seconds: float,
                 load: float) -> str | None:
    """Why a CPU generator process cannot run beside the update here (a sentence), or None.

    ``usable_cpus``: the cores this process may use (``len(os.sched_getaffinity(0))``);
    ``cpu_seconds`` and ``wall_seconds``: what the generator spent on the rounds measured so
    far (scoring apart; ``wall_seconds`` 0 before any); ``load``: the 1-minute load average,
    reported beside the measurement."""
    if usable_cpus < 2:
        return (f"this process may use {usable_cpus} CPU core (os.sched_getaffinity), so the "
                "generator and the trainer take turns on it")
    if wall_seconds < MEASURED_SECONDS:
        return None
    share = cpu_seconds / wall_seconds
    if share >= FREE_CORE_SHARE:
        return None
    return (f"the generator process got {share:.0%} of a core while it generated (load "
            f"average {load:.1f} on {usable_cpus} usable cores): no core is free for it")
