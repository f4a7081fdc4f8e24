"""Whether two answers are the same: the fast exact path, the written rules, math-verify.

``equivalence`` holds the verdicts (``fast_verdict``, ``symbolic_verdict``,
``normalize_answer``); the fast path reads numbers, lists and surds (``fast_path``),
collections (``lists``), polynomials (``polynomials``) and calculator notation
(``plain_math``) after aligning notation (``notation``); ``rules`` decide letter case, words
and value vs equation, ``tolerance`` decimals vs exact values, ``size_guard`` refuses answers
too large to compute, and ``probe`` cross-checks math-verify numerically. The symbolic verdict
runs in the scoring pool's workers (``verimath.rewards.pool``).
"""
