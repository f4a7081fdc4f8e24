"""Reading LaTeX and plain text: bracket depth, ``\\boxed{}`` arguments, number literals.

The bottom of ``verimath.rewards``: pure functions on ``str`` that both the answer extraction
(``verimath.rewards.extraction``) and the equality rules (``verimath.rewards.equality``) use;
they import nothing else of the package.
"""
