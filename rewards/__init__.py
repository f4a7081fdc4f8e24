"""Rule-based rewards for math RL: answer extraction, equivalence, DAPO's overlong shaping,
and fast batch scoring. Imports without torch.

Module imports go one way, an arrow pointing at what a module imports
(``tests/rewards/test_imports.py`` checks it, function-level imports included)::

    adapters, cli -> batch, correctness -> pool -> pool_worker -> equivalence
    equivalence -> lists -> notation -> extract, fast_path;  equivalence -> polynomials, size_guard
    batch, correctness -> extract -> free_form -> chunks, phrases;  batch -> overlong

Public API (stable names):
    extract_answer, is_equivalent, correctness_reward, score, overlong_penalty,
    score_batch, BatchScores, ScoringPool, default_pool, make_trl_reward, compute_score,
    compute_score_batch, fast_verdict, symbolic_verdict, normalize_answer
"""

from verimath.rewards.adapters import compute_score, compute_score_batch, make_trl_reward
from verimath.rewards.batch import BatchScores, score_batch
from verimath.rewards.correctness import correctness_reward, is_equivalent, score
from verimath.rewards.equivalence import fast_verdict, normalize_answer, symbolic_verdict
from verimath.rewards.extract import extract_answer
from verimath.rewards.overlong import overlong_penalty
from verimath.rewards.pool import ScoringPool, default_pool

__all__ = [
    "BatchScores",
    "ScoringPool",
    "compute_score",
    "compute_score_batch",
    "correctness_reward",
    "default_pool",
    "extract_answer",
    "fast_verdict",
    "is_equivalent",
    "make_trl_reward",
    "normalize_answer",
    "overlong_penalty",
    "score",
    "score_batch",
    "symbolic_verdict",
]
