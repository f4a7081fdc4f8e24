"""``verimath prep``: convert a math dataset into a verimath problem file.

    verimath prep gsm8k --input data/gsm8k/test.jsonl --output gsm8k_test.jsonl
    verimath prep aime --input aime24/test.jsonl --name aime24 --output aime24.jsonl
    verimath prep dapo --input BytedTsinghua-SIA/DAPO-Math-17k --output dapo.parquet \\
        --integer-answers --decontaminate-against aime24.jsonl math500.jsonl
    verimath prep generic --input my.csv --problem-field question --answer-field final \\
        --output mine.jsonl

Prints counts (read, rejected, deduplicated, decontaminated, kept) and three sample records; exits
2, as ``verimath train`` and ``verimath score`` do, on malformed input (the message names file,
line/row and field) or when no problem is left, 0 otherwise. Writes are atomic: a failed run leaves
an existing output file as it was.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

SOURCES = ("gsm8k", "math", "aime", "dapo", "generic")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", choices=SOURCES, help="dataset family of the input rows")
    parser.add_argument("--input", required=True, metavar="PATH_OR_HUB_NAME",
                        help=".jsonl/.json/.parquet/.csv file, a datasets save_to_disk "
                        "directory, or a hub name (needs network and verimath[data])")
    parser.add_argument("--output", required=True, metavar="FILE",
                        help="problem file to write; .jsonl or .parquet")
    parser.add_argument("--split", help="split of a directory/hub dataset, and the id label "
                        "(default: the file's stem, or 'train')")
    parser.add_argument("--subset", help="hub configuration name (e.g. 'main' for openai/gsm8k)")
    parser.add_argument("--name", help="id prefix and Problem.source (default: SOURCE)")
    parser.add_argument("--skip-bad", action="store_true",
                        help="reject malformed rows into the side file instead of failing")
    parser.add_argument("--rejected", metavar="FILE",
                        help="side file of rejected rows (default: OUTPUT_STEM.rejected.jsonl)")
    parser.add_argument("--integer-answers", action="store_true",
                        help="keep only problems whose gold is an integer (the DAPO paper's rule)")
    parser.add_argument("--decontaminate-against", nargs="+", default=[], metavar="FILE",
                        help="eval problem files (written by verimath prep) to "
                             "decontaminate against")
    parser.add_argument("--ngram", type=int, default=13,
                        help="words per n-gram for decontamination (default 13)")
    parser.add_argument("--min-coverage", type=float, default=0.0, metavar="FRACTION",
                        help="drop only problems whose shared n-grams cover at least this "
                        "fraction of an eval problem's words (default 0: any shared n-gram; "
                        "0.5 spares shared boilerplate)")
    parser.add_argument("--styles", nargs="+", default=["dapo", "boxed"],
                        choices=["dapo", "boxed"],
                        help="answer styles every gold must verify in (default: both)")
    parser.add_argument("--no-verify", action="store_true", help="skip the gold self-check")
    generic = parser.add_argument_group("generic source")
    generic.add_argument("--problem-field", default="problem",
                         help="dotted path of the problem (default: %(default)s)")
    generic.add_argument("--answer-field", default="answer",
                         help="dotted path of the answer, a string or a number "
                              "(default: %(default)s)")
    generic.add_argument("--id-field", help="dotted path of an id to use instead of the row number")
    generic.add_argument("--meta-fields", nargs="+", default=[], metavar="FIELD",
                         help="fields copied into meta")


def rejected_path(output: str) -> str:
    """``out/gsm8k.jsonl`` -> ``out/gsm8k.rejected.jsonl``."""
    p = Path(output)
    return str(p.with_name(p.name[: -len(p.suffix)] + ".rejected.jsonl" if p.suffix else
                           p.name + ".rejected.jsonl"))


def write_jsonl_atomic(records: list[dict], path: str) -> None:
    """Write JSON lines to a temporary file, then rename it over `path`."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for record in records:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _generic_fields(args: argparse.Namespace) -> dict:
    if args.source == "generic":
        return {"problem_field": args.problem_field, "answer_field": args.answer_field,
                "id_field": args.id_field, "meta_fields": args.meta_fields}
    if args.id_field or args.meta_fields or (args.problem_field, args.answer_field) != (
        "problem", "answer"
    ):
        raise ValueError("--problem-field/--answer-field/--id-field/--meta-fields apply only to "
                         "the 'generic' source")
    return {}


def _run(args: argparse.Namespace) -> int:
    from tqdm import tqdm
    from verimath.datasets_prep import report
    from verimath.datasets_prep.pipeline import prepare
    from verimath.envs.problem import ProblemFileError, read_problems, write_problems

    if not args.output.endswith((".jsonl", ".parquet")):
        raise ValueError(f"--output {args.output}: the suffix must be .jsonl or .parquet")
    if args.ngram < 1:
        raise ValueError(f"--ngram must be >= 1, got {args.ngram}")
    if not 0.0 <= args.min_coverage <= 1.0:
        raise ValueError(f"--min-coverage must be between 0 and 1, got {args.min_coverage}")
    if args.output.endswith(".parquet"):
        from verimath.envs.problem import require_pyarrow

        require_pyarrow()  # fail before the work, not after it
    against = []
    for path in args.decontaminate_against:
        try:
            against += read_problems(path)
        except FileNotFoundError:
            raise FileNotFoundError(f"--decontaminate-against {path}: no such file") from None
        except ProblemFileError as exc:
            raise ProblemFileError(
                f"{exc} (--decontaminate-against takes problem files written by verimath "
                "prep; convert the eval set first)") from None
    with tqdm(desc="verify", unit="gold", disable=None, leave=False, file=sys.stderr) as bar:
        result = prepare(
            args.source, args.input, split=args.split, name=args.name, subset=args.subset,
            skip_bad=args.skip_bad, verify=not args.no_verify, styles=args.styles,
            integer_answers=args.integer_answers, against=against, ngram=args.ngram,
            min_coverage=args.min_coverage,
            progress=lambda rows, total: tqdm(rows, total=total, desc="read", unit="row",
                                              disable=None, leave=False, file=sys.stderr),
            on_chunk=bar.update, **_generic_fields(args),
        )
    print(report.summary(result, input=args.input))
    if result.rejected:
        side = args.rejected or rejected_path(args.output)
        write_jsonl_atomic([r.to_dict() for r in result.rejected], side)
        print(f"{len(result.rejected)} rejected rows with reasons -> {side}")
    if not result.problems:
        print(f"verimath prep: error: no problem left to write from {args.input} (see the "
              "counts above)", file=sys.stderr)
        return 2
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    write_problems(result.problems, args.output)
    print(f"wrote {len(result.problems)} problems -> {args.output}")
    return 0


def main(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except (ValueError, OSError, ImportError) as exc:  # ProblemFileError is a ValueError
        print(f"verimath prep: error: {exc}", file=sys.stderr)
        return 2
