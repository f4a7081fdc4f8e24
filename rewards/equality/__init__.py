"""Whether two answers are the same: one reading of the pair, the fast exact path, the
numeric check, math-verify.

``readings`` reads every pair the same way on every path (delimiters stripped, notation aligned
by ``notation``, choice letters, equations as relations by ``relations``, the grading
conventions of ``conventions``); ``equivalence`` holds the verdicts (``fast_verdict``,
``fast_decision``, ``symbolic_verdict``, ``normalize_answer``); the fast path reads numbers,
lists and surds (``fast_path``), collections (``lists``), polynomials (``polynomials``) and
calculator notation (``plain_math``); ``rules`` decide choice letters, letter case and words,
``tolerance`` decimals against exact values, ``size_guard`` refuses answers too large to
compute; ``numeric`` evaluates expressions of a narrow grammar at seeded points in the calling
process, and ``probe`` cross-checks math-verify numerically in the scoring pool's workers
(``verimath.rewards.pool``).
"""
