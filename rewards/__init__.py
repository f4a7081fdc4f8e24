"""Rule-based rewards for math RL: answer extraction, equivalence, DAPO's overlong shaping,
and fast batch scoring. Imports without torch.

Sub-packages by idea, imports going one way (``tests/rewards/test_imports.py`` checks it,
function-level imports included)::

    adapters, cli -> batch, correctness, explain -> pool -> equality -> text
    batch, correctness, explain -> extraction -> text;  batch -> shaping

``text`` reads LaTeX and plain text (brackets, boxes, numbers); ``extraction`` finds the final
answer in a response; ``equality`` decides whether two answers are the same (the fast path,
the written rules, math-verify); ``pool`` runs the symbolic verdict in worker processes under
a hard timeout; ``shaping`` holds DAPO's overlong punishment.

Public API (stable names):
    extract_answer, extract_with_path, is_equivalent, correctness_reward, score, explain,
    Explanation, overlong_penalty, score_batch, BatchScores, ScoringPool, default_pool,
    make_trl_reward, compute_score, compute_score_batch, fast_verdict, symbolic_verdict,
    normalize_answer, Conventions, STRICT_CONVENTIONS

Grading conventions (what graders differ on: a value against ``name = value``, a relation's
right side, decimals against exact golds, the order of bare lists, choice letters) are the
``Conventions`` settings every verdict takes as ``conventions=``; the defaults follow what
RL graders do, ``"strict"`` (``STRICT_CONVENTIONS``) turns each to its strict reading.

Where each reward came from: ``BatchScores.paths`` and ``.rules`` per item, and
``BatchScores.path_shares()`` as metric keys (``reward/path_box``, ``reward/rule_fast``...)
for a trainer to log every step; ``explain(response, gold)`` for one verdict in full.
"""

import importlib

from verimath.rewards.correctness import correctness_reward, is_equivalent, score
from verimath.rewards.equality.conventions import STRICT as STRICT_CONVENTIONS
from verimath.rewards.equality.conventions import Conventions
from verimath.rewards.equality.equivalence import fast_verdict, normalize_answer, symbolic_verdict
from verimath.rewards.explain import Explanation, explain
from verimath.rewards.extraction.final_answer import extract_answer, extract_with_path
from verimath.rewards.moved_modules import alias_moved_modules
from verimath.rewards.pool.scoring_pool import ScoringPool, default_pool

# Batch scoring, the overlong penalty and the trainer adapters need numpy (and numba): they
# load on first use, so that ``from verimath.rewards import is_equivalent`` stays light and a
# process's first verdict is not held up by imports it does not need.
_LAZY = {
    "BatchScores": "verimath.rewards.batch", "score_batch": "verimath.rewards.batch",
    "overlong_penalty": "verimath.rewards.shaping.overlong",
    "compute_score": "verimath.rewards.adapters",
    "compute_score_batch": "verimath.rewards.adapters",
    "make_trl_reward": "verimath.rewards.adapters",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "STRICT_CONVENTIONS",
    "BatchScores",
    "Conventions",
    "Explanation",
    "ScoringPool",
    "compute_score",
    "compute_score_batch",
    "correctness_reward",
    "default_pool",
    "explain",
    "extract_answer",
    "extract_with_path",
    "fast_verdict",
    "is_equivalent",
    "make_trl_reward",
    "normalize_answer",
    "overlong_penalty",
    "score",
    "score_batch",
    "symbolic_verdict",
]

# Module paths before the sub-packages (0.1): importable, with a DeprecationWarning.
alias_moved_modules({f"verimath.rewards.{old}": f"verimath.rewards.{new}" for old, new in (
    ("extract", "extraction.final_answer"), ("markers", "extraction.markers"),
    ("free_form", "extraction.free_form"), ("chunks", "extraction.chunks"),
    ("phrases", "extraction.phrases"), ("brackets", "text.brackets"), ("boxes", "text.boxes"),
    ("equivalence", "equality.equivalence"), ("rules", "equality.rules"),
    ("tolerance", "equality.tolerance"), ("probe", "equality.probe"),
    ("size_guard", "equality.size_guard"), ("fast_path", "equality.fast_path"),
    ("lists", "equality.lists"), ("notation", "equality.notation"),
    ("plain_math", "equality.plain_math"), ("polynomials", "equality.polynomials"),
    ("pool_processes", "pool.scoring_pool"), ("pool_worker", "pool.worker"),
    ("overlong", "shaping.overlong"))}, removed_in="0.3")
