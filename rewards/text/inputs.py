"""What the public entry points take as a response, a prediction or a gold answer.

One rule for all of them (``score``, ``correctness_reward``, ``is_equivalent``, ``explain``,
``extract_answer``, ``fast_verdict``, ``score_batch``, the TRL and verl adapters):

* a ``str`` is taken as it is;
* a number (``int``, ``float``, numpy's integers and floats, ``Fraction``; never ``bool``) is
  the answer written with ``str``: ``42`` is ``"42"``, ``0.5`` is ``"0.5"``, as datasets
  often store gold answers;
* ``None`` as a response or prediction is a missing answer: it scores as incorrect (-1,
  ``False``), as an answerless response does. A gold answer must be given: ``None`` there
  is an error;
* anything else (``bool``, ``bytes``, a list...) is a ``TypeError`` that names the argument
  and its type.
"""

from __future__ import annotations

from numbers import Real

__all__ = ["answer_text", "response_text"]


def answer_text(value, name: str) -> str:
    """``value`` as text: a ``str`` as it is, a number written with ``str``; anything else
    (``None`` included) is a ``TypeError`` naming ``name``."""
    if isinstance(value, str):
        return value
    if isinstance(value, Real) and not isinstance(value, bool):
        return str(value)
    raise TypeError(
        f"{name} must be a str (or an int or float, read as its str), got "
        f"{type(value).__name__}: {value!r:.80}"
    )


def response_text(value, name: str) -> str | None:
    """``answer_text``, except that ``None`` (a missing response or prediction, which scores
    as incorrect) stays ``None``."""
    return None if value is None else answer_text(value, name)
