"""Rule-based rewards for math RL: answer extraction, equivalence, DAPO's overlong shaping,
and fast batch scoring. Imports without torch.

Module imports go one way, an arrow pointing at what a module imports
(``tests/rewards/test_imports.py`` checks it, function-level imports included)::

    adapters, cli -> batch, correctness, explain -> pool -> pool_worker -> equivalence
    equivalence -> lists -> notation -> boxes, fast_path, plain_math
    equivalence -> polynomials, size_guard, rules, probe -> tolerance
    batch, correctness -> extract -> boxes, markers, free_form -> chunks, phrases
    batch -> overlong;  lists, notation, free_form, polynomials -> brackets

Public API (stable names):
    extract_answer, extract_with_path, is_equivalent, correctness_reward, score, explain,
    Explanation, overlong_penalty, score_batch, BatchScores, ScoringPool, default_pool,
    make_trl_reward, compute_score, compute_score_batch, fast_verdict, symbolic_verdict,
    normalize_answer

Where each reward came from: ``BatchScores.paths`` and ``.rules`` per item, and
``BatchScores.path_shares()`` as metric keys (``reward/path_box``, ``reward/rule_fast``...)
for a trainer to log every step; ``explain(response, gold)`` for one verdict in full.
"""

from verimath.rewards.adapters import compute_score, compute_score_batch, make_trl_reward
from verimath.rewards.batch import BatchScores, score_batch
from verimath.rewards.correctness import correctness_reward, is_equivalent, score
from verimath.rewards.equivalence import fast_verdict, normalize_answer, symbolic_verdict
from verimath.rewards.explain import Explanation, explain
from verimath.rewards.extract import extract_answer, extract_with_path
from verimath.rewards.overlong import overlong_penalty
from verimath.rewards.pool import ScoringPool, default_pool

__all__ = [
    "BatchScores",
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
