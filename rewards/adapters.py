"""Adapters that plug verimath's DAPO reward into other trainers (TRL, verl).

Both score with ``score_batch`` on the shared ``default_pool()``: the exact path in the
calling process, math-verify in worker processes with a hard timeout per answer. The reward
is DAPO's (Yu et al., 2025, arXiv 2503.14476): ``+1`` if the extracted final answer is
equivalent to the gold answer, else ``-1`` (no answer, wrong, timed out), plus the soft
overlong penalty in ``[-1, 0]`` when ``max_length``/``cache_length`` are set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from verimath.rewards.batch import score_batch
from verimath.rewards.equality.conventions import Conventions, as_conventions
from verimath.rewards.equality.equivalence import check_mode, check_timeout
from verimath.rewards.extraction.final_answer import extract_answer
from verimath.rewards.shaping.overlong import overlong_penalty
from verimath.rewards.text.inputs import answer_text, response_text

__all__ = ["TRLReward", "compute_score", "compute_score_batch", "make_trl_reward"]


@dataclass(frozen=True)
class TRLReward:
    """A TRL ``reward_funcs`` entry: ``reward(completions, **columns) -> list[float]``.

    Build it with ``make_trl_reward``. Picklable (a module-level class holding only its
    settings), so it survives TRL's and accelerate's copies and multi-process launchers.
    """

    gold_key: str = "answer"
    style: str = "auto"
    mode: str = "symbolic"
    timeout: float = 5.0
    max_length: int | None = None
    cache_length: int | None = None
    conventions: Conventions | None = None

    @property
    def __name__(self) -> str:  # TRL logs rewards under this name
        return "verimath_dapo" if self.max_length is not None else "verimath_correctness"

    def __call__(self, completions: Sequence, **kwargs) -> list[float]:
        """Rewards for ``completions``; the gold answers are the ``gold_key`` column.

        Completions may be strings or conversations (lists of ``{"role", "content"}``
        messages, the last assistant message is scored); ``None``, a missing completion,
        scores -1. Gold answers may be numbers (read as their ``str``). With ``max_length``
        set, lengths are the token counts of TRL's ``completion_ids``. When TRL passes
        ``log_metric``, the fraction of timed-out verifications and of answerless completions
        are logged, and the share of each extraction path and deciding rule
        (``verimath/path_box``, ``verimath/rule_fast``...: ``BatchScores.path_shares``).
        """
        if self.gold_key not in kwargs:
            columns = sorted(k for k in kwargs if k not in _TRL_EXTRAS)
            raise ValueError(
                f"the reward needs the gold answers in dataset column {self.gold_key!r}, but the "
                f"columns passed are {columns}; call make_trl_reward(gold_key=...) with yours"
            )
        texts = [_completion_text(c, i) for i, c in enumerate(completions)]
        golds = [answer_text(g, f"{self.gold_key}[{i}]")
                 for i, g in enumerate(kwargs[self.gold_key])]
        lengths = None
        if self.max_length is not None:
            ids = kwargs.get("completion_ids")
            if ids is None:
                raise ValueError("max_length is set but the trainer passed no completion_ids")
            lengths = [len(x) for x in ids]
        scores = score_batch(
            texts, golds, lengths=lengths, max_length=self.max_length,
            cache_length=self.cache_length, style=self.style, mode=self.mode, timeout=self.timeout,
            conventions=self.conventions,
        )
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and len(scores):
            log_metric("verimath/timed_out_frac", float(scores.timed_out.mean()))
            no_answer = sum(e is None for e in scores.extracted)
            log_metric("verimath/no_answer_frac", no_answer / len(scores))
            for key, share in scores.path_shares().items():  # reward/path_box -> verimath/path_box
                log_metric("verimath/" + key.split("/", 1)[1], share)
        return scores.reward.tolist()


_TRL_EXTRAS = {
    "prompts", "completion_ids", "trainer_state", "log_extra", "log_metric", "environments",
}


def make_trl_reward(
    gold_key: str = "answer",
    *,
    style: str = "auto",
    mode: str = "symbolic",
    timeout: float = 5.0,
    max_length: int | None = None,
    cache_length: int | None = None,
    conventions: Conventions | str | dict | None = None,
) -> TRLReward:
    """A reward function for ``trl.GRPOTrainer(reward_funcs=[...])``.

    Args:
        gold_key: the dataset column holding the gold answers.
        style: answer extraction, ``"auto"`` (``Answer:`` line, then ``\\boxed{}``), ``"dapo"``
            or ``"boxed"``.
        mode: ``"symbolic"``, ``"integer"`` (the paper's strict integer match) or ``"string"``.
        timeout: seconds per symbolic verification; a timeout scores -1.
        max_length, cache_length: DAPO's ``L_max`` and ``L_cache`` in tokens; set both to add
            the soft overlong penalty (paper: 16384 and 4096), or neither.
        conventions: the grading conventions (``Conventions``, ``"default"``, ``"strict"`` or a
            dict of settings; see ``verimath.rewards.equality.conventions``).
    """
    if not isinstance(gold_key, str) or not gold_key:
        raise ValueError(f"gold_key must be a non-empty column name, got {gold_key!r}")
    _check_options(style, mode, timeout)
    if (max_length is None) != (cache_length is None):
        raise ValueError(
            "set both max_length and cache_length for the overlong penalty, or neither"
        )
    if max_length is not None:
        overlong_penalty(0, max_length=max_length, cache_length=cache_length)  # validates
    return TRLReward(gold_key, style, mode, float(timeout), max_length, cache_length,
                     as_conventions(conventions))


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict | None = None,
    *,
    style: str = "auto",
    mode: str = "symbolic",
    timeout: float = 5.0,
    conventions: Conventions | str | dict | None = None,
) -> dict:
    """verl's ``custom_reward_function``: ``{"score": +1/-1, "acc": bool, "pred": str}``.

    Inputs as in ``correctness_reward``: ``solution_str=None`` (a missing response) scores
    -1, a number as ``ground_truth`` is read as its ``str``, any other type is a
    ``TypeError``. ``data_source`` and ``extra_info`` are accepted and ignored (every source
    is scored the same way); the keyword options come from verl's ``reward_kwargs``
    (``conventions`` as ``"strict"`` or a dict of settings there). The overlong penalty is
    left to verl's reward manager (its ``overlong_buffer`` settings), as in verl's DAPO
    recipe.
    """
    solution_str = response_text(solution_str, "solution_str")
    ground_truth = answer_text(ground_truth, "ground_truth")
    return compute_score_batch([data_source], [solution_str], [ground_truth], None,
                               style=style, mode=mode, timeout=timeout,
                               conventions=conventions)[0]


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[str],
    extra_infos: Sequence[dict] | None = None,
    *,
    style: str = "auto",
    mode: str = "symbolic",
    timeout: float = 5.0,
    conventions: Conventions | str | dict | None = None,
) -> list[dict]:
    """``compute_score`` for a whole batch at once (verl's batch reward manager calls this)."""
    _check_options(style, mode, timeout)
    texts = [response_text(s, f"solution_strs[{i}]") for i, s in enumerate(solution_strs)]
    golds = [answer_text(g, f"ground_truths[{i}]") for i, g in enumerate(ground_truths)]
    scores = score_batch(texts, golds, style=style, mode=mode, timeout=timeout,
                         conventions=as_conventions(conventions))
    return [
        {"score": float(s), "acc": bool(c), "pred": p if p is not None else ""}
        for s, c, p in zip(scores.correctness, scores.correct, scores.extracted)
    ]


def _completion_text(completion, index: int) -> str | None:
    """The text of a plain or conversational completion (``None`` when it is missing)."""
    if not isinstance(completion, (dict, list, tuple)):
        return response_text(completion, f"completions[{index}]")
    if isinstance(completion, dict):
        completion = [completion]
    if isinstance(completion, (list, tuple)) and completion:
        messages = [m for m in completion if isinstance(m, dict)]
        assistant = [m for m in messages if m.get("role", "assistant") == "assistant"]
        content = (assistant or messages or [{}])[-1].get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):  # multimodal parts: [{"type": "text", "text": ...}]
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    raise ValueError(
        f"completions[{index}] is neither a string nor a list of chat messages with string "
        f"content: {completion!r:.200}"
    )


def _check_options(style: str, mode: str, timeout: float) -> None:
    extract_answer("", style=style)  # raises ValueError for an unknown style
    check_mode(mode)
    check_timeout(timeout)
