"""The one check every config section uses."""

from __future__ import annotations


def require(ok: bool, message: str) -> None:
    """ValueError with ``message`` unless ``ok``: a setting's value is refused before
    anything runs, naming the setting."""
    if not ok:
        raise ValueError(message)
