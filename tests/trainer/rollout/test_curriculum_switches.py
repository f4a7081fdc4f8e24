"""The trainer's curriculum switches (``data.adapt_level``, ``data.skip_solved``): config keys,
the episode source's env follows the scored groups, logs ``curriculum/`` metrics every step,
resumes exactly, and leaves the held-out problems at the configured level."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from verimath.envs import generate, write_problems
from verimath.trainer.config import DataConfig
from verimath.trainer.core.protocols import Rollouts, SamplingParams
from verimath.trainer.model.tiny import make_char_tokenizer
from verimath.trainer.rollout.episodes import EpisodeSource, ExcludingGenerator

TOKENIZER = make_char_tokenizer()
SKILL = {1: 1.0, 2: 1.0, 3: 0.5, 4: 0.0, 5: 0.0}
"""Fraction of a group the oracle answers right, by the problem's level."""


class OracleEngine:
    """Answers the source's current problems: the first ``SKILL[level] * n`` samples of each
    are right (a files' problems count as level 1)."""

    source: EpisodeSource

    def generate(self, prompt_ids, params, *, n=1, seeds=None) -> Rollouts:
        texts = []
        for problem in self.source.env.problems:
            right = round(SKILL[problem.meta.get("level", 1)] * n)
            texts += [f"Answer: {problem.answer}"] * right + ["Answer: none"] * (n - right)
        ids = [TOKENIZER(t, add_special_tokens=False)["input_ids"] for t in texts]
        return Rollouts(prompt_ids=[p for p in prompt_ids for _ in range(n)],
                        response_ids=ids, texts=texts, truncated=np.zeros(len(texts), bool))


def _source(*, level=1, train_file=None, **switches) -> EpisodeSource:
    engine = OracleEngine()
    engine.source = EpisodeSource(
        tokenizer=TOKENIZER, engine=engine, params=SamplingParams(), num_problems=2,
        group_size=4, template="{prompt}\n", use_chat_template=False, family="Arithmetic",
        level=level, seed=3, train_file=train_file, excluded=set(),
        reward_kwargs={"style": "dapo", "mode": "integer"}, **switches)
    return engine.source


ADAPT = DataConfig(adapt_level=True, adapt_min_groups=2).curriculum()


def _rounds(source, count):
    """Per round: the posed problems' ids and levels, and the curriculum metrics after it."""
    out = []
    for i in range(count):
        groups, _ = source.next_round(i)
        levels = [p.meta.get("level") for p in source.env.problems]
        out.append(([g.problem_id for g in groups], levels,
                    dict(source.pop_stats().curriculum)))
    return out


def test_config_keys_are_off_by_default_and_build_the_env_settings():
    assert DataConfig().curriculum() == {"adapt_level": None, "skip_solved": None}
    on = DataConfig(adapt_level=True, adapt_band=(0.2, 0.8), adapt_min_groups=4,
                    adapt_levels=(2, 3), adapt_substeps=4, adapt_patience=2).curriculum()
    assert on["adapt_level"] == {"low": 0.2, "high": 0.8, "min_groups": 4, "min_level": 2,
                                 "max_level": 3, "substeps": 4, "margin": 0.1,
                                 "patience": 2}
    skip = DataConfig(train_file="t.jsonl", skip_solved=True, skip_solved_visits=3,
                      skip_solved_recheck=5).curriculum()
    assert skip == {"adapt_level": None, "skip_solved": {"visits": 3, "recheck_after": 5}}


@pytest.mark.parametrize("kwargs, key", [
    ({"adapt_level": True, "train_file": "t.jsonl"}, "data.adapt_level"),
    ({"skip_solved": True}, "data.skip_solved"),
    ({"adapt_band": (0.9, 0.1)}, "data.adapt_band"),
    ({"adapt_min_groups": 0}, "data.adapt_min_groups"),
    ({"adapt_levels": (4, 6)}, "data.adapt_levels"),
    ({"adapt_substeps": 0}, "data.adapt_substeps"),
    ({"adapt_patience": 0}, "data.adapt_patience"),
    ({"adapt_margin": 1.0}, "data.adapt_margin"),
    ({"skip_solved_recheck": 0}, "data.skip_solved_recheck"),
])
def test_bad_settings_name_the_key(kwargs, key):
    with pytest.raises(ValueError, match=key):
        DataConfig(**kwargs)


def test_adapt_level_follows_the_group_pass_rate_and_logs_it():
    with _source(level=1, **ADAPT) as source:
        rounds = _rounds(source, 4)
    assert [levels for _, levels, _ in rounds] == [[1, 1], [2, 2], [3, 3], [3, 3]]
    last = rounds[-1][2]
    assert last["curriculum/level/Arithmetic"] == 3.0
    assert last["curriculum/moves/Arithmetic"] == 2.0
    assert last["curriculum/pass_rate/Arithmetic"] == 0.5
    with _source(level=1) as fixed:  # off: the level stays and no curriculum metric
        assert all(levels == [1, 1] and not metrics
                   for _, levels, metrics in _rounds(fixed, 3))


def test_adapt_levels_bound_the_level_and_a_level_without_allowed_prompts_names_the_keys():
    capped = DataConfig(adapt_level=True, adapt_min_groups=2, adapt_levels=(1, 2)).curriculum()
    with _source(level=1, **capped) as source:  # the oracle solves levels 1 and 2
        assert [levels for _, levels, _ in _rounds(source, 4)][-1] == [2, 2]
    no_level_5_prompt = ExcludingGenerator("Arithmetic", skip_containing=("*", "-"),
                                           max_tries=200)  # every one has '*' or '-'
    with pytest.raises(ValueError, match="data.skip_containing.*data.adapt_levels"):
        generate(no_level_5_prompt, 0, 0, 5)


def _resume_matches(make, rounds_before: int, rounds_after: int) -> None:
    with make() as a, make() as b, make() as forgetful:
        _rounds(a, rounds_before)
        saved = json.loads(json.dumps(a.state_dict()))  # as a checkpoint stores it
        b.load_state_dict(saved)
        expected = _rounds(a, rounds_after)
        assert _rounds(b, rounds_after) == expected
        assert b.state_dict() == a.state_dict()
        source = saved["env"]["source"]
        assert {"curriculum", "skip_solved"} & source.keys(), "no curriculum state saved"
        for key in ("curriculum", "skip_solved"):
            source.pop(key, None)
        forgetful.load_state_dict(saved)  # the stream without the curriculum: not the same
        assert _rounds(forgetful, rounds_after) != expected


@pytest.mark.parametrize("switches", [
    ADAPT, DataConfig(adapt_level=True, adapt_min_groups=2, adapt_substeps=2,
                      adapt_patience=2).curriculum()])
def test_adapt_level_resumes_exactly(switches):
    _resume_matches(lambda: _source(level=1, **switches), 1, 3)


def test_skip_solved_skips_settled_prompts_rechecks_them_and_resumes_exactly(tmp_path):
    path = tmp_path / "train.jsonl"
    write_problems([generate("Arithmetic", 0, i, 1) for i in range(4)], path)
    switches = DataConfig(train_file=str(path), skip_solved=True, skip_solved_visits=1,
                          skip_solved_recheck=1).curriculum()
    with _source(train_file=str(path), **switches) as source:
        metrics = _rounds(source, 6)[-1][2]
    assert metrics["curriculum/settled"] == 4.0  # the oracle solves every problem
    assert metrics["curriculum/skipped"] > 0 and metrics["curriculum/rechecked"] > 0
    _resume_matches(lambda: _source(train_file=str(path), **switches), 2, 4)


# A ~20K-parameter model (as in test_smoke) on Arithmetic level 2; a band no tiny model's pass
# rate reaches moves the level down to 1 after the first round.
RUN = [
    "model.tiny_hidden_size=32", "model.tiny_layers=1", "model.tiny_heads=2",
    "data.level=2", "warmstart.steps=30", "warmstart.batch_size=16",
    "rollout.gen_prompts=4", "rollout.group_size=4", "rollout.max_new_tokens=8",
    "algo.train_prompts=2", "algo.mini_batch_prompts=2", "algo.micro_batch_size=8",
    "algo.max_gen_rounds=2", "optim.warmup_steps=0", "eval.num_problems=4", "eval.k=1",
    "logging.progress=false", "logging.save_every=1", "logging.plot=false", "model.threads=0",
    "reward.workers=1", "data.adapt_level=true", "data.adapt_band=[0.98,0.99]",
    "data.adapt_min_groups=2", "optim.steps=2",
]


@pytest.mark.slow
def test_a_training_run_logs_the_curriculum_resumes_it_and_evaluates_at_the_set_level(
        tmp_path):
    from verimath.trainer.checkpoint.files import load_checkpoint
    from verimath.trainer.config.files import load_config
    from verimath.trainer.run.loop import train
    from verimath.trainer.run.metrics import read_metrics
    from verimath.trainer.run.setup import open_state

    config = load_config("tiny", RUN)
    first, second = tmp_path / "a", tmp_path / "b"
    with open_state(config, first, echo=lambda _: None) as state:
        train(state)
        assert {p.meta["level"] for p in state.heldout} == {2}  # held out at data.level
    shutil.copytree(first, second)
    with open_state(config, second, resume=second / "checkpoints" / "step_00000001",
                    echo=lambda _: None) as state:
        train(state)
        assert {p.meta["level"] for p in state.heldout} == {2}

    def step(run_dir, number):
        return next(r for r in read_metrics(run_dir / "metrics.jsonl")
                    if r["step"] == number and "compute/generated_tokens" in r)

    original, resumed = step(first, 2), step(second, 2)
    assert original["curriculum/level/Arithmetic"] == 1.0  # moved down from data.level
    assert original["curriculum/moves/Arithmetic"] == 1.0
    shares = [v for k, v in original.items() if k.startswith("reward/path_")]
    assert len(shares) > 1 and sum(shares) == pytest.approx(1.0)
    for key in [k for k in original if k.startswith(("curriculum/", "reward/", "compute/"))]:
        assert resumed[key] == pytest.approx(original[key], rel=1e-6), key

    def env_state(run_dir):
        meta = load_checkpoint(run_dir / "checkpoints" / "step_00000002", restore_rng=False)
        return meta["extra_state"]["episodes"]["env"]["source"]

    assert "curriculum" in env_state(first)
    assert env_state(second) == env_state(first)
