"""Integer-answer filter, dedup and n-gram decontamination: examples, properties, references."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import word_lists
from verimath.datasets_prep.contamination import decontaminate, ngrams, words
from verimath.datasets_prep.filters import dedupe, is_integer_answer, normalize_prompt
from verimath.envs.problem import Problem


def prob(i: int, prompt: str, answer: str = "1") -> Problem:
    return Problem(f"t/train/{i}", prompt, answer, "t")


# --- integer answers ----------------------------------------------------------------------


def test_integer_answer_examples():
    assert all(map(is_integer_answer, ["25", "-3", "+4", "007", " 12 "]))
    assert not any(map(is_integer_answer, ["3.0", "1,000", "\\frac{1}{2}", "2^{10}", "", "x"]))


@given(st.integers(-(10**30), 10**30))
def test_every_integer_is_an_integer_answer(n):
    assert is_integer_answer(str(n))
    assert not is_integer_answer(f"{n}.5")


# --- dedup --------------------------------------------------------------------------------


def test_dedupe_keeps_first_and_flags_conflicting_answers():
    problems = [prob(0, "Find x."), prob(1, "  Find   x. "), prob(2, "Find y."),
                prob(3, "Find x.", "2")]
    kept, dropped = dedupe(problems)
    assert [p.id for p in kept] == ["t/train/0", "t/train/2"]
    assert [(d.problem.id, d.kept_id, d.same_answer) for d in dropped] == [
        ("t/train/1", "t/train/0", True),
        ("t/train/3", "t/train/0", False),
    ]


@given(st.lists(st.sampled_from(["a b", "a  b", "c", " c ", "d e f"]), max_size=20))
def test_dedupe_properties(prompts):
    problems = [prob(i, p) for i, p in enumerate(prompts)]
    kept, dropped = dedupe(problems)
    keys = [normalize_prompt(p.prompt) for p in kept]
    assert len(keys) == len(set(keys)) == len({normalize_prompt(p) for p in prompts})
    assert len(kept) + len(dropped) == len(problems)
    assert kept == [p for p in problems if p in kept]  # input order
    assert dedupe(kept) == (kept, [])  # idempotent


# --- decontamination ----------------------------------------------------------------------


def test_words_and_ngrams_examples():
    assert words("Let $x_1 = \\frac{3}{4}$, FIND it!") == ["let", "x", "1", "frac", "3", "4",
                                                           "find", "it"]
    assert list(ngrams(["a", "b", "c"], 2)) == [("a", "b"), ("b", "c")]
    assert list(ngrams(["a", "b"], 13)) == []


def test_short_eval_problems_are_searched_whole_one_way():
    evals = [Problem("e/0", "Simplify $\\sqrt{242}$.", "11\\sqrt2", "e"),
             Problem("e/1", "A long problem about circles and squares and triangles that "
                     "ends with a question. Find m+n.", "7", "e")]
    train = [prob(0, "First, simplify $\\sqrt{242}$. Then add one."),
             prob(1, "Simplify $\\sqrt{243}$."),
             prob(2, "Find m+n.")]
    kept, dropped = decontaminate(train, evals)
    assert [p.id for p in kept] == ["t/train/1", "t/train/2"]
    assert [(d.problem.id, d.eval_id, d.ngram, d.coverage) for d in dropped] == [
        ("t/train/0", "e/0", "simplify sqrt 242", 1.0)
    ]


def test_decontaminate_hand_example():
    eval_text = "the quick brown fox jumps over the lazy dog near the river bank today"
    evals = [Problem("e/0", eval_text, "1", "e")]
    train = [
        prob(0, "Prefix words. The QUICK brown fox, jumps over the lazy dog near the river bank!"),
        prob(1, "quick brown fox jumps over the lazy dog near the river bank today"),  # 13 words
        prob(2, "the quick brown fox jumps over the lazy dog near a river bank today"),
    ]
    kept, dropped = decontaminate(train, evals, n=13)
    assert [p.id for p in kept] == ["t/train/2"]
    assert [d.problem.id for d in dropped] == ["t/train/0", "t/train/1"]
    assert dropped[0].eval_id == "e/0"
    assert dropped[0].ngram == "the quick brown fox jumps over the lazy dog near the river bank"
    assert (dropped[0].coverage, dropped[1].coverage) == (13 / 14, 13 / 14)
    kept, dropped = decontaminate(train, evals, n=13, min_coverage=0.95)
    assert [p.id for p in kept] == [p.id for p in train] and dropped == []


def test_boilerplate_overlap_is_spared_by_min_coverage():
    tail = "can be written as m/n, where m and n are relatively prime positive integers. Find m+n."
    evals = [Problem("e/0", "A fair coin is tossed ten times. The probability of no two "
                     "consecutive heads " + tail, "1", "e")]
    copy = prob(0, "A fair coin is tossed ten times! The probability of no two consecutive "
                "heads " + tail)
    other = prob(1, "Two dice are rolled. The chance that the sum is seven " + tail)
    _, dropped = decontaminate([copy, other], evals)
    assert [d.problem.id for d in dropped] == ["t/train/0", "t/train/1"]
    assert dropped[0].coverage == 1.0 and dropped[1].coverage < 0.6
    kept, dropped = decontaminate([copy, other], evals, min_coverage=0.6)
    assert [p.id for p in kept] == ["t/train/1"]
    assert [d.problem.id for d in dropped] == ["t/train/0"]


def reference_coverage(train_words, eval_words, n):
    """Plain loops: for each training text, the best coverage of any eval text (0: none)."""

    def contains(ws, run):
        return any(ws[i : i + len(run)] == run for i in range(len(ws) - len(run) + 1))

    best = []
    for tw in train_words:
        scores = [0.0]
        for ew in eval_words:
            covered = set()
            if 0 < len(ew) < n and contains(tw, ew):
                covered = set(range(len(ew)))
            for i in range(len(ew) - n + 1):
                if contains(tw, ew[i : i + n]):
                    covered |= set(range(i, i + n))
            if covered:
                scores.append(len(covered) / len(ew))
        best.append(max(scores))
    return best


@given(st.lists(word_lists, max_size=12), st.lists(word_lists, max_size=6), st.integers(1, 6),
       st.sampled_from([0.0, 0.3, 0.7, 1.0]))
@settings(max_examples=150)
def test_decontaminate_matches_plain_loop_reference(train_words, eval_words, n, min_coverage):
    train = [prob(i, " ".join(ws)) for i, ws in enumerate(train_words)]
    evals = [Problem(f"e/{i}", " ".join(ws), "1", "e") for i, ws in enumerate(eval_words)]
    kept, dropped = decontaminate(train, evals, n, min_coverage=min_coverage)
    best = reference_coverage(train_words, eval_words, n)
    flagged = [b > 0 and b >= min_coverage for b in best]
    assert [p for p, f in zip(train, flagged) if f] == [d.problem for d in dropped]
    assert [p for p, f in zip(train, flagged) if not f] == kept
    by_id = {p.id: b for p, b in zip(train, best)}
    assert all(abs(d.coverage - by_id[d.problem.id]) < 1e-12 for d in dropped)


@given(word_lists, word_lists, word_lists, st.integers(1, 13))
def test_embedded_eval_window_is_always_caught(before, window, after, n):
    window = (window * (n // max(len(window), 1) + 1))[:n] if window else ["w"] * n
    evals = [Problem("e/0", " ".join(window), "1", "e")]
    text = " ".join(before) + " , " + " ".join(w.upper() for w in window) + ". " + " ".join(after)
    kept, dropped = decontaminate([prob(0, text)], evals, n)
    assert kept == [] and len(dropped) == 1


@given(word_lists.filter(lambda ws: len(ws) >= 2), st.data())
def test_a_changed_word_in_the_only_window_clears_it(ws, data):
    # With n = the text's length there is one window; changing any word (to one outside
    # the alphabet of `word`) removes the overlap, changing nothing keeps it.
    i = data.draw(st.integers(0, len(ws) - 1))
    changed = ws[:i] + ["zzz"] + ws[i + 1 :]
    evals = [Problem("e/0", " ".join(ws), "1", "e")]
    kept, _ = decontaminate([prob(0, " ".join(changed))], evals, len(ws))
    assert len(kept) == 1
    kept, _ = decontaminate([prob(0, " ".join(ws))], evals, len(ws))
    assert kept == []
