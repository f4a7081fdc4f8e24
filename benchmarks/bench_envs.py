"""Benchmark of the math environments.

Measures:
    * generation: problems per second from ``generate()`` (Mixed family, level 3);
    * single env: episodes per second of ``reset() + step()`` with a correct and a wrong answer;
    * groups: one ``reset()`` + ``step()`` of a 512 x 16 group env (8192 responses scored in one
      ``score_batch`` call), with a realistic mix of correct, wrong and answerless responses.

Usage::

    python benchmarks/bench_envs.py            # full sizes
    python benchmarks/bench_envs.py --quick    # a few seconds (CI smoke)
    python benchmarks/bench_envs.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def rate(fn, count: int) -> float:
    """Calls of ``fn`` per second over `count` calls (after one warm-up call)."""
    fn()
    start = time.perf_counter()
    for _ in range(count):
        fn()
    return count / (time.perf_counter() - start)


def bench_generation(count: int) -> float:
    from verimath.envs import generate

    state = {"i": 0}

    def one():
        state["i"] += 1
        generate("Mixed", 0, state["i"], 3)

    return rate(one, count)


def bench_single_env(count: int, correct: bool, family: str) -> float:
    from verimath.envs import MathEnv

    env = MathEnv(family=family, level=3)
    env.reset(seed=0)

    def episode():
        env.reset()
        answer = env.problem.answer if correct else env.problem.answer + "1"
        env.step(f"Let me compute.\nAnswer: {answer}")

    return rate(episode, count)


def group_responses(problems, group_size: int, rng: np.random.Generator) -> list[str]:
    """Per response: 50% correct, 35% a wrong number, 15% no final answer."""
    out = []
    for problem in problems:
        for _ in range(group_size):
            u = rng.random()
            if u < 0.5:
                out.append(f"Working...\nAnswer: {problem.answer}")
            elif u < 0.85:
                out.append(f"Working...\nAnswer: {int(rng.integers(-999, 999))}")
            else:
                out.append("I think the answer is large.")
    return out


def bench_group(num_problems: int, group_size: int, family: str) -> dict[str, float]:
    from verimath.envs import make_group_env

    envs = make_group_env(f"verimath/{family}-v0", num_problems, group_size, level=3)
    envs.reset(seed=0)  # warm-up: imports, numba, the scoring pool
    envs.step(group_responses(envs.problems, group_size, np.random.default_rng(0)))
    start = time.perf_counter()
    envs.reset(seed=1)
    reset_s = time.perf_counter() - start
    responses = group_responses(envs.problems, group_size, np.random.default_rng(1))
    start = time.perf_counter()
    _, reward, *_ = envs.step(responses)
    step_s = time.perf_counter() - start
    envs.close()
    n = num_problems * group_size
    return {"responses": n, "reset_s": reset_s, "step_s": step_s,
            "responses_per_s": n / step_s, "mean_reward": float(reward.mean())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    parser.add_argument("--family", default="Mixed", help="generator family (default Mixed)")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    count = 300 if args.quick else 3000
    num_problems, group_size = (64, 16) if args.quick else (512, 16)
    results = {
        "generate_per_s": bench_generation(count),
        "episodes_per_s_correct": bench_single_env(count, True, args.family),
        "episodes_per_s_wrong": bench_single_env(count, False, args.family),
        "group": bench_group(num_problems, group_size, args.family),
    }
    g = results["group"]
    print(f"generate():                {results['generate_per_s']:10.0f} problems/s")
    print(f"reset+step, correct:       {results['episodes_per_s_correct']:10.0f} episodes/s")
    print(f"reset+step, wrong:         {results['episodes_per_s_wrong']:10.0f} episodes/s")
    print(f"group {num_problems}x{group_size} reset:       {g['reset_s'] * 1000:10.1f} ms")
    print(f"group {num_problems}x{group_size} step:        {g['step_s'] * 1000:10.1f} ms "
          f"({g['responses_per_s']:.0f} responses/s, mean reward {g['mean_reward']:+.3f})")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
