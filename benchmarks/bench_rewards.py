"""Benchmark: batch scoring vs a per-sample math-verify loop, and the overlong penalty kernel.

    python benchmarks/bench_rewards.py            # 512 problems x 16 samples = 8,192 responses
    python benchmarks/bench_rewards.py --quick    # 64 problems x 16 samples
    python benchmarks/bench_rewards.py --cas-percent 0    # no rational functions
    python benchmarks/bench_rewards.py --radical          # 5% that only math-verify decides
    python benchmarks/bench_rewards.py --first-call 40 --worst-case   # latency (see Part 3)
    python benchmarks/bench_rewards.py --quick --load "busy: yes pinned to CPU 0" --out r.json

Part 1 scores model-like responses (reasoning prose, then an ``Answer: $...$`` line or a
``\\boxed{}``; correct answers, equivalent spellings, wrong answers, missing answers and a
few pathological ones) twice in the same run: with ``score_batch`` and with the loop a user
would write, ``math_verify.parse`` + ``math_verify.verify`` per sample (math-verify's own
signal timeouts, same number of seconds). It prints both times, the speed ratio, and the
verdict agreement over items where the loop did not time out, with examples of each kind of
disagreement, and a breakdown of score_batch's time (extraction, fast path, pool). Timed
"without pathological" too: the loop spends ``timeout`` seconds on each of the 4 exponent
towers and factorials, which the size guard settles at once, so "all" flatters score_batch.
The ratio depends mostly on the share of pairs only a CAS can decide (``--cas-percent``
with ``--radical``: rational functions with a radical coefficient): score_batch settles
everything else in the caller, exactly (plain rational functions too).

Part 2 times the overlong penalty on 1M lengths: numba vs numpy vs a Python loop.

Part 3 (``--first-call N``, ``--worst-case``) measures latency on the labelled tables of
``bench_accuracy.py``: the first verdict of a fresh process (``python -c``: import
``verimath.rewards``, one ``is_equivalent``), for N pairs drawn with a fixed seed, half among
those the calling process decides (fast path and numeric check) and half among those that
need the scoring pool; and, with a warm pool, the time of every pool-bound pair of the tables
one at a time (cache off), the slowest of which is the measured worst symbolic case (the
bound is the ``timeout``, after which the pool kills the worker).

Targets: score_batch >= 20x the loop with the same verdicts; numba >= numpy speed; the first
verdict of a process within 0.5 s when the calling process decides it. The flexible
extraction style (for evaluation) is timed too, on the same responses. ``--load`` labels the
run (say what else ran: "idle", "busy: yes > /dev/null pinned to CPU 0"); ``--out`` writes
the figures as JSON with versions and load averages.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

FILLER = [
    "Let me set up the problem carefully.", "First, I list what is given.",
    "We can simplify the expression step by step.", "Substituting the values gives",
    "Checking the arithmetic once more,", "This matches the constraint in the problem.",
    "Note that the terms telescope.", "By symmetry, the two cases are the same.",
]


def kind_weights(cas_percent: float) -> np.ndarray:
    """Answer kinds, weighted roughly like MATH's test set: mostly integers, then fractions,
    decimals, radicals, multiples of pi, polynomials, intervals, tuples, and
    ``cas_percent``% rational functions (taken from the integers). The exact path settles
    rational functions by cross-multiplication; with a radical coefficient (``--radical``)
    only math-verify can, in the pool."""
    if not 0 <= cas_percent <= 45:
        raise ValueError(f"--cas-percent must be in [0, 45], got {cas_percent}")
    return np.array([45 - cas_percent, 10, 15, 5, 7, 5, 5, 4, 4, cas_percent], dtype=float) / 100


def make_problem(
    rng: np.random.Generator, weights: np.ndarray, radical: bool = False
) -> tuple[str, list[str], list[str]]:
    """A gold answer, equivalent spellings of it (first = canonical), and wrong answers."""
    kind = rng.choice(len(weights), p=weights)
    a, b = int(rng.integers(2, 60)), int(rng.integers(2, 13))
    if kind == 0:
        return (str(a * 37), [str(a * 37), f"{a * 37}.0", f"{a * 37:,}"],
                [str(a * 37 + 1), str(-a * 37)])
    if kind == 1:
        n = a * 100_003
        return str(n), [str(n), f"{n:,}", f"{n}.00"], [str(n + 10), str(n // 10)]
    if kind == 2:
        b = a + b
        return (f"\\frac{{{a}}}{{{b}}}",
                [f"\\frac{{{a}}}{{{b}}}", f"\\dfrac{{{a}}}{{{b}}}", f"{a}/{b}"],
                [f"\\frac{{{b}}}{{{a}}}", f"\\frac{{{a + 1}}}{{{b}}}"])
    if kind == 3:
        return f"{a}.25", [f"{a}.25", f"{a}.250", f"\\frac{{{4 * a + 1}}}{{4}}"], [f"{a}.5", f"{a}"]
    if kind == 4:
        return (f"{b}\\sqrt{{3}}", [f"{b}\\sqrt{{3}}", f"\\sqrt{{{3 * b * b}}}", f"{b} \\sqrt 3"],
                [f"{b}\\sqrt{{2}}", f"{b + 1}\\sqrt{{3}}"])
    if kind == 5:
        return (f"{b}\\pi", [f"{b}\\pi", f"\\pi \\cdot {b}", f"{b} \\pi"],
                [f"{b + 1}\\pi", f"{2 * b}"])
    if kind == 6:
        return (f"x^2+{2 * b}x+{b * b}",
                [f"x^2+{2 * b}x+{b * b}", f"(x+{b})^2", f"{b * b}+{2 * b}x+x^2"],
                [f"(x-{b})^2", f"x^2+{b * b}"])
    if kind == 7:
        return (f"(-{b}, {a}]", [f"(-{b}, {a}]", f"\\left(-{b},{a}\\right]", f"(-{b},{a}]"],
                [f"[-{b}, {a}]", f"(-{b}, {a})"])
    if kind == 8:
        return (f"({b}, {a})", [f"({b}, {a})", f"\\left( {b}, {a} \\right)", f"({b},{a})"],
                [f"({a}, {b + a})"])
    r2 = "\\sqrt{2}" if radical else ""  # a radical coefficient: only a CAS decides those
    return (f"\\frac{{{a}{r2}}}{{x+{b}}}",
            [f"\\frac{{{a}{r2}}}{{x+{b}}}", f"\\frac{{{a}{r2}}}{{{b}+x}}",
             f"\\frac{{{2 * a}{r2}}}{{2x+{2 * b}}}"],
            [f"\\frac{{{a}{r2}}}{{x-{b}}}", f"\\frac{{{a + 1}{r2}}}{{x+{b}}}"])


def make_response(rng: np.random.Generator, answer: str | None) -> str:
    prose = " ".join(rng.choice(FILLER, size=int(rng.integers(3, 8))))
    steps = " ".join(f"{int(rng.integers(2, 99))} + {int(rng.integers(2, 99))} = ..."
                     for _ in range(3))
    body = f"{prose}\n{steps}\n"
    if answer is None:
        return body + "I am not sure how to finish this."
    if rng.random() < 0.55:
        return body + f"Therefore:\nAnswer: ${answer}$"
    return body + f"So the final answer is $\\boxed{{{answer}}}$."


def make_dataset(
    problems: int, samples: int, seed: int, cas_percent: float = 5.0, radical: bool = False
) -> tuple[list[str], list[str], list[str]]:
    """Responses, golds and a category per response ("right", "equiv", "wrong", ...)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2]))
    weights = kind_weights(cas_percent)
    responses, golds, kinds = [], [], []
    pathological = ["9^{9^{9^{9}}}", "2^{10^{10}}", "(10^{10})!", "10^{10^{10^{10}}}"]
    for p in range(problems):
        gold, right, wrong = make_problem(rng, weights, radical)
        for s in range(samples):
            u = rng.random()
            if p % 128 == 7 and s == 0:  # a few: 4 in 8,192
                kind, answer = "pathological", pathological[(p // 64) % len(pathological)]
            elif u < 0.45:
                kind, answer = "right", right[0]
            elif u < 0.65:
                kind, answer = "equiv", right[int(rng.integers(1, len(right)))]
            elif u < 0.92:
                kind, answer = "wrong", wrong[int(rng.integers(len(wrong)))]
            else:
                kind, answer = "missing", None
            responses.append(make_response(rng, answer))
            golds.append(gold)
            kinds.append(kind)
    return responses, golds, kinds


def loop_math_verify(
    responses, golds, timeout: float
) -> tuple[list[bool], list[bool], list[float]]:
    """The per-sample baseline: parse + verify each response; timed out = hit the limit."""
    from math_verify import parse, verify

    limit = max(1, round(timeout))  # math-verify's signal.alarm takes whole seconds
    verdicts, timed_out, seconds = [], [], []
    for response, gold in zip(responses, golds):
        t0 = time.perf_counter()
        try:
            ok = verify(parse(f"${gold}$", parsing_timeout=limit),
                        parse(response, parsing_timeout=limit), timeout_seconds=limit)
        except Exception:
            ok = False
        seconds.append(time.perf_counter() - t0)
        verdicts.append(bool(ok))
        timed_out.append(seconds[-1] >= 0.95 * limit)
    return verdicts, timed_out, seconds


def timed_score_batch(responses, golds, timeout: float, style: str = "auto"):
    """score_batch on a fresh pool (its one-off start excluded): scores, seconds, workers."""
    from verimath.rewards import ScoringPool, score_batch

    with ScoringPool() as pool:
        pool.verify([("x+1", "1+x")], timeout=30)  # start the zygote
        t0 = time.perf_counter()
        scores = score_batch(responses, golds, timeout=timeout, style=style, pool=pool)
        return scores, time.perf_counter() - t0, pool.workers


def bench_scoring(problems: int, samples: int, timeout: float, seed: int, cas_percent: float,
                  radical: bool = False) -> dict:
    responses, golds, kinds = make_dataset(problems, samples, seed, cas_percent, radical)
    n = len(responses)
    clean = [i for i in range(n) if kinds[i] != "pathological"]
    print(f"== scoring {n} responses ({problems} problems x {samples} samples, {cas_percent:g}% "
          f"rational functions{' with a radical coefficient' if radical else ''}), "
          f"timeout {timeout} s")
    print(f"   categories: {dict(Counter(kinds))}")
    scores, batch_s, workers = timed_score_batch(responses, golds, timeout)
    _, clean_s, _ = timed_score_batch([responses[i] for i in clean], [golds[i] for i in clean],
                                      timeout)
    unique = len(set(zip(scores.extracted, golds)))
    print(f"   score_batch ({workers} workers): {batch_s:7.2f} s all ({n / batch_s:,.0f}/s), "
          f"{clean_s:.2f} s without pathological; {unique} unique pairs, "
          f"{int(scores.timed_out.sum())} timeouts")
    print_breakdown(responses, golds)
    loop, loop_to, seconds = loop_math_verify(responses, golds, timeout)
    loop_s, loop_clean_s = sum(seconds), sum(seconds[i] for i in clean)
    print(f"   parse+verify loop:        {loop_s:7.2f} s all ({n / loop_s:,.0f}/s), "
          f"{loop_clean_s:.2f} s without pathological; {sum(loop_to)} timeouts")
    print(f"   speed ratio: {loop_s / batch_s:.1f}x all, "
          f"{loop_clean_s / clean_s:.1f}x without pathological")
    figures = {"responses": n, "workers": workers, "score_batch_s": batch_s,
               "score_batch_clean_s": clean_s, "loop_s": loop_s, "loop_clean_s": loop_clean_s,
               "ratio_all": loop_s / batch_s, "ratio_clean": loop_clean_s / clean_s}
    flex, flex_s, _ = timed_score_batch(responses, golds, timeout, style="flexible")
    print(f"   score_batch, flexible style: {flex_s:.2f} s ({loop_s / flex_s:.1f}x the loop); "
          f"same verdicts as auto on {int((flex.correct == scores.correct).sum())}/{n}")
    agree = [i for i in range(n) if not loop_to[i]]
    same = {i for i in agree if loop[i] == bool(scores.correct[i])}
    print(f"   verdict agreement (loop not timed out): {len(same)}/{len(agree)} "
          f"= {100 * len(same) / max(len(agree), 1):.2f}%")
    figures.update(flexible_s=flex_s, ratio_flexible=loop_s / flex_s,
                   agreement=len(same) / max(len(agree), 1))
    differ = Counter((kinds[i], loop[i], bool(scores.correct[i])) for i in agree if i not in same)
    for (kind, lv, bv), count in differ.most_common(8):
        i = next(j for j in agree if (kinds[j], loop[j], bool(scores.correct[j])) == (kind, lv, bv))
        print(f"     {count:5d} x {kind:12s} loop={lv!s:5s} batch={bv!s:5s} "
              f"e.g. gold {golds[i]!r}, extracted {scores.extracted[i]!r}")
    return figures


def print_breakdown(responses, golds) -> None:
    """Where score_batch's time goes: extraction and fast path (in the caller), the pool."""
    from verimath.rewards.equality.equivalence import fast_verdict
    from verimath.rewards.extraction.final_answer import extract_answer

    t0 = time.perf_counter()
    extracted = [extract_answer(text) for text in responses]
    t1 = time.perf_counter()
    unique = {(p, g) for p, g in zip(extracted, golds) if p is not None}
    undecided = [pair for pair in unique if fast_verdict(*pair) is None]
    t2 = time.perf_counter()
    print(f"   breakdown: extraction {1e3 * (t1 - t0):.0f} ms, "
          f"dedup + fast path {1e3 * (t2 - t1):.0f} ms "
          f"({len(unique)} unique pairs), {len(undecided)} pairs sent to the pool: "
          f"{[p for p, _ in undecided][:4]}...")


def bench_overlong(n: int, seed: int) -> None:
    from verimath.rewards.shaping.overlong import overlong_penalty, penalty_scalar

    rng = np.random.default_rng(np.random.SeedSequence([seed, 3]))
    lengths = rng.integers(0, 20_480, size=n).astype(np.float64)
    max_len, cache = 16_384, 4_096
    t0 = time.perf_counter()
    overlong_penalty(lengths[:10], max_length=max_len, cache_length=cache)
    first = time.perf_counter() - t0

    def numpy_version(x):
        start = max_len - cache
        return np.where(x <= start, 0.0, np.where(x <= max_len, (start - x) / cache, -1.0))

    def best(fn, repeat=7):
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t)
        return min(times), out

    t_numba, a = best(lambda: overlong_penalty(lengths, max_length=max_len, cache_length=cache))
    t_numpy, b = best(lambda: numpy_version(lengths))
    values = lengths.tolist()
    t_loop, c = best(lambda: [penalty_scalar(x, max_len, cache) for x in values], repeat=1)
    assert np.array_equal(a, b) and np.array_equal(a, np.array(c))
    print(f"== overlong penalty on {n:,} lengths "
          f"(first call, compile or cache load: {first:.2f} s)")
    print(f"   numba  {1e3 * t_numba:8.2f} ms")
    print(f"   numpy  {1e3 * t_numpy:8.2f} ms   (numba is {t_numpy / t_numba:.1f}x faster)")
    print(f"   python {1e3 * t_loop:8.2f} ms   (numba is {t_loop / t_numba:.0f}x faster)")


_FIRST_CALL = (
    "import json, sys, time; t0 = time.perf_counter(); "
    "from verimath.rewards import is_equivalent; t1 = time.perf_counter(); "
    "v = is_equivalent(sys.argv[1], sys.argv[2]); t2 = time.perf_counter(); "
    "print(json.dumps([t1 - t0, t2 - t1, v]))"
)


def table_pairs() -> list[tuple[str, str]]:
    """(prediction, gold) pairs of the labelled tables (``bench_accuracy.py``)."""
    path = Path(__file__).resolve().parent / "bench_accuracy.py"
    spec = importlib.util.spec_from_file_location("bench_accuracy", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    from verimath.rewards import extract_answer

    pairs = set()
    for row in [r for t in bench.TABLES for r in bench.load_cases(t)] + bench.golden_cases():
        if row["input"] == "pred":
            pred = row["text"]
        else:
            pred = extract_answer(row["text"], style="flexible")
        if pred is not None:
            pairs.add((pred, row["gold"]))
    return sorted(pairs)


def split_by_path(pairs):
    """``(decided in the caller, needing the pool)``: the fast path and numeric check decide."""
    from verimath.rewards.equality.conventions import DEFAULT
    from verimath.rewards.equality.equivalence import fast_verdict
    from verimath.rewards.equality.numeric import numeric_verdict
    from verimath.rewards.extraction.final_answer import answer_core

    local, pooled = [], []
    for pred, gold in pairs:
        core = answer_core(pred)
        decided = (fast_verdict(core, gold) is not None
                   or numeric_verdict(core, gold, DEFAULT) is not None)
        (local if decided else pooled).append((pred, gold))
    return local, pooled


def bench_first_call(count: int, seed: int) -> dict:
    """The first verdict of fresh processes, for pairs decided in the caller and in the pool."""
    local, pooled = split_by_path(table_pairs())
    rng = random.Random(seed)
    out = {}
    print(f"== first verdict of a fresh process ({len(local)} table pairs decided in the caller, "
          f"{len(pooled)} needing the pool; {count // 2} of each drawn)")
    for name, pool in (("caller", local), ("pool", pooled)):
        times = []
        for pred, gold in rng.sample(pool, min(count // 2, len(pool))):
            done = subprocess.run([sys.executable, "-c", _FIRST_CALL, pred, gold],
                                  capture_output=True, text=True, timeout=120, check=True)
            imported, verdict, _ = json.loads(done.stdout.strip().splitlines()[-1])
            times.append((imported + verdict, imported, verdict))
        totals = sorted(t[0] for t in times)
        share = sum(t <= 0.5 for t in totals) / len(totals)
        out[name] = {"pairs": len(totals), "median_s": totals[len(totals) // 2],
                     "max_s": totals[-1],
                     "median_import_s": sorted(t[1] for t in times)[len(times) // 2],
                     "within_0_5_s": share}
        print(f"   decided in the {name:6s}: import + first verdict median "
              f"{out[name]['median_s']:.2f} s, "
              f"max {totals[-1]:.2f} s (import alone median {out[name]['median_import_s']:.2f} s); "
              f"{100 * share:.0f}% within 0.5 s")
    return out


def bench_worst_case(timeout: float) -> dict:
    """Every pool-bound table pair timed alone on a warm pool (no cache): the slowest cases."""
    from verimath.rewards import ScoringPool

    _, pooled = split_by_path(table_pairs())
    times = []
    with ScoringPool(1, cache_size=0) as pool:
        pool.verify([("x+1", "1+x")], timeout=30)
        for pred, gold in pooled:
            t0 = time.perf_counter()
            (_, late), = pool.verify([(pred, gold)], timeout=timeout)
            times.append((time.perf_counter() - t0, late, pred, gold))
    times.sort(reverse=True)
    print(f"== slowest symbolic verdicts, {len(times)} pool-bound table pairs one at a time "
          f"(warm pool, timeout {timeout} s)")
    for seconds, late, pred, gold in times[:5]:
        flag = " (timed out)" if late else ""
        print(f"   {seconds:6.2f} s{flag}  {pred[:50]!r} vs {gold[:40]!r}")
    ordered = sorted(t[0] for t in times)
    return {"pairs": len(times), "max_s": ordered[-1],
            "p99_s": ordered[int(0.99 * (len(ordered) - 1))],
            "median_s": ordered[len(ordered) // 2], "timed_out": sum(t[1] for t in times),
            "bound_s": timeout}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 problems instead of 512")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds per verification")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--radical", action="store_true",
                        help="give the rational functions a radical coefficient, so that only "
                             "math-verify decides them (the CAS-bound case)")
    parser.add_argument("--cas-percent", type=float, default=5.0,
                        help="share of problems whose answers only a CAS decides (default 5)")
    parser.add_argument("--first-call", type=int, default=0, metavar="N",
                        help="time the first verdict of N fresh processes (Part 3)")
    parser.add_argument("--worst-case", action="store_true",
                        help="time every pool-bound table pair alone on a warm pool (Part 3)")
    parser.add_argument("--skip-scoring", action="store_true", help="Part 3 only")
    parser.add_argument("--load", default="", help="what else ran on the machine, for the record")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    figures: dict = {"load": args.load, "loadavg_start": os.getloadavg(), "cpus": os.cpu_count()}
    if not args.skip_scoring:
        bench_overlong(1_000_000, args.seed)
        figures["scoring"] = bench_scoring(64 if args.quick else 512, 16, args.timeout, args.seed,
                                           args.cas_percent, args.radical)
    if args.first_call:
        figures["first_call"] = bench_first_call(args.first_call, args.seed)
    if args.worst_case:
        figures["worst_case"] = bench_worst_case(5.0)
    figures["loadavg_end"] = os.getloadavg()
    if args.out is not None:
        from importlib.metadata import version

        figures["versions"] = {name: version(name) for name in ("math-verify", "sympy")}
        figures["date"] = time.strftime("%Y-%m-%d %H:%M")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
