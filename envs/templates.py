"""Prompt templates: how a bare problem statement becomes the text a model sees.

Built-in templates:
    "dapo":  the DAPO paper's instruction (Yu et al., 2025): answer on a last line ``Answer: $X``.
    "boxed": ask for the final answer inside ``\\boxed{}`` (the MATH / Qwen-Math convention).
    "raw":   the bare problem, unchanged.
Any other string must contain ``{prompt}``; it is filled with `str.format`-like substitution of
that one field only (other braces, such as LaTeX ``\\boxed{}``, are left alone).
"""

from __future__ import annotations

from verimath.envs.problem import Problem

DAPO_TEMPLATE = (
    "Solve the following math problem step by step. The last line of your response should be "
    "of the form Answer: $Answer (without quotes) where $Answer is the answer to the problem."
    "\n\n{prompt}\n\nRemember to put your answer on its own line after \"Answer:\"."
)
BOXED_TEMPLATE = (
    "{prompt}\n\nPlease reason step by step, and put your final answer within \\boxed{}."
)
TEMPLATES: dict[str, str] = {"dapo": DAPO_TEMPLATE, "boxed": BOXED_TEMPLATE, "raw": "{prompt}"}


def resolve_template(template: str) -> str:
    """The format string of a template name, or `template` itself if it holds ``{prompt}``."""
    if not isinstance(template, str):
        raise TypeError(f"template must be a str, got {type(template).__name__}")
    if template in TEMPLATES:
        return TEMPLATES[template]
    if "{prompt}" not in template:
        raise ValueError(
            f"unknown template {template!r:.60}: use one of {sorted(TEMPLATES)} or a string "
            "containing '{prompt}' (e.g. 'Q: {prompt}\\nA:')"
        )
    return template


def format_prompt(problem: Problem | str, template: str = "dapo") -> str:
    """The model-facing text of `problem` (a `Problem` or a bare statement) under `template`."""
    text = problem.prompt if isinstance(problem, Problem) else problem
    if not isinstance(text, str):
        raise TypeError(f"problem must be a Problem or a str, got {type(problem).__name__}")
    return resolve_template(template).replace("{prompt}", text)
