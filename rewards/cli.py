"""``verimath score``: score a JSON-lines file of model responses against gold answers.

Each input line is an object with ``response`` (the model output), ``answer`` (the gold
answer, a string or a number) and, for the overlong penalty, ``length`` (the response's
token count). Each output line is the input object plus ``extracted``, ``path`` (where the
answer was found), ``rule`` (what decided), ``correct``, ``timed_out``, ``correctness``
(+1/-1), ``penalty`` and ``reward``. A summary (count, accuracy, answers missing, timeouts,
mean penalty and reward, speed, shares of paths and rules) follows. ``--explain`` adds an
``explain`` object per line (``rewards.explain``: both normalized forms, the deciding rule
in detail, the time taken) and prints each explanation of an incorrect response to stderr.

    verimath score --input responses.jsonl --output scored.jsonl
    verimath score --input r.jsonl --output - --max-length 16384 --cache-length 4096
    verimath score --input r.jsonl --output scored.jsonl --style flexible --explain
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from verimath.rewards.equality.equivalence import MODES
from verimath.rewards.extraction.final_answer import STYLES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", required=True, type=Path, help="JSON-lines file to score")
    parser.add_argument("--output", required=True,
                        help="where to write the scored JSON lines ('-' for stdout)")
    parser.add_argument("--style", default="auto", choices=STYLES,
                        help="answer extraction: <answer> tag, final 'A:' line, 'Answer:' line, "
                             "then \\boxed{} (auto), or one of them; flexible adds final-answer "
                             "phrases and the last math (evaluation)")
    parser.add_argument("--mode", default="symbolic", choices=MODES,
                        help="equivalence: math-verify fallback, DAPO's strict integers, "
                             "or strings")
    parser.add_argument("--timeout", type=float, default=5.0,
                        help="seconds per symbolic verification; a timeout scores -1 (default 5)")
    parser.add_argument("--max-length", type=int, default=None,
                        help="DAPO L_max in tokens; with --cache-length adds the overlong penalty")
    parser.add_argument("--cache-length", type=int, default=None,
                        help="DAPO L_cache in tokens (the paper: 4096 with L_max 16384)")
    parser.add_argument("--workers", type=int, default=None,
                        help="verification processes (default: usable CPUs, at most 8)")
    parser.add_argument("--batch-size", type=int, default=256,
                        help="responses scored per call (progress bar granularity)")
    parser.add_argument("--response-field", default="response", help="field holding the response")
    parser.add_argument("--answer-field", default="answer", help="field holding the gold answer")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--explain", action="store_true",
                        help="explain each verdict (extraction path, normalized forms, deciding "
                             "rule, time); slower, for debugging rewards")


def main(args: argparse.Namespace) -> int:
    try:
        _check_args(args)
        rows = read_rows(args.input, args.response_field, args.answer_field,
                         need_length=args.max_length is not None)
        start = time.perf_counter()
        scored = _score_rows(rows, args)
        elapsed = time.perf_counter() - start
        _write_rows(scored, args.output)
    except (ValueError, OSError) as exc:
        print(f"verimath score: error: {exc}", file=sys.stderr)
        return 2
    summary = summarize(scored, elapsed)
    print(summary, file=sys.stderr if args.output == "-" else sys.stdout)
    return 0


def read_rows(
    path: Path, response_field: str, answer_field: str, *, need_length: bool
) -> list[dict]:
    """Parse and check the input; errors name the file, the line and the field."""
    rows = []
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{where}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at "
                                 f"column {exc.start + 1}); save the file as UTF-8") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"{where}: not valid JSON ({exc.msg} at column {exc.colno})"
                ) from None
            if not isinstance(row, dict):
                raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
            _check_row(row, where, response_field, answer_field, need_length)
            rows.append(row)
    if not rows:
        raise ValueError(f"{path} holds no responses (expected JSON lines with "
                         f"{response_field!r} and {answer_field!r})")
    return rows


def _check_row(row: dict, where: str, response_field: str, answer_field: str, need_length: bool):
    if not isinstance(row.get(response_field), str):
        got = "missing" if response_field not in row else type(row[response_field]).__name__
        raise ValueError(f"{where}: field {response_field!r} must be a string ({got})")
    answer = row.get(answer_field)
    if isinstance(answer, bool) or not isinstance(answer, (str, int, float)):
        got = "missing" if answer_field not in row else type(answer).__name__
        raise ValueError(f"{where}: field {answer_field!r} must be a string or a number ({got})")
    if need_length:
        length = row.get("length")
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            got = "missing" if "length" not in row else repr(length)
            raise ValueError(f"{where}: field 'length' must be a non-negative integer token "
                             f"count when --max-length is set ({got})")


def _check_args(args) -> None:
    if (args.max_length is None) != (args.cache_length is None):
        raise ValueError("--max-length and --cache-length go together: give both or neither")
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be >= 1, got {args.batch_size}")
    if not args.input.is_file():
        raise ValueError(f"{args.input}: no such file")
    target = Path(args.output)
    if args.output != "-" and target.is_dir():
        raise ValueError(f"--output {args.output} is a directory; pass a file name, e.g. "
                         f"--output {target / 'scored.jsonl'}")
    if args.output != "-" and not target.resolve().parent.is_dir():
        raise ValueError(f"--output {args.output}: directory {target.parent} does not exist")


def _score_rows(rows: list[dict], args) -> list[dict]:
    from tqdm import tqdm
    from verimath.rewards.batch import score_batch
    from verimath.rewards.pool.scoring_pool import ScoringPool

    out = []
    with ScoringPool(args.workers) as pool, tqdm(
        total=len(rows), unit="resp", desc="scoring", disable=args.no_progress, file=sys.stderr
    ) as bar:
        for lo in range(0, len(rows), args.batch_size):
            chunk = rows[lo : lo + args.batch_size]
            scores = score_batch(
                [r[args.response_field] for r in chunk],
                [r[args.answer_field] for r in chunk],
                lengths=[r["length"] for r in chunk] if args.max_length is not None else None,
                max_length=args.max_length, cache_length=args.cache_length,
                style=args.style, mode=args.mode, timeout=args.timeout, pool=pool,
            )
            for i, row in enumerate(chunk):
                out.append({
                    **row, "extracted": scores.extracted[i], "path": scores.paths[i],
                    "rule": scores.rules[i], "correct": bool(scores.correct[i]),
                    "timed_out": bool(scores.timed_out[i]),
                    "correctness": float(scores.correctness[i]),
                    "penalty": float(scores.penalty[i]), "reward": float(scores.reward[i]),
                })
            bar.update(len(chunk))
    if args.explain:
        _explain_rows(out, args)
    return out


def _explain_rows(rows: list[dict], args) -> None:
    """Add ``explain`` to each row; print the explanations of incorrect rows to stderr."""
    from verimath.rewards.explain import explain

    for index, row in enumerate(rows):
        found = explain(row[args.response_field], str(row[args.answer_field]), style=args.style,
                        mode=args.mode, timeout=args.timeout)
        row["explain"] = found.as_dict()
        if not found.correct:
            print(f"row {index + 1}: {found}", file=sys.stderr)


def _write_rows(rows: list[dict], output: str) -> None:
    """Write JSON lines; a file is replaced atomically, so a failed run leaves no half file."""
    lines = "".join(json.dumps(r, ensure_ascii=True) + "\n" for r in rows)
    if output == "-":
        sys.stdout.write(lines)
        return
    target = Path(output)
    fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(lines)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def summarize(rows: list[dict], seconds: float) -> str:
    """A few lines: count, accuracy, missing answers, timeouts, mean penalty/reward, speed."""
    n = len(rows)
    if n == 0:
        return "scored 0 responses"
    correct = sum(r["correct"] for r in rows)
    missing = sum(r["extracted"] is None for r in rows)
    timeouts = sum(r["timed_out"] for r in rows)
    paths = " ".join(f"{k} {v / n:.2f}" for k, v in Counter(r["path"] for r in rows).most_common())
    rules = " ".join(f"{k} {v / n:.2f}" for k, v in Counter(r["rule"] for r in rows).most_common())
    penalty = sum(r["penalty"] for r in rows) / n
    reward = sum(r["reward"] for r in rows) / n
    return (
        f"scored {n} responses in {seconds:.2f} s ({n / max(seconds, 1e-9):.0f}/s)\n"
        f"  accuracy      {correct / n:.4f} ({correct}/{n})\n"
        f"  no answer     {missing}\n"
        f"  timeouts      {timeouts}\n"
        f"  mean penalty  {penalty:.4f}\n"
        f"  mean reward   {reward:.4f}\n"
        f"  paths         {paths}\n"
        f"  rules         {rules}"
    )
