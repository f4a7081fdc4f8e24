"""DAPO-Math-17k (Yu et al., 2025): the DAPO paper's training set, integer answers.

Two layouts are accepted:
    hub (BytedTsinghua-SIA/DAPO-Math-17k):
        ``{"prompt": [{"role": "user", "content": TEMPLATE(problem)}], "reward_model":
        {"ground_truth": "34", "style": ...}, "extra_info": {"index": uuid}, "data_source",
        "ability"}``
    flattened (open-r1 "Processed" style, as in shared/data):
        ``{"prompt": problem, "solution": "34", "source_prompt": [<the hub prompt>],
        "reward_model": {...}, "extra_info": {...}, ...}``

TEMPLATE(problem) is the paper's instruction wrapper::

    Solve the following math problem step by step. The last line of your response should
    be of the form Answer: $Answer (without quotes) where $Answer is the answer to the
    problem.\\n\\n{problem}\\n\\nRemember to put your answer on its own line after "Answer:".

Conversion:
    prompt = the bare problem, recovered from the model prompt (the hub ``prompt`` chat, or
             the flattened ``source_prompt`` chat) by removing TEMPLATE (whitespace-tolerant
             match of prefix and suffix); text without the template is kept as is. A plain
             string ``prompt`` without ``source_prompt`` is taken as the bare problem.
    answer = ``reward_model.ground_truth`` (else ``solution``), stripped
    meta   = {"index": uuid | None, "data_source": str | None, "template_found": bool}
             (``template_found`` is False when the text had no template to remove)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from verimath.datasets_prep.rows import (
    RawRow,
    RowError,
    answer_text,
    get_field,
    make_id,
    optional,
    optional_text,
)
from verimath.envs.problem import Problem

NAME = "dapo"
_PREFIX = re.compile(
    r"^\s*Solve the following math problem step by step\.\s+The last line of your response"
    r"\s+should be of the form Answer:\s*\$Answer\s+\(without quotes\)\s+where\s+\$Answer"
    r"\s+is the answer to the problem\.\s*",
    re.IGNORECASE,
)
_SUFFIX_HEAD = "Remember to put your answer"
_SUFFIX = re.compile(
    r"\s*Remember to put your answer on its own line after\s+\"?Answer:\"?\.?\s*$",
    re.IGNORECASE,
)


def _find_suffix(text: str, start: int) -> re.Match | None:
    at = text.rfind(_SUFFIX_HEAD, start)  # fast path for the template's own spelling
    if at >= 0:
        head = len(text[start:at].rstrip()) + start
        found = _SUFFIX.match(text, head)
        if found is not None:
            return found
    return _SUFFIX.search(text, start)


def strip_template(text: str) -> tuple[str, bool]:
    """(bare problem, whether the DAPO template was found) for one prompt text."""
    prefix = _PREFIX.match(text)
    start = prefix.end() if prefix else 0
    suffix = _find_suffix(text, start)
    if prefix is None and suffix is None:
        return text.strip(), False
    end = suffix.start() if suffix else len(text)
    return text[start:end].strip(), True


def _chat_content(value: Any, field: str) -> str:
    for message in value:
        if isinstance(message, (dict, Mapping)) and message.get("role", "user") == "user":
            if isinstance(message.get("content"), str):
                return message["content"]
            break
    raise RowError(field, "chat list has no user message with string 'content'")


def prompt_text(data: Mapping[str, Any]) -> str:
    """The prompt as sent to the model.

    The hub layout's ``prompt`` chat list, else the flattened layout's ``source_prompt``
    chat list, else a plain ``prompt`` string (already bare in the flattened layout).
    """
    value = get_field(data, "prompt")
    if isinstance(value, (list, tuple)) and value:
        text, field = _chat_content(value, "prompt"), "prompt[0].content"
    elif isinstance(value, str):
        original = optional(data, "source_prompt")
        if isinstance(original, (list, tuple)) and original:
            text, field = _chat_content(original, "source_prompt"), "source_prompt[0].content"
        else:
            text, field = value, "prompt"
    else:
        raise RowError("prompt", f"expected a string or a chat list, got {type(value).__name__}")
    if not text.strip():
        raise RowError(field, "empty")
    return text


def gold_answer(data: Mapping[str, Any]) -> str:
    """``reward_model.ground_truth``, else ``solution``."""
    value = optional(data, "reward_model.ground_truth")
    if value is not None:
        return answer_text(value, "reward_model.ground_truth")
    if optional(data, "solution") is not None:
        return answer_text(data["solution"], "solution")
    raise RowError("reward_model.ground_truth", "missing (and no 'solution' field)")


def convert(row: RawRow, *, name: str = NAME, split: str = "train") -> Problem:
    """One DAPO-Math-17k row (either layout) into a `Problem` with id
    ``"{name}/{split}/{index}"``."""
    data = row.data
    problem, found = strip_template(prompt_text(data))
    if not problem:
        raise RowError("prompt", "nothing left after removing the instruction template")
    answer = gold_answer(data)
    index = optional(data, "extra_info.index")
    meta = {
        "index": None if index is None else str(index),
        "data_source": optional_text(data, "data_source"),
        "template_found": found,
    }
    return Problem(
        id=make_id(name, split, row.index), prompt=problem, answer=answer, source=name, meta=meta
    )
