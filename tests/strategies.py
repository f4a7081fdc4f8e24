"""Hypothesis strategies shared across the test suite."""

from __future__ import annotations

from hypothesis import strategies as st

# Text a model might emit, hostile characters included (NUL, lone surrogates are excluded by
# hypothesis' default text strategy only when asked; we ask for them explicitly elsewhere).
model_text = st.text(max_size=400)
