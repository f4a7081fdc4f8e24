"""Hypothesis strategies shared across the test suite."""

from __future__ import annotations

from hypothesis import strategies as st

# Text a model might emit, hostile characters included (NUL, lone surrogates are excluded by
# hypothesis' default text strategy only when asked; we ask for them explicitly elsewhere).
model_text = st.text(max_size=400)


# --- rewards: overlong lengths and verdict functions for ScoringPool tests ---
# The verdict functions below run inside pool worker processes, which import them by name
# (tests/ is on their sys.path), so they must stay at module level here.

#: (max_length, cache_length) with 0 < cache_length <= max_length.
overlong_limits = st.integers(1, 40_000).flatmap(
    lambda max_len: st.tuples(st.just(max_len), st.integers(1, max_len))
)
#: Token counts, integral or not, up to well past any max_length above.
lengths = st.one_of(st.integers(0, 50_000), st.floats(0, 50_000, allow_nan=False))


def sleepy_verdict(pred: str, gold: str) -> bool:
    """``pred`` is ``"<seconds>:<tag>"``: sleep that long, then say whether tag == gold."""
    import time

    delay, _, tag = pred.partition(":")
    time.sleep(float(delay))
    return tag == gold


def crashing_verdict(pred: str, gold: str) -> bool:
    """Kill the worker process outright when pred is "crash"; otherwise pred == gold."""
    import os

    if pred == "crash":
        os._exit(3)
    return pred == gold


# --- datasets_prep: raw dataset rows ---

#: Problem statements: any text with at least one visible character.
problem_text = st.text(min_size=1, max_size=300).filter(lambda s: s.strip())
#: AIME-style integer answers, and GSM8K-style ones (any sign and size).
aime_integers = st.integers(0, 999)
gsm8k_integers = st.integers(-(10**12), 10**12)
#: LaTeX-ish gold answers with balanced braces and no newline (MATH style).
latex_answer = st.recursive(
    st.one_of(
        st.text(alphabet="0123456789abcxyz+-*/^()., ", min_size=1, max_size=12),
        st.sampled_from(["\\frac", "\\sqrt", "\\pi", "\\cdot ", "\\infty"]),
    ),
    lambda inner: st.builds(lambda a, b: a + "{" + b + "}", inner, inner),
    max_leaves=4,
).filter(lambda s: s.strip())
#: Lower-case words for n-gram tests.
word = st.text(alphabet="abcdefghij", min_size=1, max_size=5)
word_lists = st.lists(word, min_size=0, max_size=40)


# --- envs: generator items ---

#: (seed, index, level) addressing one generated problem.
generator_items = st.tuples(
    st.integers(0, 2**63 - 1), st.integers(0, 10**9), st.sampled_from([1, 2, 3, 4, 5])
)


# --- trainer: policy-loss batches -----------------------------------------------------------


@st.composite
def loss_batches(draw, max_b=5, max_t=7, per_token_adv=None):
    """A float64 batch of ``dapo_policy_loss`` inputs: ``logp``, ``old_logp`` (token ratios
    within about e^+-1.2), ``adv`` ``(B,)`` or ``(B, T)`` (0, or of size 1e-3..2) and a bool
    ``mask``."""
    import numpy as np
    import torch
    from hypothesis.extra import numpy as hnp

    b, t = draw(st.integers(1, max_b)), draw(st.integers(1, max_t))
    logp = draw(hnp.arrays(np.float64, (b, t), elements=st.floats(-6, -0.01)))
    delta = draw(hnp.arrays(np.float64, (b, t), elements=st.floats(-1.2, 1.2)))
    if per_token_adv is None:
        per_token_adv = draw(st.booleans())
    values = st.one_of(st.just(0.0), st.floats(1e-3, 2.0), st.floats(-2.0, -1e-3))
    adv = draw(hnp.arrays(np.float64, (b, t) if per_token_adv else (b,), elements=values))
    mask = draw(hnp.arrays(np.bool_, (b, t)))
    return {"logp": torch.tensor(logp, dtype=torch.float64),
            "old_logp": torch.tensor(logp - delta, dtype=torch.float64),
            "adv": torch.tensor(adv, dtype=torch.float64), "mask": torch.tensor(mask)}


@st.composite
def log_ratio_batches(draw, max_b=5, max_t=7):
    """``(old_logp, behaviour_logp, mask)`` float64 ``(B, T)`` for the rollout corrections:
    per-token log-ratios in [-3, 3] (masked positions hold garbage, NaN included)."""
    import numpy as np
    import torch
    from hypothesis.extra import numpy as hnp

    b, t = draw(st.integers(1, max_b)), draw(st.integers(1, max_t))
    old = draw(hnp.arrays(np.float64, (b, t), elements=st.floats(-6, 0)))
    delta = draw(hnp.arrays(np.float64, (b, t), elements=st.floats(-3, 3)))
    mask = draw(hnp.arrays(np.bool_, (b, t)))
    behaviour = np.where(mask, old - delta, np.nan)
    return torch.tensor(old), torch.tensor(behaviour), torch.tensor(mask)
