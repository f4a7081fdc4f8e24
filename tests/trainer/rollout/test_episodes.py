"""Episode groups from the envs: held-out exclusion, one round, and the resumable stream."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.envs import generate
from verimath.trainer.core.protocols import SamplingParams
from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model
from verimath.trainer.rollout.episodes import (
    EpisodeSource,
    ExcludingGenerator,
    build_prompt_ids,
    heldout_problems,
)
from verimath.trainer.rollout.hf_engine import HFRolloutEngine

TOKENIZER = make_char_tokenizer()


def test_heldout_problems_are_distinct_and_deterministic():
    a = heldout_problems(family="Arithmetic", level=2, seed=5, count=30)
    b = heldout_problems(family="Arithmetic", level=2, seed=5, count=30)
    assert [p.prompt for p in a] == [p.prompt for p in b]
    assert len({p.prompt for p in a}) == 30
    no_mult = heldout_problems(family="Arithmetic", level=2, seed=5, count=30,
                               skip_containing="*")
    assert all("*" not in p.prompt for p in no_mult)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10**6), start=st.integers(0, 10**6))
def test_excluding_generator_never_yields_a_heldout_prompt(seed, start):
    held = {p.prompt for p in heldout_problems(family="Arithmetic", level=1, seed=99, count=60)}
    generator = ExcludingGenerator("Arithmetic", held)
    for index in range(start, start + 30):
        problem = generate(generator, seed, index, 1)
        assert problem.prompt not in held
        assert problem == generate(generator, seed, index, 1)  # still deterministic


def test_excluding_everything_is_a_clear_error():
    every = {generate("Arithmetic", 0, i, 1).prompt for i in range(3000)}
    with pytest.raises(ValueError, match="too small"):
        generate(ExcludingGenerator("Arithmetic", every, max_tries=50), 1, 0, 1)


def test_prompt_ids_with_and_without_chat_template():
    plain = build_prompt_ids(TOKENIZER, ["1+1"], use_chat_template=True)  # none: plain text
    assert plain == [TOKENIZER("1+1")["input_ids"]]
    chat = make_char_tokenizer(chat_template=True)
    ids = build_prompt_ids(chat, ["1+1"], use_chat_template=True)[0]
    assert chat.decode(ids) == "Q:1+1\nA:"


def _source(seed=0):
    model = make_tiny_model(TOKENIZER, hidden_size=16, num_layers=1, num_heads=2)
    engine = HFRolloutEngine(model, TOKENIZER)
    return EpisodeSource(
        tokenizer=TOKENIZER, engine=engine, params=SamplingParams(max_new_tokens=6),
        num_problems=3, group_size=4, template="{prompt}\n", use_chat_template=False,
        family="Arithmetic", level=1, seed=seed, train_file=None, excluded=set(),
        reward_kwargs={"style": "dapo", "mode": "integer", "max_length": 6, "cache_length": 2})


def test_one_round_gives_groups_and_accounting():
    with _source() as source:
        groups, correct = source.next_round(0)
        stats = source.pop_stats()
    assert correct.shape == (3, 4) and correct.dtype == bool
    assert len(groups) == 3
    for g in groups:
        assert len(g.response_ids) == 4 and g.rewards.shape == (4,)
        assert np.all(g.rewards <= np.where(g.correct, 1.0, -1.0))  # penalty <= 0
        assert np.all(g.truncated == [len(r) == 6 and r[-1] != 1 for r in g.response_ids])
    assert stats.responses == 12
    assert stats.generated_tokens == sum(len(r) for g in groups for r in g.response_ids)
    assert source.env is None  # closed by the context manager


def test_stream_state_round_trip():
    a = _source()
    a.next_round(0)
    state = a.state_dict()
    expected = [g.problem_id for g in a.next_round(1)[0]]
    b = _source()
    b.load_state_dict(state)
    assert [g.problem_id for g in b.next_round(0)[0]] == expected
    a.close()
    b.close()
    b.close()  # idempotent


def _file_source(path, *, max_new_tokens: int) -> EpisodeSource:
    """Rounds of 3 problems x 2 responses from a problems file, shuffled with seed 4."""
    model = make_tiny_model(TOKENIZER, hidden_size=16, num_layers=1, num_heads=2)
    return EpisodeSource(
        tokenizer=TOKENIZER, engine=HFRolloutEngine(model, TOKENIZER),
        params=SamplingParams(max_new_tokens=max_new_tokens), num_problems=3, group_size=2,
        template="{prompt}\n", use_chat_template=False, family="Arithmetic", level=1, seed=4,
        train_file=str(path), excluded=set(), reward_kwargs={"mode": "integer"})


def test_problems_file_position_round_trip(tmp_path):
    from verimath.envs import write_problems

    path = tmp_path / "p.jsonl"
    write_problems([generate("Arithmetic", 0, i, 2) for i in range(10)], path)

    def source():
        return _file_source(path, max_new_tokens=3)

    with source() as a, source() as b:
        a.next_round(0)
        b.load_state_dict(a.state_dict())
        assert [g.problem_id for g in b.next_round(0)[0]] == \
            [g.problem_id for g in a.next_round(1)[0]]


def test_resume_across_an_epoch_boundary_of_a_shuffled_file_poses_the_same_problems(tmp_path):
    """The env's RNG is saved with its cursor: the epochs after a resume are shuffled as in
    the uninterrupted run (5 problems, 3 per round: round 1 crosses into epoch 2)."""
    import json

    from verimath.envs import write_problems

    path = tmp_path / "p.jsonl"
    write_problems([generate("Arithmetic", 0, i, 2) for i in range(5)], path)

    def source():
        return _file_source(path, max_new_tokens=2)

    def ids(src, index):
        return [g.problem_id for g in src.next_round(index)[0]]

    with source() as a, source() as b:
        ids(a, 0)
        ids(a, 1)  # into the second epoch: its order is drawn from the env's RNG
        saved = json.loads(json.dumps(a.state_dict()))  # as a checkpoint stores it
        b.load_state_dict(saved)
        later_a = [ids(a, i) for i in range(2, 6)]  # epochs 2-4
        later_b = [ids(b, i) for i in range(4)]
    assert later_b == later_a
    assert len({tuple(sorted(x)) for x in later_a}) > 1  # the rounds do differ
