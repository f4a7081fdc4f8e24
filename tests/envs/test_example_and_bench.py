"""The example loop and the benchmark run (quick sizes) and produce sane numbers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def load(relative: str):
    spec = importlib.util.spec_from_file_location(Path(relative).stem, ROOT / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_custom_loop_calculator_solves_level_one():
    example = load("examples/custom_loop.py")
    env = gym.make("verimath/Arithmetic-v0", level=1)
    assert example.run_episodes(env, example.calculator_policy, episodes=20, seed=3) == 1.0
    retry = gym.make("verimath/Linear-v0", level=3, max_attempts=2)
    assert example.run_episodes(retry, example.calculator_policy, episodes=3, seed=0) < 1.0


def test_custom_loop_can_draw_what_the_tiny_preset_trains_on():
    example = load("examples/custom_loop.py")
    draw, rng = example.skipping("Arithmetic", ["*", "-"]), np.random.default_rng(0)
    prompts = [draw(rng, 2).prompt for _ in range(50)]
    assert all(" + " in p and "*" not in p and "-" not in p for p in prompts)


def test_custom_loop_retry_mode_keeps_the_conversation():
    example = load("examples/custom_loop.py")
    seen = []

    def stubborn(prompt):
        seen.append(prompt)
        return "Answer: -12345"

    env = gym.make("verimath/Linear-v0", level=1, max_attempts=3)
    assert example.run_episodes(env, stubborn, episodes=1, seed=0) == 0.0
    problem = env.unwrapped.problem.prompt
    assert len(seen) == 3 and all(problem in prompt for prompt in seen)
    assert seen[2].count("Your answer -12345 is not correct") == 2


def test_custom_loop_group_round_has_p_by_g_rewards():
    example = load("examples/custom_loop.py")
    rewards = example.run_group("verimath/Arithmetic-v0", example.calculator_policy, 3, 4, level=1)
    assert rewards.shape == (3, 4) and np.all(rewards == 1.0)


def test_benchmark_quick_numbers(tmp_path):
    bench = load("benchmarks/bench_envs.py")
    assert bench.bench_generation(50) > 0
    assert bench.bench_single_env(20, correct=False, family="Percent") > 0
    group = bench.bench_group(8, 4, "Arithmetic")
    assert group["responses"] == 32 and group["step_s"] > 0
    assert -1.0 <= group["mean_reward"] <= 1.0


@pytest.mark.slow
def test_benchmark_curriculum_switches_raise_the_informative_share():
    bench = load("benchmarks/bench_envs.py")
    shares = bench.bench_curriculum(rounds=40, num_problems=32)
    assert shares["chain_adapt_level"]["informative"] > shares["chain_fixed_level_3"]["informative"]
    assert shares["list_skip_solved"]["all_right"] < shares["list_all"]["all_right"]


def test_custom_loop_reads_the_task_a_training_run_trained_on(tmp_path):
    """``--model <run>`` poses what the run trained on (the tiny preset: level-2 additions, its
    template and response length), not the script's defaults (which score such a model 0)."""
    torch = pytest.importorskip("torch", reason="the trainer extra: pip install 'verimath[train]'")
    from verimath.trainer.checkpoint.files import save_checkpoint
    from verimath.trainer.config.files import load_config
    from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model

    config = load_config("tiny", ["model.tiny_hidden_size=32", "model.tiny_layers=1"])
    tokenizer = make_char_tokenizer()
    model = make_tiny_model(tokenizer, hidden_size=32, num_layers=1, num_heads=4)
    save_checkpoint(tmp_path / "run" / "checkpoints", model=model,
                    tokenizer=tokenizer, step=1, config=config.to_dict(),
                    optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    example = load("examples/custom_loop.py")
    model_dir, task = example.run_task(str(tmp_path / "run"))
    assert model_dir.endswith("step_00000001/model")
    assert task == {"env": "verimath/Arithmetic-v0", "level": config.data.level,
                    "skip_containing": tuple(config.data.skip_containing),
                    "template": config.model.prompt_template,
                    "max_new_tokens": config.rollout.max_new_tokens}
    assert example.run_task(None) == (None, {})
