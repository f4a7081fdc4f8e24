"""The resumable sampling loop of ``verimath eval`` and its output directory.

The output directory holds::

    settings.json   what was evaluated and how (model, data, k, sampling, verifier and its
                    conventions, seed)
    samples.jsonl   one line per sample: index, id, source, sample, response, extracted,
                    correct, timed_out, length, truncated
    summary.json    settings + overall and per-source metrics (``eval_report.summarize``)
    results.md      the markdown table

Problems are sampled in fixed chunks of ``max(1, batch_size // k)`` consecutive problems.
Each problem ``i`` has its own seed, ``SeedSequence([seed, i])``, and with an engine that
takes ``seeds`` (the Hugging Face engine does) each sample draws from its own RNG, so a
problem's samples do not depend on what else is in its batch. A rerun with the same
settings reads ``samples.jsonl``, keeps the problems whose ``k`` samples are all there (a
torn last line is dropped), and samples the rest; a chunk that was cut short is sampled
again whole and only its missing problems are written, so the final table equals an
uninterrupted run's.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from verimath.envs import Problem
from verimath.rewards import score_batch
from verimath.trainer.core.protocols import SamplingParams
from verimath.trainer.evaluation.evaluate import generate_seeded, problem_seed
from verimath.trainer.rollout.episodes import build_prompt_ids, format_prompts

SETTINGS, SAMPLES, SUMMARY, TABLE = "settings.json", "samples.jsonl", "summary.json", "results.md"


@dataclass(frozen=True)
class EvalSettings:
    """Everything that decides the samples and verdicts (compared on resume)."""

    model: str
    data: str
    level: int | None
    problem_seed: int | None
    num_problems: int
    k: int
    greedy: bool
    temperature: float
    top_p: float
    max_new_tokens: int
    template: str
    use_chat_template: bool
    answer_style: str
    mode: str
    timeout: float
    seed: int
    engine: str
    dtype: str
    conventions: str = "default"

    def sampling_params(self) -> SamplingParams:
        return SamplingParams(temperature=self.temperature, top_p=self.top_p,
                              max_new_tokens=self.max_new_tokens, greedy=self.greedy)

    def to_dict(self) -> dict[str, Any]:
        """The settings as written to ``settings.json``; ``conventions`` only when not
        ``"default"``, so the files of an evaluation with the default conventions are what
        they were before the setting existed, and such evaluations resume."""
        out = dataclasses.asdict(self)
        if out["conventions"] == "default":
            del out["conventions"]
        return out


def check_output_dir(output: Path, settings: EvalSettings) -> bool:
    """True when ``output`` holds an earlier evaluation with these settings (resume).

    Raises:
        ValueError: ``output`` is a file, or holds an evaluation with other settings.
    """
    if output.exists() and not output.is_dir():
        raise ValueError(f"--output {output} is a file; pass a directory")
    path = output / SETTINGS
    if not path.is_file():
        if (output / SAMPLES).exists():
            raise ValueError(f"--output {output} holds {SAMPLES} but no {SETTINGS}; "
                             "pass a new directory")
        return False
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise ValueError(f"{path} is not valid JSON; pass a new --output directory") from None
    now = settings.to_dict()
    changed = sorted(k for k in set(now) | set(earlier) if now.get(k) != earlier.get(k))
    if changed:
        diff = ", ".join(f"{k}: {earlier.get(k)!r} -> {now.get(k)!r}" for k in changed[:4])
        raise ValueError(f"--output {output} holds an evaluation with other settings ({diff}); "
                         "rerun with the same options to resume, or pass a new --output")
    return True


class SampleStore:
    """``samples.jsonl``: the complete problems of an earlier run, then appended chunks;
    ``records`` holds every sample without its response text.

    Opening drops the lines of problems with fewer than ``k`` samples and any torn line (the
    file is rewritten atomically with what is kept). Use as a context manager or call
    ``close()`` (idempotent).
    """

    def __init__(self, path: Path, *, k: int, problems: list[Problem]) -> None:
        self.path, self.k = path, k
        kept = self._complete(self._read(path), problems) if path.exists() else []
        self._rewrite(kept)
        self.records = [_without_response(r) for r in kept]
        self.done = {r["index"] for r in self.records}
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - owned resource

    @staticmethod
    def _read(path: Path) -> list[dict]:
        records = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line torn by an interruption
            if isinstance(record, dict) and {"index", "sample", "correct"} <= record.keys():
                records.append(record)
        return records

    def _complete(self, records: list[dict], problems: list[Problem]) -> list[dict]:
        by_index: dict[int, dict[int, dict]] = {}
        for r in records:
            by_index.setdefault(int(r["index"]), {})[int(r["sample"])] = r
        kept = []
        for index in sorted(by_index):
            samples = by_index[index]
            same = index < len(problems) and samples.get(0, {}).get("id") == problems[index].id
            if same and sorted(samples) == list(range(self.k)):
                kept += [samples[j] for j in range(self.k)]
        return kept

    def _rewrite(self, records: list[dict]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        os.replace(tmp, self.path)

    def append(self, records: list[dict]) -> None:
        self._file.write("".join(json.dumps(r) + "\n" for r in records))
        self._file.flush()
        self.records += [_without_response(r) for r in records]
        self.done.update(r["index"] for r in records)

    @property
    def accuracy(self) -> float:
        return float(np.mean([r["correct"] for r in self.records])) if self.records else 0.0

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> SampleStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _without_response(record: dict) -> dict:
    """A record as kept in memory for the summary (responses can be megabytes in all)."""
    return {k: v for k, v in record.items() if k != "response"}


def sample_and_verify(engine, tokenizer, problems: list[Problem], settings: EvalSettings,
                      store: SampleStore, *, batch_size: int,
                      on_chunk: Callable[[int], None] = lambda n: None) -> None:
    """Sample and verify every problem not yet in ``store``, a chunk at a time."""
    s, k = settings, settings.k
    prompt_ids = build_prompt_ids(tokenizer, format_prompts(problems, s.template),
                                  use_chat_template=s.use_chat_template)
    params = s.sampling_params()
    per_chunk = max(1, batch_size // k)
    for start in range(0, len(problems), per_chunk):
        chunk = list(range(start, min(start + per_chunk, len(problems))))
        missing = [i for i in chunk if i not in store.done]
        if not missing:
            continue
        out = generate_seeded(engine, [prompt_ids[i] for i in chunk], params, n=k,
                              seeds=[problem_seed(s.seed, i) for i in chunk])
        golds = [problems[i].answer for i in chunk for _ in range(k)]
        scores = score_batch(out.texts, golds, style=s.answer_style, mode=s.mode,
                             timeout=s.timeout, conventions=s.conventions)
        records = []
        for row, (i, j) in enumerate((i, j) for i in chunk for j in range(k)):
            if i in missing:
                records.append(_record(problems[i], i, j, out, scores, row))
        store.append(records)
        on_chunk(len(missing))


def _record(problem: Problem, index: int, sample: int, out, scores, row: int) -> dict:
    return {"index": index, "id": problem.id, "source": problem.source, "sample": sample,
            "response": out.texts[row], "extracted": scores.extracted[row],
            "correct": bool(scores.correct[row]), "timed_out": bool(scores.timed_out[row]),
            "length": len(out.response_ids[row]), "truncated": bool(out.truncated[row])}
