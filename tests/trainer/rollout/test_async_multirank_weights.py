"""The weights a rank pushes to its generator: the full state dict, gathered from FSDP2
shards (here one rank of a gloo group in this process), equal to the unsharded policy's."""

from __future__ import annotations

import copy

import pytest
import torch
from verimath.trainer.core.distributed import Comm, full_state_dict, shard_model
from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model


@pytest.fixture
def one_rank_group(tmp_path):
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group is already running in this process")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_a_sharded_policy_pushes_the_full_weights_of_the_unsharded_one(one_rank_group):
    model = make_tiny_model(make_char_tokenizer(), hidden_size=32, num_layers=2, num_heads=2,
                            seed=3)
    plain = copy.deepcopy(model).state_dict()
    sharded = shard_model(model, Comm(rank=0, world=1), device=torch.device("cpu"),
                          activation_checkpointing=False)
    assert any(hasattr(v, "full_tensor") for v in sharded.state_dict().values())
    pushed = full_state_dict(sharded)
    assert pushed.keys() == plain.keys()
    for name, value in plain.items():
        assert type(pushed[name]) is torch.Tensor and pushed[name].device.type == "cpu"
        assert torch.equal(pushed[name], value), name
    # what the generator does with them: load into its own unsharded copy
    other = make_tiny_model(make_char_tokenizer(), hidden_size=32, num_layers=2, num_heads=2,
                            seed=4)
    other.load_state_dict(pushed)
    assert all(torch.equal(v, plain[k]) for k, v in other.state_dict().items())
