"""Data parallelism on PyTorch's own stack: torchrun processes, FSDP2, and a few collectives.

``torchrun --nproc-per-node N -m verimath.trainer.worker ...`` (or ``verimath train --nproc N``)
starts N processes; :func:`init_distributed` reads torchrun's environment and joins the
process group (NCCL on GPUs, gloo on the CPU). One process is the ordinary single-process
case: no process group, every collective here is the identity.

- Each rank generates and scores its own share of the prompts; dynamic sampling decides on
  global counts (:class:`Comm` ``all_sum``) and
  ``verimath.trainer.algo.dynamic_sampling.allocate_quotas`` says how many kept groups each
  rank trains on, so that they add up to ``algo.train_prompts``.
- The model is sharded with FSDP2 (``fully_shard`` on every decoder layer, then the root),
  on GPUs with bf16 compute and fp32 reduction (``MixedPrecisionPolicy``); the same code runs
  on a CPU device mesh over gloo. The memory-bounded log-prob forward is registered as an
  FSDP forward method (:data:`FORWARD_METHOD`), so calling it gathers the parameters as a
  plain forward would.
- The token-level loss is the global token mean: token and sequence counts are summed over
  ranks and every rank's loss is multiplied by the world size (FSDP averages gradients).
"""

from __future__ import annotations

import os
import types
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

FORWARD_METHOD = "verimath_token_logprobs"
"""Name of the log-prob forward attached to a sharded model (see :func:`shard_model`)."""


@dataclass(frozen=True)
class Comm:
    """This process's place among the ranks, and the collectives the trainer needs."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    local_world: int = 0
    """Ranks on this node (torchrun's ``LOCAL_WORLD_SIZE`` when the group was joined; 0:
    all of them). Read then, because an in-process vLLM CPU engine rewrites that variable."""

    @property
    def is_main(self) -> bool:
        """Rank 0 writes metrics, plots, summaries and the Hugging Face model export."""
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world > 1

    def all_sum(self, values) -> np.ndarray:
        """Element-wise sum over ranks of a small float vector (every rank must call it)."""
        local = np.array(values, dtype=np.float64)  # a copy: the reduction works in place
        if not self.enabled:
            return local
        import torch.distributed as dist

        device = "cuda" if dist.get_backend() == "nccl" else "cpu"
        t = torch.as_tensor(local, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t.cpu().numpy()

    def gather_counts(self, count: int) -> list[int]:
        """Every rank's ``count``, in rank order."""
        one_hot = np.zeros(self.world)
        one_hot[self.rank] = count
        return [int(round(c)) for c in self.all_sum(one_hot)]

    def barrier(self) -> None:
        if self.enabled:
            import torch.distributed as dist

            dist.barrier()

    def broadcast_object(self, value):
        """Rank 0's ``value`` on every rank (a picklable object, e.g. a run directory)."""
        if not self.enabled:
            return value
        import torch.distributed as dist

        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]


def init_distributed() -> Comm:
    """Join torchrun's process group when ``WORLD_SIZE > 1`` (else a single-process Comm)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Comm()
    import torch.distributed as dist

    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local_rank)
        dist.init_process_group(backend)
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world) or world)
    return Comm(rank=rank, world=world, local_rank=local_rank, local_world=local_world)


def close_distributed() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def rank_seed(seed: int, rank: int) -> int:
    """Seed of rank ``rank``'s problem stream and sampling: ``seed`` itself on rank 0 (a
    one-process run is unchanged), an independent stream on the others."""
    if rank == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(rank)]).generate_state(1)[0])


def shard_model(model, comm: Comm, *, device: torch.device, activation_checkpointing: bool):
    """FSDP2 over all ranks: each decoder layer and the root, bf16 compute on GPUs; the
    memory-bounded log-prob forward becomes an FSDP forward method."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import (
        MixedPrecisionPolicy,
        fully_shard,
        register_fsdp_forward_method,
    )
    from verimath.trainer.core.logprobs import token_logprobs

    if activation_checkpointing:
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False})
    mesh = init_device_mesh(device.type, (comm.world,))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) \
        if device.type == "cuda" else MixedPrecisionPolicy()
    for layer in decoder_layers(model):
        fully_shard(layer, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    setattr(model, FORWARD_METHOD, types.MethodType(token_logprobs, model))
    register_fsdp_forward_method(model, FORWARD_METHOD)
    return model


def decoder_layers(model) -> list[torch.nn.Module]:
    """The transformer blocks of a Hugging Face causal LM (``model.model.layers`` and kin)."""
    base = getattr(model, getattr(model, "base_model_prefix", "model"), None)
    layers = getattr(base, "layers", None) or getattr(base, "h", None)
    if layers is None:
        raise ValueError(f"cannot find the decoder layers of {type(model).__name__} to shard "
                         "with FSDP (looked for .model.layers and .h)")
    return list(layers)


def full_parameters(model) -> Iterator[tuple[str, torch.Tensor]]:
    """``(name, full tensor)`` one parameter at a time: a sharded parameter is gathered
    just before it is yielded (never the whole model at once), a plain one is yielded as is.
    Every rank must iterate in step (each gather is a collective)."""
    for name, param in model.named_parameters():
        full = param.full_tensor() if hasattr(param, "full_tensor") else param
        yield name, full.detach()


def full_state_dict(model) -> dict:
    """``model.state_dict()`` as full CPU tensors: a sharded (DTensor) entry is gathered, a
    collective that every rank runs for the same entries in the same order."""
    out = {}
    for name, value in model.state_dict().items():
        full = value.full_tensor() if hasattr(value, "full_tensor") else value
        out[name] = full.detach().cpu()
    return out


def broadcast_parameters(model, comm: Comm) -> None:
    """Every rank takes rank 0's parameters (an unsharded model, e.g. after a warm start that
    each rank ran on its own)."""
    if not comm.enabled:
        return
    import torch.distributed as dist

    with torch.no_grad():
        for param in model.parameters():
            dist.broadcast(param.data, src=0)
