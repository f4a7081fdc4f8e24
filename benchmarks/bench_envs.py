"""Benchmark of the math environments.

Measures:
    * generation: problems per second from ``generate()`` (Mixed family, level 3);
    * single env: episodes per second of ``reset() + step()`` with a correct and a wrong answer;
    * groups: one ``reset()`` + ``step()`` of a 512 x 16 group env (8192 responses scored in one
      ``score_batch`` call), with a realistic mix of correct, wrong and answerless responses;
    * curriculum: the share of informative groups (neither all right nor all wrong) that a
      simulated, improving policy meets on the Chain family at a fixed level and with
      ``adapt_level`` (whole levels, and a mix of two levels in quarter steps), and on a
      64-problem list with and without ``skip_solved``.

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


def simulated_correct(problems, group_size: int, skill: float,
                      rng: np.random.Generator) -> np.ndarray:
    """``(P, G)`` answers of a simulated policy: right with probability
    ``sigmoid(skill - level - d)``, ``d`` a fixed per-problem difficulty in [-1, 1] (from the
    problem's id)."""
    import zlib

    levels = np.array([p.meta.get("level", 1) for p in problems], dtype=float)
    d = np.array([zlib.crc32(p.id.encode()) / 2**31 - 1.0 for p in problems])
    prob = 1.0 / (1.0 + np.exp(-(skill - levels - d)))
    return rng.random((len(problems), group_size)) < prob[:, None]


def informative_share(env, rounds: int, group_size: int = 16) -> dict[str, float]:
    """Steps ``env`` for ``rounds`` rounds with the simulated policy, its skill rising from 0 to
    6 (as a policy that learns); returns the share of informative and all-right groups."""
    rng = np.random.default_rng(0)
    informative = solved = total = 0
    for r in range(rounds):
        env.reset(seed=0 if r == 0 else None)
        right = simulated_correct(env.problems, group_size, 6.0 * r / max(rounds - 1, 1), rng)
        env.step([f"Answer: {p.answer}" if ok else "Answer: none"
                  for p, row in zip(env.problems, right) for ok in row])
        counts = right.sum(axis=1)
        informative += int(np.sum((counts > 0) & (counts < group_size)))
        solved += int(np.sum(counts == group_size))
        total += len(counts)
    env.close()
    return {"informative": informative / total, "all_right": solved / total}


def bench_curriculum(rounds: int, num_problems: int = 32) -> dict[str, dict[str, float]]:
    from verimath.envs import generate, make_group_env

    dataset = [generate("Chain", 3, i, 1 + i % 5) for i in range(64)]
    variants = {
        "chain_fixed_level_3": ("verimath/Chain-v0", {"level": 3}),
        "chain_adapt_level": ("verimath/Chain-v0", {"level": 1, "adapt_level": True}),
        "chain_adapt_mix": ("verimath/Chain-v0", {"level": 1,
                                                  "adapt_level": {"substeps": 4}}),
        "list_all": ("verimath/Dataset-v0", {"problems": dataset}),
        "list_skip_solved": ("verimath/Dataset-v0", {"problems": dataset, "skip_solved": True}),
    }
    return {name: informative_share(make_group_env(env_id, num_problems, 16, **kwargs), rounds)
            for name, (env_id, kwargs) in variants.items()}


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
        "curriculum": bench_curriculum(40 if args.quick else 100),
    }
    g = results["group"]
    print(f"generate():                {results['generate_per_s']:10.0f} problems/s")
    print(f"reset+step, correct:       {results['episodes_per_s_correct']:10.0f} episodes/s")
    print(f"reset+step, wrong:         {results['episodes_per_s_wrong']:10.0f} episodes/s")
    print(f"group {num_problems}x{group_size} reset:       {g['reset_s'] * 1000:10.1f} ms")
    print(f"group {num_problems}x{group_size} step:        {g['step_s'] * 1000:10.1f} ms "
          f"({g['responses_per_s']:.0f} responses/s, mean reward {g['mean_reward']:+.3f})")
    for name, share in results["curriculum"].items():
        print(f"{name + ':':26} {share['informative']:10.1%} informative groups, "
              f"{share['all_right']:.1%} all right")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
