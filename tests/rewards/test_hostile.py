"""Model output is hostile input: nothing is executed, nothing hangs, nothing leaks.

Code payloads would create a marker file if any part of the scoring stack evaluated them
(in the caller or in a worker process). Resource payloads (exponent towers, factorials,
megabyte strings, deep nesting, NUL bytes, lone surrogates) must each come back within
twice the timeout and count as incorrect.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verimath.rewards import (
    ScoringPool,
    compute_score,
    correctness_reward,
    extract_answer,
    is_equivalent,
    make_trl_reward,
    score_batch,
)
from verimath.rewards.equality.equivalence import symbolic_verdict
from verimath.rewards.pool.scoring_pool import default_pool

CODE_PAYLOADS = [
    "__import__('os').system('touch {p}')",
    "__import__(\"os\").system(\"touch {p}\")",
    "eval(\"__import__('os').system('touch {p}')\")",
    "exec(\"open('{p}', 'w').write('x')\")",
    "(lambda: __import__('os').system('touch {p}'))()",
    "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'Popen'][0]"
    "(['touch', '{p}'])",
    "os.system('touch {p}')",
    "import os; os.system('touch {p}')",
    "open('{p}', 'w')",
    "sympify(\"__import__('os').system('touch {p}')\")",
    "parse_expr(\"__import__('os').system('touch {p}')\")",
    "Symbol('x').__class__.__init__.__globals__['__builtins__']['exec'](\"open('{p}','w')\")",
    "\\text{__import__('os').system('touch {p}')}",
    "x + __import__('os').system('touch {p}')",
    "getattr(__import__('os'), 'system')('touch {p}')",
    "compile(\"open('{p}','w')\", 'a', 'exec')",
]

TIMEOUT = 0.5
UNGUARDED_BOMB = "2^{3\\cdot 10^{10}}"  # not an integer-literal power: only the timeout stops it
RESOURCE_PAYLOADS = {
    "tower 2^{10^{10}}": "2^{10^{10}}",
    "tower 9^{9^{9^{9}}}": "9^{9^{9^{9}}}",
    "tower 10^{10^{10^{10}}}": "10^{10^{10^{10}}}",
    "factorial (10^{10})!": "(10^{10})!",
    "factorial 100000000!": "100000000!",
    "nested factorial": "((10!)!)!",
    "1 MB of digits": "1" * 1_000_000,
    "1 MB expression": "x+" * 500_000 + "x",
    "10,000 nested braces": "{" * 10_000 + "1" + "}" * 10_000,
    "10,000 nested fractions": "\\frac{1}{" * 10_000 + "2" + "}" * 10_000,
    "10,000 nested parentheses": "(" * 10_000 + "1" + ")" * 10_000,
    "NUL bytes": "1\x002\x00",
    "lone surrogate": "\ud800",
    "surrogate in number": "4\udcff2",
    "unguarded power": UNGUARDED_BOMB,
    "huge matrix": "\\begin{pmatrix}" + "&".join(["x"] * 5000) + "\\end{pmatrix}",
}


@pytest.fixture(scope="module")
def warm_pool():
    """The shared pool with its zygote started, so that timings measure verification only."""
    pool = default_pool()
    pool.verify([("x+1", "1+x")], timeout=30)
    return pool


@pytest.mark.parametrize("template", CODE_PAYLOADS)
def test_code_in_answers_is_never_executed(tmp_path, template, warm_pool):
    marker = tmp_path / "pwned"
    payload = template.replace("{p}", str(marker))
    responses = [f"Answer: {payload}", f"The answer is \\boxed{{{payload}}}", payload]
    golds = ["0", payload, "1"]
    scores = score_batch(responses, golds, timeout=TIMEOUT)
    assert not scores.correct[[0, 2]].any()
    assert not symbolic_verdict(payload, "0")
    assert not symbolic_verdict("0", payload)
    assert not is_equivalent(payload, "0", timeout=TIMEOUT)
    assert correctness_reward(f"Answer: {payload}", "1", timeout=TIMEOUT) == -1.0
    assert compute_score("x", f"\\boxed{{{payload}}}", "1")["acc"] is False
    assert make_trl_reward(timeout=TIMEOUT)([f"Answer: {payload}"], answer=["2"]) == [-1.0]
    time.sleep(0.05)  # a spawned shell would have had time to touch the file
    assert not marker.exists(), f"payload was executed: {payload}"


@pytest.mark.parametrize("name", list(RESOURCE_PAYLOADS))
def test_resource_bombs_return_within_twice_the_timeout_as_incorrect(name, warm_pool):
    payload = RESOURCE_PAYLOADS[name]
    for response, gold in ((f"Answer: {payload}", "1"), (f"\\boxed{{{payload}}}", "1"),
                           ("Answer: 1", payload)):
        start = time.monotonic()
        got = correctness_reward(response, gold, timeout=TIMEOUT)
        elapsed = time.monotonic() - start
        assert got == -1.0, f"{name}: {response[:60]!r} vs {gold[:60]!r}"
        assert elapsed < 2 * TIMEOUT, f"{name} took {elapsed:.2f} s with a {TIMEOUT} s timeout"


def test_a_batch_of_every_bomb_is_all_incorrect_and_bounded(warm_pool):
    payloads = list(RESOURCE_PAYLOADS.values())
    responses = [f"Answer: {p}" for p in payloads] + ["Answer: 4"]
    start = time.monotonic()
    scores = score_batch(responses, ["1"] * len(payloads) + ["4"], timeout=TIMEOUT)
    elapsed = time.monotonic() - start
    assert scores.correct.tolist() == [False] * len(payloads) + [True]
    # Every bomb is bounded by its own deadline; the pool runs them side by side.
    assert elapsed < 2 * TIMEOUT * len(payloads) / warm_pool.workers + 2.0


def test_extraction_of_hostile_text_is_fast_and_total():
    for payload in RESOURCE_PAYLOADS.values():
        start = time.monotonic()
        for text in (payload, f"Answer: {payload}", f"\\boxed{{{payload}}}", "\\boxed{" * 10_000):
            extract_answer(text)
        assert time.monotonic() - start < 1.0


def test_pool_survives_200_real_timeouts_then_closes_cleanly():
    import os

    with ScoringPool(4) as pool:
        # A power the size guard does not recognise (so sympy really hangs on it); distinct
        # golds, so nothing is deduplicated or cached.
        pairs = [(UNGUARDED_BOMB, str(i)) for i in range(200)]
        start = time.monotonic()
        got = pool.verify(pairs, timeout=0.02)
        elapsed = time.monotonic() - start
        assert all(verdict is False for verdict, _ in got)
        assert sum(timed_out for _, timed_out in got) >= 190, "the power should hang sympy"
        assert elapsed < 30, f"200 timeouts took {elapsed:.1f} s: respawning is too slow"
        assert pool.verify([("x+1", "1+x"), ("\\frac{1}{2}", "0.5"), ("2", "3")], timeout=30) == [
            (True, False), (True, False), (False, False)
        ]
        pids = pool.worker_pids()
    deadline = time.monotonic() + 5
    while any(os.path.exists(f"/proc/{p}") for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(os.path.exists(f"/proc/{p}") for p in pids), "processes left after close()"


hostile_text = st.lists(
    st.one_of(
        st.text(st.characters(codec=None), max_size=8),  # any code point, surrogates included
        st.sampled_from(["\x00", "\ud800", "{", "}", "\\boxed{", "Answer:", "^{9^{9}}", "\\frac"]),
    ),
    max_size=10,
).map("".join)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(hostile_text, hostile_text), min_size=1, max_size=6))
def test_arbitrary_text_never_raises(warm_pool, items):
    responses = [f"Answer: {a}" for a, _ in items]
    golds = [b for _, b in items]
    scores = score_batch(responses, golds, timeout=TIMEOUT)
    assert scores.reward.shape == (len(items),)
    assert set(scores.correctness.tolist()) <= {-1.0, 1.0}
