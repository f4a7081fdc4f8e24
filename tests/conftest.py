"""Shared fixtures. Real datasets are read from ../shared/data or $VERIMATH_DATA_DIR."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# A shared 2-core CI machine makes wall-clock deadlines flaky; properties are bounded by
# their example counts instead. HYPOTHESIS_PROFILE=thorough runs more examples.
settings.register_profile("default", deadline=None)
settings.register_profile("thorough", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("VERIMATH_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The directory of real datasets (gsm8k/, math500/, aime24/, aime25/, dapo_math_17k/)."""
    if not (DATA_DIR / "gsm8k").is_dir():
        pytest.skip(
            f"real datasets not found at {DATA_DIR} (no gsm8k/); set VERIMATH_DATA_DIR to a "
            "directory of the raw files (gsm8k/, math500/, aime24/, aime25/, dapo_math_17k/; "
            "the README's 'Preparing datasets' section says where to get each one)"
        )
    return DATA_DIR
