"""The text spaces of the math environments.

Gymnasium's `Text` space only admits characters of a fixed charset (alphanumerics by default),
which rejects real problems (``$``, ``\\frac``, ``÷``, Chinese). `UnicodeText` is a `Text`
that admits every string within its length bounds, and samples printable ASCII.

`AsyncVectorEnv` cannot pass text observations through shared memory (Gymnasium reads a
tuple of str from the buffer once, when the vector env is built), so asking for it raises an
error that says to pass ``vector_kwargs={"shared_memory": False}``.
"""

from __future__ import annotations

import multiprocessing as mp
import string
from types import ModuleType
from typing import Any, NoReturn

from gymnasium.error import CustomSpaceError
from gymnasium.spaces import Text
from gymnasium.vector.utils import create_shared_memory

MAX_CHARS = 1 << 20  # 1 Mi characters: a 20k-token response is ~80k characters


class UnicodeText(Text):
    """Any ``str`` with ``min_length <= len <= max_length`` characters (every code point)."""

    def __init__(self, max_length: int = MAX_CHARS, *, min_length: int = 0,
                 seed: Any = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=string.printable, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Printable ASCII of random length; at most 256 characters unless a mask sets one."""
        if mask is None and probability is None:
            length = int(self.np_random.integers(self.min_length, min(self.max_length, 256) + 1))
            return super().sample(mask=(length, None))
        return super().sample(mask=mask, probability=probability)

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, UnicodeText) and self.min_length == other.min_length
                and self.max_length == other.max_length)

    __hash__ = None  # mutable RNG inside, like every gymnasium space


@create_shared_memory.register(UnicodeText)
def _no_shared_memory(space: UnicodeText, n: int = 1, ctx: ModuleType = mp) -> NoReturn:
    raise CustomSpaceError(
        "verimath text observations cannot go through AsyncVectorEnv's shared memory (it "
        "reads str observations once, at construction); use "
        "gymnasium.make_vec(..., vectorization_mode='async', "
        "vector_kwargs={'shared_memory': False})"
    )
