"""Benchmark: agreement with hand labels, verimath (each extraction style) vs math-verify.

    python benchmarks/bench_accuracy.py              # the table, by kind of case
    python benchmarks/bench_accuracy.py --verbose    # plus every row where a verifier is wrong
    python benchmarks/bench_accuracy.py --quick      # the labelled tables only
    python benchmarks/bench_accuracy.py --quick --split heldout   # the part never tuned on

The cases are ``benchmarks/data/accuracy_cases.jsonl``: written for this benchmark from the
kinds of answers verifiers miss and from graders' published normalization rules (Qwen2.5-Math,
DeepSeek-Math, OpenCompass, simple-evals, Minerva, MATH), each row naming its ``kind`` and
``source``. A row is either a whole ``response`` (scored by ``correctness_reward`` in each
style) or a ``pred``, a prediction with or without words around it (scored by
``is_equivalent``, the same in every style), against ``gold``; ``label`` says whether it is
right. ``reward_hack`` rows (all labelled false) state no single answer, deny the gold or
hide candidates.

math-verify is used the way its README shows: ``verify(parse(gold), parse(answer))`` with
its default extraction (LaTeX and plain expressions), the gold wrapped as ``$gold$``; a
``pred`` without words or ``$`` is wrapped as ``$pred$`` too, so that bare LaTeX parses.
Both run in the same process and run, on the same rows.

A second labelled table, ``benchmarks/data/new_cases.jsonl``, was written from the math
itself (answer markers such as ``A: 71``, ``<answer>`` tags, plain-text notation, identities,
relations, value vs equation, letter case, decimals vs exact values, mixed and complex
numbers, refusals that restate the question's numbers) before the code that handles those
kinds. Both tables are split into a dev part and a held-out part by ``split_of`` (a fixed
rule on each row's id, by kind): the code is tuned on the dev part only.

A third table, ``benchmarks/data/grader_cases.jsonl``, is held out as a whole (each row says
``"split": "heldout"``): written by hand, before the code that handles its kinds, from the
kinds of pairs graders' own test suites check (math-verify, lighteval, TRL's accuracy reward,
verl's ``math_dapo``) and from the conventions RL graders rule on (delimiters, ``name =
value`` golds, relations, decimals, order, choice letters, pairs that agree on many points
but not all). A row's ``split`` field, when present, overrides the id rule.

The golden table of the tests (``tests/golden/verify_cases.jsonl``, whole responses) is
scored too, its ``mode: symbolic`` rows under the default conventions only (the other modes
are verimath's strict integer and string matching, and ``"conventions": "strict"`` rows its
strict readings, which math-verify does not have); it is all dev.

With the real datasets at hand (``../shared/data`` or ``$VERIMATH_DATA_DIR``), a second
table scores text nobody wrote for this benchmark: the 500 worked solutions of MATH-500
with their ``\\boxed{}`` removed (the content kept) and the 1,319 GSM8K test solutions
without their ``#### N`` line, each against its gold answer, all labelled right. It measures
free-form extraction on real prose (the answer is not always the last math of a solution,
so no verifier reaches 100%). Both sets were looked at while the flexible style was
written, so they are no blind test either.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import time
from collections import defaultdict
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "data" / "accuracy_cases.jsonl"
NEW_TABLE = Path(__file__).resolve().parent / "data" / "new_cases.jsonl"
GRADER_TABLE = Path(__file__).resolve().parent / "data" / "grader_cases.jsonl"
GOLDEN_TABLE = Path(__file__).resolve().parents[1] / "tests" / "golden" / "verify_cases.jsonl"
TABLES = (TABLE, NEW_TABLE, GRADER_TABLE)
SPLITS = ("all", "dev", "heldout")
DATA_DIR = Path(
    os.environ.get("VERIMATH_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data")
)
FIELDS = {"id": str, "kind": str, "source": str, "input": str, "text": str, "gold": str,
          "label": bool}
GROUPS = [  # (title, kind prefix)
    ("free-form, English", "free_form_en"), ("free-form, 11 other languages", "free_form_"),
    ("Answer: line holding a sentence", "answer_line_sentence"),
    ("prediction with words", "pred_with_words"), ("decimal comma / thousands", "decimal_comma"),
    ("matrices", "matrix"), ("relations vs intervals", "relation_interval"),
    ("stray LaTeX", "stray_latex"), ("ordered vs unordered", "ordered_unordered"),
    ("graders' published rules", "_rule"), ("standard formats", "standard_format"),
    ("reward hacks (all false)", "reward_hack"), ("MATH-500 solutions, box removed", "math500"),
    ("GSM8K solutions, #### line removed", "gsm8k"),
]
_COMMAND = re.compile(r"\\[A-Za-z]+")
_BRACED = re.compile(r"\{[^{}]*\}")
_WORD = re.compile(r"[^\W\d_]{3,}")


def is_prose(text: str) -> bool:
    """A word of three letters or more outside LaTeX commands and their braced arguments."""
    text = _COMMAND.sub(" ", text)
    for _ in range(5):
        text = _BRACED.sub(" ", text)
    return _WORD.search(text) is not None


def load_cases(path: Path = TABLE) -> list[dict]:
    """The labelled rows; a malformed row is a ValueError naming its line and field."""
    rows = []
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            row = json.loads(line)
            for field, kind in FIELDS.items():
                if not isinstance(row.get(field), kind):
                    raise ValueError(f"{path.name} line {lineno}: field {field!r} must be a "
                                     f"{kind.__name__}; fix the row")
            if row["input"] not in ("response", "pred"):
                raise ValueError(f"{path.name} line {lineno}: field 'input' must be 'response' "
                                 f"or 'pred', got {row['input']!r}")
            if row.get("split", "dev") not in ("dev", "heldout"):
                raise ValueError(f"{path.name} line {lineno}: field 'split' must be 'dev' or "
                                 f"'heldout', got {row['split']!r}")
            rows.append(row)
    return rows


def golden_cases(path: Path = GOLDEN_TABLE) -> list[dict]:
    """The golden table's ``mode: symbolic`` rows (default conventions) as response rows of
    this benchmark (dev)."""
    rows = []
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            row = json.loads(line)
            if row["mode"] == "symbolic" and row.get("conventions", "default") == "default":
                rows.append({"id": f"golden-{lineno:03d}", "kind": "golden", "input": "response",
                             "source": f"{path.name}: {row['note']}", "text": row["response"],
                             "gold": row["gold"], "label": row["expected"], "split": "dev"})
    return rows


def split_of(rows: list[dict]) -> list[str]:
    """``"dev"`` or ``"heldout"`` per row, fixed before the code was tuned: within each
    ``kind``, rows ordered by the SHA-256 of their ``id`` alternate dev, held-out, dev...
    A row with a ``split`` field keeps it. Code is written and tuned reading the dev part
    only; the held-out part measures it."""
    by_kind: dict[str, list[int]] = defaultdict(list)
    out = [""] * len(rows)
    for i, row in enumerate(rows):
        if "split" in row:
            out[i] = row["split"]
        else:
            by_kind[row["kind"]].append(i)
    for idx in by_kind.values():
        idx.sort(key=lambda i: hashlib.sha256(rows[i]["id"].encode()).hexdigest())
        for rank, i in enumerate(idx):
            out[i] = "dev" if rank % 2 == 0 else "heldout"
    return out


def select_split(rows: list[dict], split: str) -> list[dict]:
    """The rows of one part (``SPLITS``) of a table."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    return rows if split == "all" else [r for r, s in zip(rows, split_of(rows)) if s == split]


def group_of(kind: str) -> str:
    for title, prefix in GROUPS:
        if kind.startswith(prefix) or (prefix.startswith("_") and kind.endswith(prefix)):
            return title
    return kind


def verimath_verdicts(rows: list[dict], conventions: str = "default") -> dict[str, list[bool]]:
    """Verdict per row for each extraction style (``pred`` rows: ``is_equivalent``), under
    the grading ``conventions`` (``"default"`` or ``"strict"``)."""
    from verimath.rewards import is_equivalent, score_batch
    from verimath.rewards.extraction.final_answer import STYLES

    preds = {i: is_equivalent(r["text"], r["gold"], conventions=conventions)
             for i, r in enumerate(rows) if r["input"] == "pred"}
    responses = [i for i, r in enumerate(rows) if r["input"] == "response"]
    out = {}
    for style in STYLES:
        scores = score_batch([rows[i]["text"] for i in responses],
                             [rows[i]["gold"] for i in responses], style=style,
                             conventions=conventions)
        verdicts = dict(preds)
        verdicts.update(zip(responses, scores.correct.tolist()))
        out[style] = [bool(verdicts[i]) for i in range(len(rows))]
    return out


def math_verify_verdicts(rows: list[dict]) -> list[bool]:
    """math-verify's verdict per row (see the module docstring for how it is called)."""
    from math_verify import parse, verify

    out = []
    for row in rows:
        text = row["text"]
        if row["input"] == "pred" and "$" not in text and not is_prose(text):
            text = f"${text}$"
        try:
            out.append(bool(verify(parse(f"${row['gold']}$"), parse(text))))
        except Exception:  # a verifier that raises gives no reward
            out.append(False)
    return out


def agreement_table(rows: list[dict], systems: dict[str, list[bool]]) -> str:
    """Markdown: rows and % agreement with the labels per group and overall, per system."""
    names = list(systems)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        groups[group_of(row["kind"])].append(i)
    lines = ["| cases | rows | " + " | ".join(names) + " |",
             "| --- | ---: | " + " | ".join("---:" for _ in names) + " |"]
    known = [title for title, _ in GROUPS if title in groups]
    order = known + sorted(set(groups) - {t for t, _ in GROUPS})
    for title in order + (["all"] if len(order) > 1 else []):
        idx = groups[title] if title != "all" else list(range(len(rows)))
        cells = [f"{100 * sum(systems[n][i] == rows[i]['label'] for i in idx) / len(idx):.1f}"
                 for n in names]
        label = f"**{title}**" if title == "all" else title
        lines.append(f"| {label} | {len(idx)} | " + " | ".join(cells) + " |")
    hacks = [i for i, r in enumerate(rows) if r["kind"].startswith("reward_hack")]
    if hacks:
        accepted = [str(sum(systems[n][i] for i in hacks)) for n in names]
        lines.append(f"| reward hacks accepted | {len(hacks)} | " + " | ".join(accepted) + " |")
    return "\n".join(lines)


REAL_SETS = (("MATH-500", "math500"), ("GSM8K", "gsm8k"))
"""The real-text table's data sets: (name, folder under ``DATA_DIR`` holding ``test.jsonl``)."""


def real_text_notes(quick: bool) -> list[str]:
    """Why the real-text table is left out (``--quick``), or which of its data sets are (not
    found under ``DATA_DIR``): one note each, empty when the whole table is scored."""
    if quick:
        return ["the real-text table of MATH-500 and GSM8K worked solutions is skipped by --quick"]
    folders = " and ".join(f"{folder}/" for _, folder in REAL_SETS)
    return [f"{name} not found at {DATA_DIR / folder / 'test.jsonl'}: set VERIMATH_DATA_DIR "
            f"to the folder that holds {folders}"
            for name, folder in REAL_SETS if not (DATA_DIR / folder / "test.jsonl").is_file()]


def unboxed_math500() -> list[dict]:
    """MATH-500 solutions with each ``\\boxed{x}`` replaced by ``x``, as response rows."""
    path = DATA_DIR / "math500" / "test.jsonl"
    if not path.is_file():
        return []
    rows = []
    with path.open(encoding="utf-8") as handle:
        for i, line in enumerate(handle, 1):
            item = json.loads(line)
            rows.append({"id": f"math500-{i:03d}", "kind": "math500_unboxed", "input": "response",
                         "source": "MATH-500 solution, box removed", "label": True,
                         "text": _unbox(item["solution"]), "gold": item["answer"]})
    return rows


def gsm8k_worked() -> list[dict]:
    """GSM8K test solutions without their ``#### N`` line and calculator notes, as response
    rows: the result is stated in the last sentence, in plain words and numbers."""
    path = DATA_DIR / "gsm8k" / "test.jsonl"
    if not path.is_file():
        return []
    rows = []
    with path.open(encoding="utf-8") as handle:
        for i, line in enumerate(handle, 1):
            body, _, final = json.loads(line)["answer"].rpartition("####")
            rows.append({"id": f"gsm8k-{i:04d}", "kind": "gsm8k_worked", "input": "response",
                         "source": "GSM8K solution, #### line removed", "label": True,
                         "text": _CALCULATOR.sub("", body).strip(),
                         "gold": final.strip().replace(",", "")})
    return rows


_CALCULATOR = re.compile(r"<<[^>]*>>")


def _unbox(text: str) -> str:
    out, pos = [], 0
    while (start := text.find("\\boxed{", pos)) >= 0:
        depth, end = 0, start + 6
        for end in range(start + 6, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                break
        out += [text[pos:start], text[start + 7 : end]]
        pos = end + 1
    out.append(text[pos:])
    return "".join(out)


def compare(rows: list[dict], verbose: bool, conventions: str = "default") -> dict[str, float]:
    """Run both verifiers on ``rows``, print the table (and, verbose, the misses); return the
    share of rows each system gets right, by system name."""
    t0 = time.perf_counter()
    mv = math_verify_verdicts(rows)
    t1 = time.perf_counter()
    vm = verimath_verdicts(rows, conventions)
    t2 = time.perf_counter()
    systems = {"math-verify": mv, **{f"verimath {s}": v for s, v in vm.items()}}
    print(agreement_table(rows, systems))
    print(f"\n(math-verify {t1 - t0:.1f} s; verimath, all styles, {t2 - t1:.1f} s, "
          f"pool start included)")
    if verbose:
        for name, verdicts in systems.items():
            wrong = [r for r, v in zip(rows, verdicts) if v != r["label"]]
            print(f"\n-- {name}: {len(wrong)} wrong")
            for r in wrong:
                print(f"   {r['id']:28s} label={r['label']!s:5s} {r['text'][-70:]!r} "
                      f"| gold {r['gold']!r}")
    return {name: sum(v == r["label"] for v, r in zip(verdicts, rows)) / max(len(rows), 1)
            for name, verdicts in systems.items()}


def summary(results: dict[str, dict[str, dict]]) -> str:
    """Markdown: per table and split, rows and math-verify against verimath (flexible, auto)."""
    lines = ["| table | split | rows | math-verify | verimath flexible | verimath auto |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    names = ("math-verify", "verimath flexible", "verimath auto")
    for table, parts in results.items():
        for split, got in parts.items():
            cells = [f"{100 * got[name]:.1f}" for name in names]
            lines.append(f"| {table} | {split} | {got['rows']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true",
                        help="print every row a verifier gets wrong")
    parser.add_argument("--quick", action="store_true",
                        help="the labelled tables only (no real-text table)")
    parser.add_argument("--split", default="all", choices=SPLITS,
                        help="the part of each labelled table to score (see split_of)")
    parser.add_argument("--out", type=Path, default=None,
                        help="write the per-table, per-split shares as JSON to this file")
    parser.add_argument("--conventions", default="default", choices=("default", "strict"),
                        help="verimath's grading conventions (docs/conventions.md)")
    parser.add_argument("--decimal-rulings", action="store_true",
                        help="the graders' rulings on decimals of exact golds, against each "
                             "decimal_digits setting (docs/conventions.md)")
    parser.add_argument("--one-verdict", action="store_true",
                        help="count pairs whose verdict changes with delimiters or answer format")
    args = parser.parse_args()
    if args.one_verdict:
        one_verdict()
        return
    if args.decimal_rulings:
        decimal_rulings()
        return
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    logging.getLogger("latex2sympy2_extended").setLevel(logging.CRITICAL)
    tables = [(t.name, load_cases(t)) for t in TABLES] + [(GOLDEN_TABLE.name, golden_cases())]
    results: dict[str, dict[str, dict]] = {}
    for name, all_rows in tables:
        splits = ("dev", "heldout") if args.split == "all" else (args.split,)
        for split in splits:
            rows = select_split(all_rows, split)
            if not rows:
                continue
            print(f"== {len(rows)} labelled rows ({sum(r['label'] for r in rows)} right, "
                  f"{sum(not r['label'] for r in rows)} wrong) from {name}, split {split}")
            results.setdefault(name, {})[split] = {"rows": len(rows),
                                                  **compare(rows, args.verbose, args.conventions)}
    print("\n== summary (share of rows each verifier gets right, %)\n" + summary(results))
    for note in real_text_notes(args.quick):
        print(f"\n({note})")
    real = [] if args.quick else unboxed_math500() + gsm8k_worked()
    if real:
        print(f"\n== {len(real)} worked solutions, answer markers removed, from {DATA_DIR}")
        results["real text"] = {"all": {"rows": len(real), **compare(real, args.verbose)}}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        results["conventions"] = args.conventions
        args.out.write_text(json.dumps(_with_versions(results), indent=1) + "\n", encoding="utf-8")


DELIMITERS = ("{}", "${}$", "$${}$$", "\\({}\\)", "\\[{}\\]")
FORMS = ("Answer: {}", "\\boxed{{{}}}", "<answer>{}</answer>")


def one_verdict() -> None:
    """Every answer pair of the labelled tables (``pred`` rows, and the flexible style's
    answer of response rows): ``is_equivalent`` with each delimiter around each side (25
    combinations, for answers without words), and the reward of a response ending in each
    format in the auto and flexible styles (auto: answers without words; boxed: answers that
    can stand in a box), against ``is_equivalent`` of the bare pair. Prints the counts."""
    from verimath.rewards import extract_answer, is_equivalent, score_batch
    from verimath.rewards.extraction.chunks import has_prose
    from verimath.rewards.text.brackets import is_balanced

    rows = [r for table in TABLES for r in load_cases(table)] + golden_cases()
    pairs = {(r["text"], r["gold"]) for r in rows if r["input"] == "pred"}
    pairs |= {(p, r["gold"]) for r in rows if r["input"] == "response"
              for p in [extract_answer(r["text"], style="flexible")] if p and "\n" not in p}
    pairs = sorted(pairs)
    base = {pair: is_equivalent(*pair) for pair in pairs}
    checks = differ = 0
    for (pred, gold), verdict in base.items():
        if has_prose(pred):
            continue
        for left in DELIMITERS:
            for right in DELIMITERS:
                checks += 1
                differ += is_equivalent(left.format(pred), right.format(gold)) != verdict
    for style in ("auto", "flexible"):
        items = [(form, pred, gold) for (pred, gold) in pairs for form in FORMS
                 if not (style == "auto" and has_prose(pred))
                 and not ("boxed" in form and not _boxable(pred, is_balanced))]
        scores = score_batch(["Some work first.\n" + f.format(p) for f, p, _ in items],
                             [g for _, _, g in items], style=style)
        checks += len(items)
        differ += sum(bool(c) != base[(p, g)] for c, (_, p, g) in zip(scores.correct, items))
    print(f"== one verdict: {len(pairs)} answer pairs, {checks} delimited or formatted variants "
          f"checked, {differ} verdicts differ from is_equivalent of the bare pair")


DECIMAL_GOLDS = ("\\frac{1}{7}", "\\frac{1}{12}", "\\frac{2}{3}", "\\sqrt{2}", "\\pi", "e",
                 "\\frac{1000}{7}", "\\frac{1}{700}", "\\frac{22}{7}", "\\sqrt{300}")


def decimal_rulings() -> None:
    """Each gold of ``DECIMAL_GOLDS`` written correctly rounded to 2-11 significant digits (in
    fixed notation): math-verify's ruling (TRL and lighteval compare with its ``verify``),
    verl's ``math_dapo`` (a string comparison: a decimal never equals a LaTeX exact gold), and
    verimath's under each ``decimal_digits`` setting. Prints the agreement table."""
    import mpmath
    from math_verify import parse, verify
    from verimath.rewards import Conventions, is_equivalent

    mpmath.mp.dps = 50
    values = {"e": +mpmath.e, "\\pi": +mpmath.pi, "\\sqrt{2}": mpmath.sqrt(2),
              "\\sqrt{300}": mpmath.sqrt(300)}
    cases = []
    for gold in DECIMAL_GOLDS:
        value = values.get(gold)
        if value is None:
            num, den = gold[6:-1].split("}{")
            value = mpmath.mpf(num) / int(den)
        for digits in range(2, 12):
            text = mpmath.nstr(value, digits, strip_zeros=False, min_fixed=-10, max_fixed=10)
            if "e" not in text:
                cases.append((text, gold))
    rulings = [bool(verify(parse(f"${g}$"), parse(f"${t}$"))) for t, g in cases]
    print(f"== {len(cases)} decimals of exact golds; math-verify accepts {sum(rulings)}, "
          f"verl math_dapo none")
    print("| decimal_digits | agrees with math-verify, TRL, lighteval "
          "| agrees with verl math_dapo |")
    print("| --- | ---: | ---: |")
    for digits in [*range(3, 11), None]:
        setting = Conventions(decimal_digits=digits)
        ours = [is_equivalent(t, g, conventions=setting) for t, g in cases]
        agree = sum(o == r for o, r in zip(ours, rulings))
        print(f"| {digits} | {agree} | {sum(not o for o in ours)} |")


def _boxable(pred: str, is_balanced) -> bool:
    return is_balanced(pred, "{", "}") and (len(pred) - len(pred.rstrip("\\"))) % 2 == 0


def _with_versions(results: dict) -> dict:
    from importlib.metadata import version

    versions = {name: version(name) for name in ("math-verify", "sympy", "latex2sympy2_extended")}
    return {"date": time.strftime("%Y-%m-%d"), "versions": versions, "load": os.getloadavg(),
            "shares": results}


if __name__ == "__main__":
    main()
