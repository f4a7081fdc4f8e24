"""Gymnasium ids, registered when `verimath.envs` is imported.

``verimath/<Family>-v0`` for each generator family (``level=1..5``; ``Mixed`` also takes
``weights``), and ``verimath/Dataset-v0`` for prepared files (``path=...``, ``shuffle=True``) or
in-memory lists (``problems=[...]``). Every other `MathEnv` argument passes through ``make``.
A change to what an id generates bumps its version (``-v1``), as Gymnasium does; the snapshot
tests in ``tests/envs`` catch such changes.
"""

from __future__ import annotations

import gymnasium as gym
from verimath.envs.generators import FAMILIES

NAMESPACE = "verimath"
ENTRY_POINT = "verimath.envs.math_env:MathEnv"
FAMILY_IDS = {family: f"{NAMESPACE}/{family}-v0" for family in FAMILIES}
DATASET_ID = f"{NAMESPACE}/Dataset-v0"
ENV_IDS = (*FAMILY_IDS.values(), DATASET_ID)


def register_envs() -> tuple[str, ...]:
    """Register every id once (importing twice is harmless); returns the ids."""
    for family, env_id in FAMILY_IDS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=ENTRY_POINT, kwargs={"family": family})
    if DATASET_ID not in gym.registry:
        gym.register(DATASET_ID, entry_point=ENTRY_POINT)
    return ENV_IDS
