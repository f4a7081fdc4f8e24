"""Snapshots of ``reset(seed=0)`` prompts for every registered id, so generator drift is seen.

A failure here means an id now poses different problems for the same seed. If that is
intended, bump the id's version (``-v0`` -> ``-v1``, see envs/registration.py) and rewrite the
snapshots with::

    VERIMATH_UPDATE_SNAPSHOTS=1 python -m pytest tests/envs/test_snapshots.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import gymnasium as gym
import pytest
from verimath.envs import ENV_IDS, generate, write_problems

SNAPSHOT_DIR = Path(__file__).resolve().parent / "snapshots"
UPDATE = os.environ.get("VERIMATH_UPDATE_SNAPSHOTS") == "1"
EPISODES = 3


def dataset_file(tmp_path: Path) -> str:
    path = tmp_path / "snapshot_problems.jsonl"
    write_problems([generate("Mixed", 7, i, 2) for i in range(12)], path)
    return str(path)


def take_snapshot(env_id: str, tmp_path: Path) -> dict:
    """Prompts (raw template) and answers of the first episodes after ``reset(seed=0)`` at each
    level, plus one prompt under the default template."""
    if env_id.endswith("Dataset-v0"):
        cases = {"shuffled": {"path": dataset_file(tmp_path), "shuffle": True}}
    else:
        cases = {f"level {level}": {"level": level} for level in range(1, 6)}
    out: dict = {"env_id": env_id, "episodes": EPISODES, "cases": {}}
    for name, kwargs in cases.items():
        env = gym.make(env_id, template="raw", include_answer=True, **kwargs)
        infos = [env.reset(seed=0)] + [env.reset() for _ in range(EPISODES - 1)]
        out["cases"][name] = [{"id": i["id"], "prompt": o, "answer": i["answer"]}
                              for o, i in infos]
    first_kwargs = next(iter(cases.values()))
    out["default_template_prompt"] = gym.make(env_id, **first_kwargs).reset(seed=0)[0]
    return out


def snapshot_path(env_id: str) -> Path:
    return SNAPSHOT_DIR / (env_id.split("/")[1] + ".json")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_reset_seed_zero_matches_snapshot(env_id, tmp_path):
    current = take_snapshot(env_id, tmp_path)
    path = snapshot_path(env_id)
    if UPDATE:
        path.write_text(json.dumps(current, indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    assert path.exists(), f"no snapshot for {env_id}; create it with VERIMATH_UPDATE_SNAPSHOTS=1"
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert current == stored, (
        f"{env_id} now generates different problems for reset(seed=0). If intended, bump the "
        "version in envs/registration.py and rerun with VERIMATH_UPDATE_SNAPSHOTS=1"
    )


def test_every_snapshot_file_belongs_to_a_registered_id():
    names = {snapshot_path(env_id).name for env_id in ENV_IDS}
    assert {p.name for p in SNAPSHOT_DIR.glob("*.json")} <= names
