"""Does every prompt plus ``rollout.max_new_tokens`` fit in the model's positions?

Checked before any compute by ``verimath train`` (training and held-out problems) and
``verimath eval``; ``verimath train --estimate`` warns for the model shape. A sequence longer
than ``max_position_embeddings`` makes the model run past what it was built or trained for
(the built tiny model has 128 positions): its responses there are noise, and transformers
only prints a reminder.
"""

from __future__ import annotations

from collections.abc import Iterable

from verimath.envs import Problem
from verimath.trainer.rollout.episodes import build_prompt_ids, format_prompts

PROCEDURAL_SAMPLE = 256
"""Procedural training problems measured (the stream is endless; its lengths vary little)."""


def model_positions(model) -> int | None:
    """The model's ``max_position_embeddings`` (None when its config has none)."""
    value = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    return int(value) if isinstance(value, int) and value > 0 else None


def longest_prompt(tokenizer, problems: Iterable[Problem], *, template: str,
                   use_chat_template: bool, chunk: int = 512) -> tuple[int, Problem | None]:
    """``(tokens, problem)`` of the longest model-facing prompt among ``problems``."""
    best, which, batch = 0, None, []

    def measure(batch):
        nonlocal best, which
        ids = build_prompt_ids(tokenizer, format_prompts(batch, template),
                               use_chat_template=use_chat_template)
        for problem, row in zip(batch, ids):
            if len(row) > best:
                best, which = len(row), problem

    for problem in problems:
        batch.append(problem)
        if len(batch) == chunk:
            measure(batch)
            batch = []
    if batch:
        measure(batch)
    return best, which


def context_error(*, prompt_tokens: int, max_new_tokens: int, positions: int | None,
                  what: str, new_tokens_name: str = "rollout.max_new_tokens") -> str | None:
    """The message when ``prompt_tokens + max_new_tokens`` exceeds ``positions``, else None."""
    if positions is None or prompt_tokens + max_new_tokens <= positions:
        return None
    room = positions - prompt_tokens
    fix = (f"lower {new_tokens_name} to at most {room}, or " if room >= 1 else
           "the prompt alone does not fit: ")
    return (f"{what} is {prompt_tokens} tokens; with {new_tokens_name} ({max_new_tokens}) a "
            f"sequence reaches {prompt_tokens + max_new_tokens} tokens, beyond the model's "
            f"{positions} positions (max_position_embeddings); {fix}use a model with more "
            "positions or shorter prompts (model.prompt_template, use_chat_template)")


def _described(problem: Problem | None, source: str) -> str:
    name = f" ({problem.id})" if problem is not None and problem.id else ""
    return f"the longest prompt of {source}{name}"


def check_run_context(config, model, tokenizer, heldout: list[Problem]) -> None:
    """ValueError, naming the numbers, when a training or held-out prompt plus
    ``rollout.max_new_tokens`` exceeds the model's positions."""
    positions = model_positions(model)
    if positions is None:
        return
    m, max_new = config.model, config.rollout.max_new_tokens
    for source, problems in (("data.train_file" if config.data.train_file else
                              f"{config.data.family} level {config.data.level}",
                              training_problems(config, heldout)),
                             ("data.heldout_file" if config.data.heldout_file else
                              "the held-out problems", heldout)):
        tokens, problem = longest_prompt(tokenizer, problems, template=m.prompt_template,
                                         use_chat_template=m.use_chat_template)
        message = context_error(prompt_tokens=tokens, max_new_tokens=max_new,
                                positions=positions, what=_described(problem, source))
        if message:
            raise ValueError(message)


def training_problems(config, heldout: list[Problem]) -> Iterable[Problem]:
    """The training file's problems, or a sample of the procedural stream."""
    d = config.data
    if d.train_file is not None:
        from verimath.envs.problem import iter_problems

        return iter_problems(d.train_file)
    from verimath.envs import generate
    from verimath.trainer.rollout.episodes import ExcludingGenerator

    generator = ExcludingGenerator(d.family, {p.prompt for p in heldout},
                                   skip_containing=d.skip_containing)
    return (generate(generator, d.seed, i, d.level) for i in range(PROCEDURAL_SAMPLE))


def check_config_context(config) -> None:
    """:func:`check_run_context` from the config alone, before any weights are loaded: the
    tokenizer and ``max_position_embeddings`` of ``model.path`` (its config.json), or of the
    tiny model the config builds."""
    import inspect
    import json

    from verimath.trainer.rollout.episodes import heldout_problems

    if config.model.path is None:
        from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model

        tokenizer = make_char_tokenizer()
        positions = inspect.signature(make_tiny_model).parameters["max_positions"].default
    else:
        from verimath.trainer.model.policy import load_tokenizer, resolve_model_dir

        folder = resolve_model_dir(config.model.path, field="model.path")
        try:
            positions = json.loads((folder / "config.json").read_text(encoding="utf-8")).get(
                "max_position_embeddings")
        except (OSError, ValueError):
            return  # load_policy reports an unreadable model directory
        tokenizer = load_tokenizer(folder)
    d = config.data
    heldout = heldout_problems(
        family=d.family, level=d.level, seed=config.eval.seed,
        count=config.eval.num_problems if d.train_file is None else 0, path=d.heldout_file,
        skip_containing=d.skip_containing)
    check_run_context(config, _Positions(positions), tokenizer, heldout)


class _Positions:
    """A stand-in with a model's ``config.max_position_embeddings``."""

    def __init__(self, positions) -> None:
        self.config = type("Config", (), {"max_position_embeddings": positions})()
