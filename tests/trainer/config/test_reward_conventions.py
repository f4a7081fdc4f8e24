"""``reward.conventions``: checked with the config, and the grading of every verdict the trainer
makes with it (training rewards, held-out evaluation, the warm start's probe, ``verimath
eval``), on answers the default and strict conventions grade differently."""

from __future__ import annotations

import json

import numpy as np
import pytest
from verimath.envs import Problem, write_problems
from verimath.trainer.config.choices import CONVENTION_NAMES
from verimath.trainer.config.files import load_config
from verimath.trainer.core.distributed import Comm
from verimath.trainer.core.protocols import Rollouts
from verimath.trainer.model.tiny import make_char_tokenizer

TOKENIZER = make_char_tokenizer()
# A bare value against a gold "name = value": right by default, wrong under strict
# (docs/conventions.md, name_value).
NAMED = [Problem(id=f"named/{i}", prompt=f"Solve 2y = {2 * i}.", answer=f"y = {i}",
                 source="named") for i in range(1, 3)]
BY_CONVENTIONS = {"default": True, "strict": False}


class ValueEngine:
    """Answers every prompt ``Solve 2y = 2i.`` with ``Answer: i`` (the bare value)."""

    def generate(self, prompt_ids, params, *, n=1, seeds=None) -> Rollouts:
        prompts = [TOKENIZER.decode(p) for p in prompt_ids for _ in range(n)]
        texts = [f"Answer: {int(p.split('= ')[1].split('.')[0]) // 2}" for p in prompts]
        ids = [TOKENIZER(t, add_special_tokens=False)["input_ids"] for t in texts]
        return Rollouts(prompt_ids=[p for p in prompt_ids for _ in range(n)], response_ids=ids,
                        texts=texts, truncated=np.zeros(len(texts), bool))

    def close(self) -> None:
        pass


def config(conventions: str, *overrides: str):
    return load_config("tiny", [f"reward.conventions={conventions}", "reward.mode=symbolic",
                                "eval.k=2", *overrides])


def test_the_setting_parses_and_a_wrong_one_is_named():
    assert load_config("tiny").reward.conventions == "default"
    assert config("strict").reward.conventions == "strict"
    with pytest.raises(ValueError, match="reward.conventions must be one of default, strict, "
                                         "got 'lenient'"):
        config("lenient")
    with pytest.raises(ValueError, match="reward.conventions: expected str"):
        config("{decimal_digits: 4}")


def test_each_name_is_one_the_rewards_package_reads():
    from verimath.rewards import STRICT_CONVENTIONS, Conventions
    from verimath.rewards.equality.conventions import as_conventions

    assert [as_conventions(name) for name in CONVENTION_NAMES] == [Conventions(),
                                                                  STRICT_CONVENTIONS]


@pytest.mark.parametrize("conventions", CONVENTION_NAMES)
def test_training_rewards_follow_the_setting(conventions, tmp_path):
    from verimath.trainer.run.setup import _episodes

    path = tmp_path / "named.jsonl"
    write_problems(NAMED, path)
    cfg = config(conventions, f"data.train_file={path}", "rollout.gen_prompts=2",
                 "rollout.group_size=2", "algo.train_prompts=2", "algo.mini_batch_prompts=2")
    with _episodes(cfg, TOKENIZER, ValueEngine(), [], Comm()) as source:
        groups, correct = source.next_round(0)
    assert correct.shape == (2, 2)
    assert correct.all() if BY_CONVENTIONS[conventions] else not correct.any()
    expected = 1.0 if BY_CONVENTIONS[conventions] else -1.0
    assert all(np.array_equal(g.rewards, [expected, expected]) for g in groups)


@pytest.mark.parametrize("conventions", CONVENTION_NAMES)
def test_heldout_evaluation_follows_the_setting(conventions):
    from verimath.trainer.run.heldout import heldout_metrics

    metrics = heldout_metrics(ValueEngine(), TOKENIZER, NAMED, config(conventions))
    right = float(BY_CONVENTIONS[conventions])
    assert (metrics["eval/avg@2"], metrics["eval/greedy"]) == (right, right)


@pytest.mark.parametrize("conventions", CONVENTION_NAMES)
def test_the_warm_start_probe_follows_the_setting(conventions, monkeypatch):
    import torch
    import verimath.trainer.rollout.hf_engine as hf_engine
    import verimath.trainer.run.setup as setup
    from verimath.trainer.warmstart.supervised import probe_evaluator

    monkeypatch.setattr(hf_engine, "HFRolloutEngine", lambda model, tokenizer: ValueEngine())
    accuracy = probe_evaluator(torch.nn.Linear(1, 1), TOKENIZER, NAMED, k=2, temperature=1.0,
                               top_p=1.0, max_new_tokens=12, template="{prompt}\n",
                               use_chat_template=False, mode="symbolic",
                               conventions=conventions)
    assert accuracy() == float(BY_CONVENTIONS[conventions])
    # the trainer builds its probe with the run's conventions
    seen = {}
    monkeypatch.setattr(setup, "probe_evaluator",
                        lambda model, tokenizer, problems, **kw: seen.update(kw))
    monkeypatch.setattr(setup, "warmstart", lambda *args, **kwargs: {})
    cfg = config(conventions, "warmstart.steps=1", "warmstart.target_accuracy=0.5",
                 "logging.progress=false")
    setup._warm_start(torch.nn.Linear(1, 1), TOKENIZER, cfg, [], print, Comm())
    assert seen["conventions"] == conventions


@pytest.mark.parametrize("conventions", CONVENTION_NAMES)
def test_verimath_eval_follows_its_conventions(conventions, tmp_path):
    from verimath.trainer.evaluation.cli import run_and_report
    from verimath.trainer.evaluation.run import EvalSettings

    settings = EvalSettings(
        model="m", data="named.jsonl", level=None, problem_seed=None, num_problems=2, k=2,
        greedy=False, temperature=1.0, top_p=1.0, max_new_tokens=12, template="{prompt}\n",
        use_chat_template=False, answer_style="dapo", mode="symbolic", timeout=5.0, seed=0,
        engine="hf", dtype="float32", conventions=conventions)
    summary = run_and_report(ValueEngine(), TOKENIZER, NAMED, settings, tmp_path,
                             batch_size=8, progress=False)
    right = float(BY_CONVENTIONS[conventions])
    assert (summary["overall"]["avg@2"], summary["overall"]["pass@2"]) == (right, right)
    written = json.loads((tmp_path / "settings.json").read_text())
    # the default is left out, so earlier evaluations (written before the setting) resume
    assert written.get("conventions") == (None if conventions == "default" else conventions)


def test_majority_votes_group_answers_by_the_conventions():
    from verimath.trainer.evaluation.report import summarize

    # "3" is right; by default the wrong "4" and "x = 4" are one answer and outvote it
    records = [{"index": 0, "id": "p", "source": "s", "sample": j, "extracted": answer,
                "correct": answer == "3", "length": 3, "truncated": False}
               for j, answer in enumerate(["3", "4", "x = 4"])]
    assert summarize(records, mode="symbolic")["overall"]["maj@3"] == 0.0
    assert summarize(records, mode="symbolic", conventions="strict")["overall"]["maj@3"] == 1.0
