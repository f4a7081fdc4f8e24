"""DAPO dynamic sampling: the pure driver `collect_informative`, adaptive round sizes and the
surplus carried to the next step."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from verimath.trainer.algo.dynamic_sampling import (
    SamplingStats,
    collect_informative,
    fresh_groups,
    next_round_prompts,
)

FULL = 100  # round_prompts larger than any scripted round: rounds are replayed whole


class ScriptedRounds:
    """generate_round that replays fixed correctness matrices; payload = (round, row)."""

    def __init__(self, rounds):
        self.rounds = [np.asarray(r, dtype=bool) for r in rounds]
        self.calls: list[int] = []

    def __call__(self, round_index, num_prompts=FULL):
        self.calls.append(round_index)
        correct = self.rounds[round_index % len(self.rounds)][:num_prompts]
        return [(round_index, i) for i in range(correct.shape[0])], correct


# --- hand-worked examples -------------------------------------------------------------


def test_stops_as_soon_as_the_target_is_met_and_trims_extras():
    # round 0: groups 0 and 3 informative; round 1: groups 0, 1 informative -> 4 >= 3
    source = ScriptedRounds(
        [[[1, 0], [1, 1], [0, 0], [0, 1]], [[0, 1], [1, 0], [1, 1], [0, 0]], [[1, 0]] * 4]
    )
    kept, surplus, stats = collect_informative(source, target_groups=3, max_rounds=5,
                                               round_prompts=FULL)
    assert kept == [(0, 0), (0, 3), (1, 0)] and surplus == [(1, 1)]
    assert source.calls == [0, 1]
    assert stats == SamplingStats(
        rounds=2,
        generated_groups=8,
        kept_groups=3,
        target_groups=3,
        informative_groups=4,
        all_correct_groups=2,
        all_wrong_groups=2,
        hit_cap=False,
        surplus_groups=1,
        round_sizes="4+4",
        note="",
    )


def test_cap_trains_on_what_it_has_and_says_so():
    source = ScriptedRounds([[[1, 1, 1], [0, 1, 0], [0, 0, 0]]])
    kept, _, stats = collect_informative(source, target_groups=4, max_rounds=3,
                                         round_prompts=FULL)
    assert kept == [(0, 1), (1, 1), (2, 1)]
    assert stats.hit_cap and stats.rounds == 3 and stats.kept_groups == 3
    assert "max_rounds=3" in stats.note and "3/4" in stats.note


def test_no_informative_group_at_all_returns_empty_without_raising():
    kept, _, stats = collect_informative(
        ScriptedRounds([[[1, 1], [1, 1]]]), target_groups=2, max_rounds=2, round_prompts=FULL
    )
    assert kept == [] and stats.hit_cap and stats.all_correct_groups == 4


def test_without_filter_keeps_one_whole_round():
    source = ScriptedRounds([[[1, 1], [0, 0], [0, 1]]])
    kept, surplus, stats = collect_informative(source, target_groups=2, max_rounds=4,
                                               round_prompts=FULL, filter=False)
    assert surplus == []
    assert kept == [(0, 0), (0, 1), (0, 2)] and source.calls == [0]
    assert (stats.rounds, stats.kept_groups, stats.hit_cap, stats.note) == (1, 3, False, "")


def test_empty_round_means_exhausted_source():
    source = ScriptedRounds([[[1, 0]], np.zeros((0, 2), bool)])
    kept, _, stats = collect_informative(source, target_groups=5, max_rounds=10,
                                         round_prompts=FULL)
    assert kept == [(0, 0)] and stats.rounds == 2 and not stats.hit_cap
    assert "ran dry" in stats.note


def test_stats_as_metrics_are_namespaced_numbers():
    _, _, stats = collect_informative(ScriptedRounds([[[1, 0]]]), target_groups=1, max_rounds=1,
                                      round_prompts=FULL)
    metrics = stats.as_metrics()
    assert metrics["sampling/kept_groups"] == 1.0 and metrics["sampling/hit_cap"] == 0.0
    assert "sampling/note" not in metrics
    assert all(isinstance(v, float) for v in metrics.values())
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats.rounds = 3


# --- validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "result, match",
    [
        (([1, 2], np.ones((3, 2), bool)), "2 payloads for 3 groups"),
        (([1], np.ones(2, bool)), r"\(P, G\)"),
        ("nonsense", r"must return \(payloads, correct\)"),
    ],
)
def test_bad_rounds_are_explained(result, match):
    with pytest.raises(ValueError, match=match):
        collect_informative(lambda i, n: result, target_groups=1, max_rounds=1, round_prompts=4)


@pytest.mark.parametrize("kw", [{"target_groups": 0}, {"max_rounds": 0}, {"max_rounds": 1.5},
                                {"round_prompts": 0}])
def test_bad_limits(kw):
    args = {"target_groups": 1, "max_rounds": 1, "round_prompts": 4, **kw}
    with pytest.raises(ValueError, match=next(iter(kw))):
        collect_informative(lambda i, n: ([], np.zeros((0, 1), bool)), **args)


# --- properties -----------------------------------------------------------------------

round_matrices = st.lists(
    st.tuples(st.integers(0, 5), st.integers(1, 4)).flatmap(lambda pg: hnp.arrays(np.bool_, pg)),
    min_size=1,
    max_size=6,
)


@settings(deadline=None)
@given(round_matrices, st.integers(1, 8), st.integers(1, 6))
def test_keeps_only_informative_groups_and_honours_the_cap(rounds, target, max_rounds):
    rounds = [r if r.shape[0] else np.ones((1, r.shape[1]), bool) for r in rounds]
    source = ScriptedRounds(rounds)
    kept, surplus, stats = collect_informative(source, target_groups=target,
                                               max_rounds=max_rounds, round_prompts=FULL)
    # only informative groups, in generation order, no duplicates
    for r, i in kept:
        row = source.rounds[r % len(source.rounds)][i]
        assert 0 < row.sum() < row.size
    assert kept == sorted(set(kept))
    assert len(kept) <= target and stats.kept_groups == len(kept)
    assert stats.rounds == len(source.calls) <= max_rounds
    # all informative groups of the rounds run were kept, up to the target
    seen = [
        (r, i)
        for r in source.calls
        for i, row in enumerate(source.rounds[r % len(source.rounds)])
        if 0 < row.sum() < row.size
    ]
    assert kept == seen[:target] and stats.informative_groups == len(seen)
    assert surplus == seen[target:]  # nothing informative is thrown away
    # it stopped as early as possible, and hit_cap says exactly whether it came up short
    before_last = sum(1 for r, _ in seen if r < stats.rounds - 1)
    assert before_last < target
    assert stats.hit_cap == (len(kept) < target)
    assert stats.hit_cap == (stats.rounds == max_rounds and len(seen) < target)
    assert bool(stats.note) == stats.hit_cap
    sizes = [source.rounds[r % len(source.rounds)].shape[0] for r in source.calls]
    assert stats.generated_groups == sum(sizes)
    assert stats.informative_groups + stats.all_correct_groups + stats.all_wrong_groups == sum(
        sizes
    )


# --- adaptive rounds and the surplus carried across steps ------------------------------


def test_next_round_prompts_by_hand():
    # 4 missing, 10 informative of 30 generated: rate (10 + 1) / (30 + 2) = 0.34375
    # -> ceil(1.25 * 4 / 0.34375) = ceil(14.55) = 15
    assert next_round_prompts(4, 10, 30, full=32, margin=1.25, floor=2) == 15
    assert next_round_prompts(1, 30, 30, full=32, margin=1.0, floor=8) == 8  # the floor
    assert next_round_prompts(40, 0, 30, full=32) == 32  # never more than a full round
    assert next_round_prompts(0, 3, 30, full=32) == 0


@given(st.integers(1, 64), st.integers(0, 200), st.integers(0, 200), st.integers(1, 64),
       st.integers(1, 16), st.floats(1.0, 3.0))
def test_next_round_prompts_bounds_and_monotonicity(missing, informative, extra, full, floor,
                                                    margin):
    generated = informative + extra
    floor = min(floor, full)
    n = next_round_prompts(missing, informative, generated, full=full, margin=margin,
                           floor=floor)
    assert floor <= n <= full
    assert next_round_prompts(missing + 1, informative, generated, full=full, margin=margin,
                              floor=floor) >= n  # more missing, never fewer prompts
    assert next_round_prompts(missing, informative + 1, generated + 1, full=full,
                              margin=margin, floor=floor) <= n  # a higher rate, never more


class RandomRounds:
    """Groups with unique ids; each is informative with probability ``rate``."""

    def __init__(self, rng, rate, group_size=4):
        self.rng, self.rate, self.g = rng, rate, group_size
        self.next_id, self.sizes = 0, []

    def __call__(self, round_index, num_prompts):
        self.sizes.append(num_prompts)
        correct = np.zeros((num_prompts, self.g), dtype=bool)
        informative = self.rng.random(num_prompts) < self.rate
        correct[informative, 0] = True  # one right of G: informative
        correct[~informative & (self.rng.random(num_prompts) < 0.5)] = True  # all right
        ids = list(range(self.next_id, self.next_id + num_prompts))
        self.next_id += num_prompts
        return [{"id": i, "informative": bool(u)} for i, u in zip(ids, informative)], correct


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), rate=st.floats(0.0, 1.0), target=st.integers(1, 12),
       full=st.integers(1, 16), max_rounds=st.integers(1, 4), max_age=st.integers(0, 3),
       adaptive=st.booleans(), floor=st.integers(1, 8))
def test_steps_with_a_surplus_buffer_keep_every_promise(seed, rate, target, full, max_rounds,
                                                        max_age, adaptive, floor):
    """Over 6 steps: the kept count is exactly the target unless the cap is hit; no group is
    trained twice; no group is older than max_age; zero-variance groups never enter;
    adaptive rounds stay within [floor, full] after the first."""
    source = RandomRounds(np.random.default_rng(seed), rate)
    surplus, born, trained = [], {}, set()
    floor = min(floor, full)
    for step in range(6):
        carried = fresh_groups(surplus, [step - born[g["id"]] for g in surplus], max_age)
        source.sizes.clear()
        kept, surplus, stats = collect_informative(
            source, target_groups=target, max_rounds=max_rounds, round_prompts=full,
            adaptive=adaptive, min_round_prompts=floor, carried=carried)
        for g in kept + surplus:
            born.setdefault(g["id"], step)
        assert len(kept) == target or stats.hit_cap
        assert stats.hit_cap == (len(kept) < target)
        assert all(g["informative"] for g in kept + surplus)
        ids = [g["id"] for g in kept]
        assert len(set(ids)) == len(ids) and not trained & set(ids)
        trained |= set(ids)
        assert all(step - born[i] <= max_age for i in ids)
        assert not {g["id"] for g in surplus} & set(ids)
        assert stats.carried_groups == sum(1 for g in kept if born[g["id"]] < step)
        if source.sizes:
            assert source.sizes[0] == full
            assert all(floor <= n <= full for n in source.sizes[1:])
            assert stats.round_sizes == "+".join(map(str, source.sizes))


def test_adaptive_rounds_generate_only_what_is_missing():
    # every round: 16 groups, the even ones informative. Target 10: round 0 gives 8, so 2
    # are missing at a rate of (8 + 1) / (16 + 2) = 0.5 -> ceil(1.25 * 2 / 0.5) = 5 prompts
    # (3 informative: 1 surplus); full rounds would generate 16 (8 surplus).
    half = [[1, 0] if i % 2 == 0 else [1, 1] for i in range(16)]
    runs = {}
    for adaptive in (True, False):
        kept, surplus, stats = collect_informative(
            ScriptedRounds([half]), target_groups=10, max_rounds=4, round_prompts=16,
            adaptive=adaptive, min_round_prompts=2)
        runs[adaptive] = (len(kept), len(surplus), stats.round_sizes)
        metrics = stats.as_metrics()  # the sizes are logged, one key per round
        assert [metrics[f"sampling/round{i}_prompts"] for i in (1, 2)] == \
            [16.0, 5.0 if adaptive else 16.0]
        assert "sampling/round3_prompts" not in metrics
    assert runs[True] == (10, 1, "16+5")
    assert runs[False] == (10, 6, "16+16")
