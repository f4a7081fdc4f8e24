"""``rollout.engine=vllm`` trains for real: the same short run with both engines learns, and the
vLLM run logs its weight pushes and how far its log-probs are from the trainer's."""

from __future__ import annotations

import pytest
from verimath.envs.problem import write_problems
from verimath.trainer.config.files import load_config
from verimath.trainer.rollout.episodes import heldout_problems
from verimath.trainer.run.loop import train
from verimath.trainer.run.metrics import read_metrics
from verimath.trainer.run.setup import open_state

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

SHORT = ["warmstart.steps=0", "optim.steps=6", "rollout.gen_prompts=16",
         "algo.train_prompts=16", "algo.mini_batch_prompts=4", "eval.k=16",
         "logging.progress=false", "logging.plot=false", "logging.save_every=0",
         "reward.workers=1"]
"""6 RL steps of the tiny preset (its lr warm-up and cosine decay, 4 updates a step) on 16
problems, every one in every step, evaluated on the same 16 with 16 samples each."""


@pytest.fixture(scope="module")
def problems(tmp_path_factory) -> str:
    """16 additions the shared warm start never trained on (the preset's held-out set)."""
    cfg = load_config("tiny")
    chosen = heldout_problems(family=cfg.data.family, level=cfg.data.level, seed=cfg.eval.seed,
                              count=16, skip_containing=cfg.data.skip_containing)
    path = tmp_path_factory.mktemp("problems") / "sixteen.jsonl"
    write_problems(chosen, str(path))
    return str(path)


def _run(tmp_path, model: str, problems: str, engine: str) -> tuple[dict, list[dict]]:
    config = load_config("tiny", SHORT + [f"model.path={model}", f"data.train_file={problems}",
                                          f"data.heldout_file={problems}",
                                          f"rollout.engine={engine}",
                                          "rollout.vllm_enforce_eager=true"])
    with open_state(config, tmp_path / engine, echo=lambda _: None) as state:
        summary = train(state)
    records = [r for r in read_metrics(tmp_path / engine / "metrics.jsonl") if r["step"] > 0]
    return summary, records


def test_vllm_rollouts_learn_like_hf_rollouts(tmp_path, warm_tiny_model, problems):
    runs = {engine: _run(tmp_path, warm_tiny_model, problems, engine) for engine in ("hf", "vllm")}
    gains = {engine: s["heldout_acc_after_rl"] - s["heldout_acc_before_rl"]
             for engine, (s, _) in runs.items()}
    assert gains["hf"] > 0.1 and gains["vllm"] > 0.1, gains  # both engines learn
    assert abs(gains["vllm"] - gains["hf"]) < 0.2, gains  # in the same band
    _, records = runs["vllm"]
    assert all(r["time/weight_push"] > 0 and r["compute/weight_push_bytes"] > 0
               for r in records if r["sampling/kept_groups"] > 0)
    mismatch = [r["rollout/logp_abs_diff"] for r in records if "rollout/logp_abs_diff" in r]
    assert mismatch and max(mismatch) < 1e-3  # the engine samples the trainer's policy
