"""score_batch: hand-worked batches, equality with a per-item loop, dedup, validation."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest
import strategies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verimath.rewards import (
    BatchScores,
    ScoringPool,
    correctness_reward,
    overlong_penalty,
    score_batch,
)
from verimath.rewards.batch import score_with_pool
from verimath.rewards.equality.conventions import DEFAULT
from verimath.rewards.equality.equivalence import fast_verdict
from verimath.rewards.equality.numeric import numeric_verdict


class RecordingPool:
    """Stands in for ScoringPool: records what reaches the pool, answers pred == gold."""

    def __init__(self):
        self.calls: list[list[tuple[str, str]]] = []

    def verify(self, pairs, *, timeout, conventions=None):
        self.calls.append(list(pairs))
        return [(p.replace(" ", "") == g.replace(" ", ""), False) for p, g in pairs]


def _children() -> set[int]:
    """Live (non-zombie) child processes of this process, from /proc."""
    me, kids = str(os.getpid()), set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            kids.add(int(stat.parent.name))
    return kids


def test_hand_worked_batch_with_lengths():
    responses = [
        "We add 2 and 2.\nAnswer: 4",  # fast path, correct
        "The sum is \\boxed{\\frac{1}{2}}.",  # fast path: 1/2 = 0.5
        "I think the answer is 5",  # no answer line: incorrect
        "So x^2+1 it is.\nAnswer: $x^2+1$",  # symbolic, correct
        "Answer: 7",  # wrong
    ]
    golds = ["4", "0.5", "5", "1+x^2", "-7"]
    got = score_batch(responses, golds, lengths=[100, 900, 950, 1000, 1001],
                      max_length=1000, cache_length=200)
    assert isinstance(got, BatchScores) and len(got) == 5
    assert got.correct.tolist() == [True, True, False, True, False]
    assert got.correctness.tolist() == [1.0, 1.0, -1.0, 1.0, -1.0]
    assert got.penalty.tolist() == [0.0, -0.5, -0.75, -1.0, -1.0]
    assert got.reward.tolist() == [1.0, 0.5, -1.75, 0.0, -2.0]
    assert got.timed_out.tolist() == [False] * 5
    assert got.extracted == ["4", "\\frac{1}{2}", None, "x^2+1", "7"]
    assert got.accuracy == 0.6
    with pytest.raises(ValueError):
        got.correct[0] = False  # results are read-only


def test_without_lengths_the_penalty_is_zero_and_reward_is_correctness():
    got = score_batch(["Answer: 1", "Answer: 2"], ["1", "1"])
    assert got.penalty.tolist() == [0.0, 0.0] and got.reward.tolist() == [1.0, -1.0]


def test_empty_batch():
    got = score_batch([], [])
    assert len(got) == 0 and got.reward.shape == (0,) and np.isnan(got.accuracy)


def test_only_unique_undecided_pairs_reach_the_pool():
    pool = RecordingPool()
    undecided = "\\frac{\\sin x}{|\\cos x|}"  # an absolute value: only math-verify decides it
    responses = (["Answer: x+1"] * 16 + [f"Answer: {undecided}"] * 8 + ["Answer: 3"] * 8
                 + ["none"] * 4)
    golds = ["x+1"] * 36
    got = score_with_pool(pool, responses, golds)
    # "x+1" == "x+1" and "3" vs "x+1" are settled by the exact path.
    sent = [pair for call in pool.calls for pair in call]
    assert len(sent) == len(set(sent)), "duplicates were sent to the pool"
    assert ("x+1", "x+1") not in sent
    assert all(fast_verdict(p, g) is None for p, g in sent), "decidable pairs were sent"
    assert all(numeric_verdict(p, g, DEFAULT) is None for p, g in sent), "numeric pairs were sent"
    assert sent == [(undecided, "x+1")]
    assert got.correct.tolist() == [True] * 16 + [False] * 8 + [False] * 8 + [False] * 4


def test_the_numeric_check_settles_expressions_in_the_caller():
    pool = RecordingPool()
    responses = ["Answer: \\frac{\\sin x}{\\cos x}", "Answer: \\sin 2x",
                 "Answer: \\sin^2 x + \\cos^2 x", "Answer: |x|"]
    got = score_with_pool(pool, responses, ["\\tan x", "2\\sin x \\cos x", "1", "x"])
    assert got.rules == ["numeric", "numeric", "numeric", "symbolic"]
    assert got.correct.tolist()[:3] == [True, True, True]
    assert [pair for call in pool.calls for pair in call] == [("|x|", "x")]


def test_integer_and_string_modes_never_use_the_pool():
    pool = RecordingPool()
    responses = ["Answer: 3.0", "Answer: 1,000", "Answer: x+1", "Answer: \\frac{1}{2}"]
    golds = ["3", "1000", "1+x", "0.5"]
    strict = score_with_pool(pool, responses, golds, mode="integer")
    assert strict.correct.tolist() == [False, True, False, False]
    loose = score_with_pool(pool, responses, golds, mode="string")
    assert loose.correct.tolist()[2] is False
    assert pool.calls == []


def test_timeouts_are_reported_and_count_as_incorrect():
    with ScoringPool(2, verdict=strategies.sleepy_verdict) as pool:
        got = score_batch(["Answer: 0:a", "Answer: 30:b", "Answer: 0:c"], ["a", "b", "x"],
                          timeout=0.3, pool=pool)
    assert got.correct.tolist() == [True, False, False]
    assert got.timed_out.tolist() == [False, True, False]
    assert got.reward.tolist() == [1.0, -1.0, -1.0]


def test_private_pool_leaves_no_process_behind():
    before = _children()
    got = score_batch(["Answer: x+x", "Answer: 2x"], ["2x", "2*x"], workers=2)
    assert got.correct.tolist() == [True, True]
    assert _children() - before == set()


def test_threads_share_the_default_pool():
    out: dict[int, list[bool]] = {}

    def run(k: int) -> None:
        scores = score_batch([f"Answer: {k}x", f"Answer: x{k}", "Answer: 0"], [f"{k}*x"] * 3)
        out[k] = scores.correct.tolist()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2, 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert out == {k: [True, True, False] for k in range(2, 6)}


_RESPONSES = st.sampled_from([
    "Answer: 4", "Answer: 4.0", "Answer: $\\frac{8}{2}$", "The answer is \\boxed{4}.",
    "Answer: 5", "Answer: 2+2", "Answer: x+1", "Answer: 1+x", "\\boxed{\\sqrt{16}}",
    "no final answer here", "Answer: 1,000", "Answer: 1000", "Answer: -4", "Answer: \\pi",
])
_GOLDS = st.sampled_from(["4", "1000", "x+1", "\\pi", "-4"])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_RESPONSES, _GOLDS, st.integers(0, 120)), max_size=24))
def test_equals_a_per_item_loop(items):
    responses = [r for r, _, _ in items]
    golds = [g for _, g, _ in items]
    lengths = [n for _, _, n in items]
    got = score_batch(responses, golds, lengths=lengths, max_length=100, cache_length=40)
    want_correctness = [correctness_reward(r, g) for r, g in zip(responses, golds)]
    want_penalty = [overlong_penalty(n, max_length=100, cache_length=40) for n in lengths]
    assert got.correctness.tolist() == want_correctness
    assert got.penalty.tolist() == want_penalty
    assert got.reward.tolist() == [c + p for c, p in zip(want_correctness, want_penalty)]


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        ((["a", "b"], ["a"]), {}, "2 responses but 1 golds"),
        (("Answer: 1", "1"), {}, "not a single string"),
        ((["a"], ["1"]), {"lengths": [3]}, "without max_length"),
        ((["a"], ["1"]), {"max_length": 10, "cache_length": 2}, "without lengths"),
        ((["a"], ["1"]), {"lengths": [3, 4], "max_length": 10, "cache_length": 2}, "2 lengths"),
        ((["a"], ["1"]), {"lengths": [-3], "max_length": 10, "cache_length": 2}, r"lengths\[0\]"),
        ((["a"], ["1"]), {"timeout": 0}, "timeout"),
        ((["a"], ["1"]), {"mode": "fuzzy"}, "unknown equivalence mode"),
        ((["a"], ["1"]), {"style": "xml"}, "style"),
        ((["a"], ["1"]), {"workers": 0}, "workers"),
    ],
)
def test_bad_input_raises_a_clear_error(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        score_batch(*args, **kwargs)


def test_numeric_golds_are_accepted():
    assert score_batch(["Answer: 42", "Answer: 0.5"], [42, 0.5]).correct.tolist() == [True, True]
