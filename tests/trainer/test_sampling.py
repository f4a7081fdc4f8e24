"""DAPO dynamic sampling: the pure driver `collect_informative`."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from verimath.trainer.sampling import SamplingStats, collect_informative


class ScriptedRounds:
    """generate_round that replays fixed correctness matrices; payload = (round, row)."""

    def __init__(self, rounds):
        self.rounds = [np.asarray(r, dtype=bool) for r in rounds]
        self.calls: list[int] = []

    def __call__(self, round_index):
        self.calls.append(round_index)
        correct = self.rounds[round_index % len(self.rounds)]
        return [(round_index, i) for i in range(correct.shape[0])], correct


# --- hand-worked examples -------------------------------------------------------------


def test_stops_as_soon_as_the_target_is_met_and_trims_extras():
    # round 0: groups 0 and 3 informative; round 1: groups 0, 1 informative -> 4 >= 3
    source = ScriptedRounds(
        [[[1, 0], [1, 1], [0, 0], [0, 1]], [[0, 1], [1, 0], [1, 1], [0, 0]], [[1, 0]] * 4]
    )
    kept, stats = collect_informative(source, target_groups=3, max_rounds=5)
    assert kept == [(0, 0), (0, 3), (1, 0)]
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
        note="",
    )


def test_cap_trains_on_what_it_has_and_says_so():
    source = ScriptedRounds([[[1, 1, 1], [0, 1, 0], [0, 0, 0]]])
    kept, stats = collect_informative(source, target_groups=4, max_rounds=3)
    assert kept == [(0, 1), (1, 1), (2, 1)]
    assert stats.hit_cap and stats.rounds == 3 and stats.kept_groups == 3
    assert "max_rounds=3" in stats.note and "3/4" in stats.note


def test_no_informative_group_at_all_returns_empty_without_raising():
    kept, stats = collect_informative(
        ScriptedRounds([[[1, 1], [1, 1]]]), target_groups=2, max_rounds=2
    )
    assert kept == [] and stats.hit_cap and stats.all_correct_groups == 4


def test_without_filter_keeps_one_whole_round():
    source = ScriptedRounds([[[1, 1], [0, 0], [0, 1]]])
    kept, stats = collect_informative(source, target_groups=2, max_rounds=4, filter=False)
    assert kept == [(0, 0), (0, 1), (0, 2)] and source.calls == [0]
    assert (stats.rounds, stats.kept_groups, stats.hit_cap, stats.note) == (1, 3, False, "")


def test_empty_round_means_exhausted_source():
    source = ScriptedRounds([[[1, 0]], np.zeros((0, 2), bool)])
    kept, stats = collect_informative(source, target_groups=5, max_rounds=10)
    assert kept == [(0, 0)] and stats.rounds == 2 and not stats.hit_cap
    assert "ran dry" in stats.note


def test_stats_as_metrics_are_namespaced_numbers():
    _, stats = collect_informative(ScriptedRounds([[[1, 0]]]), target_groups=1, max_rounds=1)
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
        collect_informative(lambda i: result, target_groups=1, max_rounds=1)


@pytest.mark.parametrize("kw", [{"target_groups": 0}, {"max_rounds": 0}, {"max_rounds": 1.5}])
def test_bad_limits(kw):
    args = {"target_groups": 1, "max_rounds": 1, **kw}
    with pytest.raises(ValueError, match=next(iter(kw))):
        collect_informative(lambda i: ([], np.zeros((0, 1), bool)), **args)


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
    kept, stats = collect_informative(source, target_groups=target, max_rounds=max_rounds)
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
