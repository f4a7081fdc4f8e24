"""Step a verimath environment in your own loop, with any policy.

A policy is any callable ``prompt_text -> response_text``. This example ships a trivial one
(a tiny calculator that solves "What is 7 + 5?" and guesses otherwise) and, with ``--model``,
a local transformers causal LM (no download: pass a directory that holds the weights)::

    python examples/custom_loop.py                               # calculator, Arithmetic L1
    python examples/custom_loop.py --env verimath/Linear-v0 --level 2 --attempts 3
    python examples/custom_loop.py --model /path/to/Qwen2.5-0.5B-Instruct --episodes 8
    python examples/custom_loop.py --group 4x8                   # one P x G batch, as trainers do
    python examples/custom_loop.py --model runs/tiny-...            # a verimath train run
    python examples/custom_loop.py --env verimath/Dataset-v0 --path math500.jsonl  # prepared data

A `verimath train` run, checkpoint or checkpoint ``model/`` directory brings the task it was
trained on (its config): family, level, ``data.skip_containing`` (the tiny preset keeps only
the two-digit additions of Arithmetic level 2), prompt template and response length. Options
given on the command line override them; a plain model directory uses the defaults below.

In retry mode (``--attempts K``) the env's observation after a wrong answer is the feedback
alone; the loop keeps the conversation and hands the policy the whole transcript.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

import gymnasium as gym
import numpy as np
from verimath.envs import MathEnv, Response, make_group_env  # registers the env ids
from verimath.envs.generators import get_generator

Policy = Callable[[str], str]


def calculator_policy(prompt: str) -> str:
    """Solves ``a + b`` / ``a - b`` questions; says "0" to anything else."""
    match = re.search(r"What is (-?\d+) ([+-]) (-?\d+)\?", prompt)
    if match is None:
        return "I do not know.\nAnswer: 0"
    a, op, b = int(match.group(1)), match.group(2), int(match.group(3))
    result = a + b if op == "+" else a - b
    return f"{a} {op} {b} = {result}\nAnswer: {result}"


def transformers_policy(model_dir: str, max_new_tokens: int, sample: bool = False) -> Policy:
    """A local causal LM, greedy (or sampling at temperature 1 with ``sample``: a group of
    greedy responses to one prompt would all be identical); responses carry their token counts.
    """
    from pathlib import Path

    import torch
    from transformers import AutoModelForCausalLM
    from verimath.trainer.model.policy import load_tokenizer

    # load_tokenizer keeps a generic fast tokenizer (e.g. a verimath checkpoint's) as saved.
    tokenizer = load_tokenizer(Path(model_dir))
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True).eval()

    def policy(prompt: str) -> str:
        if tokenizer.chat_template:
            prompt = tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                                   tokenize=False, add_generation_prompt=True)
        inputs = tokenizer(prompt, return_tensors="pt")
        with torch.no_grad():
            out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=sample,
                                 **({"temperature": 1.0, "top_p": 1.0} if sample else {}))
        new = out[0, inputs["input_ids"].shape[1]:]
        return Response(tokenizer.decode(new, skip_special_tokens=True), num_tokens=len(new))

    return policy


def run_episodes(env: gym.Env, policy: Policy, episodes: int, seed: int) -> float:
    """The plain Gymnasium loop; retry mode continues while ``terminated`` is False, and the
    policy then sees the transcript so far (prompt, its answers, the env's feedback)."""
    solved = 0
    obs, info = env.reset(seed=seed)
    for episode in range(episodes):
        if episode:
            obs, info = env.reset()
        transcript, terminated = obs, False
        while not terminated:
            response = policy(transcript)
            obs, reward, terminated, truncated, step_info = env.step(response)
            transcript += f"\n\n{response}\n\n{obs}"
        solved += step_info["correct"]
        print(f"{info['id']:<32} attempts={step_info['attempt']} reward={reward:+.2f} "
              f"answer={step_info['extracted']!r}")
    return solved / episodes


def run_group(env_id: str, policy: Policy, num_problems: int, group_size: int,
              **env_kwargs) -> np.ndarray:
    """One P x G batch: G responses per problem, scored in one call, rewards as (P, G)."""
    envs = make_group_env(env_id, num_problems, group_size, **env_kwargs)
    prompts, _ = envs.reset(seed=0)
    _, reward, _, _, info = envs.step([policy(p) for p in prompts])
    envs.close()
    return reward.reshape(num_problems, group_size)


def skipping(family: str, texts) -> Callable:
    """A ``(rng, level) -> Problem`` generator of ``family`` that redraws any problem whose
    prompt contains one of ``texts`` (as the trainer's ``data.skip_containing`` does)."""
    generator = get_generator(family)

    def draw(rng, level):
        while True:
            problem = generator(rng, level)
            if not any(text in problem.prompt for text in texts):
                return problem

    return draw


DEFAULTS = {"env": "verimath/Arithmetic-v0", "level": 1, "template": "dapo",
            "max_new_tokens": 512, "skip_containing": ()}


def run_task(model: str | None) -> tuple[str | None, dict]:
    """``(model directory, task)``: for a `verimath train` run or checkpoint, its model
    directory and what it trained on, as this script's options; for a plain model directory
    (or without the trainer installed), the directory and {}."""
    if model is None:
        return None, {}
    try:
        from verimath.trainer.evaluation.inputs import resolve_model
    except ImportError:  # the trainer extra is not installed: a plain directory
        return model, {}
    source = resolve_model(model)
    config = source.run_config
    if not config:
        return str(source.model_dir), {}
    data, rollout = config.get("data", {}), config.get("rollout", {})
    task = {"level": data.get("level"), "skip_containing": tuple(data.get("skip_containing", ())),
            "template": config.get("model", {}).get("prompt_template"),
            "max_new_tokens": rollout.get("max_new_tokens")}
    if data.get("family") and not data.get("train_file"):
        task["env"] = f"verimath/{data['family']}-v0"
    return str(source.model_dir), {key: value for key, value in task.items() if value is not None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", help=f"env id (default {DEFAULTS['env']})")
    parser.add_argument("--level", type=int, help="level of generator envs (1..5; default 1)")
    parser.add_argument("--path", help="problem file (verimath prep output) for Dataset-v0")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--attempts", type=int, default=1, help="max_attempts (retry mode > 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", help="local directory of a transformers causal LM, or a "
                                        "verimath train run / checkpoint")
    parser.add_argument("--max-new-tokens", type=int, help="default 512")
    parser.add_argument("--group", help="PxG: run one group batch instead (e.g. 4x8)")
    parser.add_argument("--skip-containing", nargs="+", metavar="TEXT",
                        help="draw no generator problem whose prompt contains one of these")
    parser.add_argument("--template",
                        help='prompt template: dapo, boxed, raw or a string with {prompt} '
                             '(default dapo)')
    args = parser.parse_args()
    model_dir, trained_on = run_task(args.model)
    task = {**DEFAULTS, **trained_on}
    for key in DEFAULTS:  # the command line wins over the run's task
        if getattr(args, key) is not None:
            task[key] = getattr(args, key)
    if trained_on:
        print(f"task of the run: {task['env']} level {task['level']}, skip "
              f"{list(task['skip_containing'])}, template {task['template']!r}, "
              f"max_new_tokens {task['max_new_tokens']}")
    policy = (transformers_policy(model_dir, task["max_new_tokens"], sample=bool(args.group))
              if model_dir else calculator_policy)
    template = task["template"].replace("\\n", "\n")  # a newline typed as \\n in a shell
    source = {"path": args.path} if args.path else {"level": task["level"]}
    source["template"] = template
    if args.group:
        p, g = (int(x) for x in args.group.lower().split("x"))
        print(run_group(task["env"], policy, p, g, **source))
        return
    if task["skip_containing"]:  # the same generator family, some prompts redrawn
        family = task["env"].split("/")[-1].rsplit("-v", 1)[0]
        env = MathEnv(generator=skipping(family, task["skip_containing"]), level=task["level"],
                      template=template, max_attempts=args.attempts)
    else:
        env = gym.make(task["env"], max_attempts=args.attempts, **source)
    accuracy = run_episodes(env, policy, args.episodes, args.seed)
    env.close()
    print(f"accuracy: {accuracy:.2f} over {args.episodes} episodes")


if __name__ == "__main__":
    main()
