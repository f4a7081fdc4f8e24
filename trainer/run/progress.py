"""Progress bars for the warm start and the RL steps (tqdm), and printing beside them."""

from __future__ import annotations

from collections.abc import Callable


def progress_bar(total: int, initial: int, enabled: bool, desc: str):
    """A tqdm bar (disabled when ``enabled`` is False, e.g. ``logging.progress=false``)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, desc=desc, dynamic_ncols=True,
                leave=True)


def bar_echo(bar, fallback: Callable[[str], None]) -> Callable[[str], None]:
    """Print through the bar while it is shown (so lines do not tear it), else ``fallback``."""
    def echo(message: str) -> None:
        (bar.write if not bar.disable else fallback)(message)
    return echo
