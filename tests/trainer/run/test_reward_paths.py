"""The step's ``reward/path_*`` and ``reward/rule_*`` shares: which extraction path found each
generated answer and which rule decided its reward, from the engine's texts to the metrics."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.rewards import score_batch
from verimath.rewards.batch import RULES
from verimath.rewards.extraction.final_answer import PATHS
from verimath.trainer.algo.dynamic_sampling import SamplingStats
from verimath.trainer.core.distributed import Comm
from verimath.trainer.core.groups import RoundStats
from verimath.trainer.core.protocols import Rollouts, SamplingParams
from verimath.trainer.model.tiny import make_char_tokenizer
from verimath.trainer.rollout.episodes import EpisodeSource
from verimath.trainer.run.step import path_shares, step_metrics

TOKENIZER = make_char_tokenizer()
# One response per answer format, with the path the flexible style finds it by.
FORMATS = {
    "Answer: 12": "answer_line",
    "We add them, so \\boxed{12}.": "box",
    "<think>add</think><answer>12</answer>": "tag",
    "A: 12": "a_line",
    "The answer is 12.": "phrase",
    "First 5 + 7 = 12": "last_math",
    "I cannot solve this.": "none",
}


class ScriptedEngine:
    """Answers sample ``k`` of a round with ``texts[k % len(texts)]``."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    def generate(self, prompt_ids, params, *, n=1, seeds=None) -> Rollouts:
        texts = [self.texts[k % len(self.texts)] for k in range(len(prompt_ids) * n)]
        ids = [TOKENIZER(t, add_special_tokens=False)["input_ids"] for t in texts]
        return Rollouts(prompt_ids=[p for p in prompt_ids for _ in range(n)],
                        response_ids=ids, texts=texts, truncated=np.zeros(len(texts), bool))


def _source(texts, *, num_problems, group_size, **kwargs) -> EpisodeSource:
    return EpisodeSource(
        tokenizer=TOKENIZER, engine=ScriptedEngine(texts), params=SamplingParams(),
        num_problems=num_problems, group_size=group_size, template="{prompt}\n",
        use_chat_template=False, family="Arithmetic", level=1, seed=0, train_file=None,
        excluded=set(), reward_kwargs={"style": "flexible"}, **kwargs)


def _metrics(rounds: RoundStats) -> dict[str, float]:
    sampling = SamplingStats(rounds=1, generated_groups=1, kept_groups=0, target_groups=1,
                             informative_groups=0, all_correct_groups=0, all_wrong_groups=0,
                             hit_cap=False)
    return step_metrics(sampling, rounds, {}, [], comm=Comm(), seconds_update=0.0,
                        seconds_step=0.0)


def test_a_step_logs_the_share_of_each_answer_format_it_generated():
    texts = list(FORMATS) + ["Answer: 3"]  # 8 responses a round: answer_line twice
    with _source(texts, num_problems=2, group_size=4) as source:
        source.next_round(0)
        source.next_round(1)
        metrics = _metrics(source.pop_stats())
    expected = Counter(FORMATS.values())
    expected["answer_line"] += 1
    for path in PATHS:
        assert metrics[f"reward/path_{path}"] == expected[path] / 8, path
    reference = score_batch(texts, ["12"] * len(texts), style="flexible").path_shares()
    for rule in RULES:  # the rule of each response, as the rewards library decides it
        assert metrics[f"reward/rule_{rule}"] == reference[f"reward/rule_{rule}"], rule
    assert metrics["reward/rule_no_answer"] == 1 / 8
    assert sum(metrics[f"reward/path_{p}"] for p in PATHS) == 1.0
    assert sum(metrics[f"reward/rule_{r}"] for r in RULES) == 1.0


def test_a_step_that_generated_nothing_logs_no_shares():
    metrics = _metrics(RoundStats())
    assert not any(k.startswith(("reward/path_", "reward/rule_")) for k in metrics)


@settings(max_examples=30, deadline=None)
@given(picks=st.lists(st.tuples(st.sampled_from(PATHS), st.sampled_from(RULES)),
                      min_size=1, max_size=40))
def test_shares_are_the_fractions_of_responses_and_sum_to_one(picks):
    rounds = RoundStats(paths=[p for p, _ in picks], rules=[r for _, r in picks])
    shares = path_shares(rounds, Comm())
    n = len(picks)
    assert set(shares) == {f"reward/path_{p}" for p in PATHS} | {f"reward/rule_{r}" for r in RULES}
    for path in PATHS:
        assert shares[f"reward/path_{path}"] == sum(p == path for p, _ in picks) / n
    for rule in RULES:
        assert shares[f"reward/rule_{rule}"] == sum(r == rule for _, r in picks) / n
    assert abs(sum(v for k, v in shares.items() if "/path_" in k) - 1) < 1e-12
    assert abs(sum(v for k, v in shares.items() if "/rule_" in k) - 1) < 1e-12


def test_round_stats_of_two_rounds_add_up_as_the_async_source_adds_them():
    """The asynchronous source adds each field of the rounds' stats (``+``)."""
    a = RoundStats(paths=["box"], rules=["fast"], curriculum=[["curriculum/level/X", 2.0]])
    b = RoundStats(paths=["none"], rules=["no_answer"],
                   curriculum=[["curriculum/level/X", 3.0]])
    total = RoundStats(**{k: getattr(a, k) + getattr(b, k) for k in vars(a)})
    shares = path_shares(total, Comm())
    assert shares["reward/path_box"] == shares["reward/path_none"] == 0.5
    assert _metrics(total)["curriculum/level/X"] == 3.0  # the latest round's value
