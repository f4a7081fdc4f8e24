"""The supervised warm start: target construction, noisy answers, the stopping rule, and
that it learns."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from verimath.envs import generate, worked_solution
from verimath.trainer.config import WarmstartConfig
from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model
from verimath.trainer.warmstart.supervised import (
    NOISE_OFFSETS,
    StopRule,
    describe_stop,
    noisy_answers,
    probe_evaluator,
    probe_problems,
    supervised_pairs,
    train_until,
    warmstart,
)

TOKENIZER = make_char_tokenizer()
answers = st.lists(st.one_of(st.integers(-999, 999).map(str), st.sampled_from(["3/4", "x"])),
                   max_size=40)


@given(answers, st.integers(0, 2**32 - 1))
def test_noise_zero_is_identity_and_one_changes_every_integer(values, seed):
    rng = np.random.default_rng(seed)
    assert noisy_answers(values, noise=0.0, rng=rng) == values
    changed = noisy_answers(values, noise=1.0, rng=rng)
    for old, new in zip(values, changed):
        if old.lstrip("-").isdigit():
            assert int(new) - int(old) in NOISE_OFFSETS
        else:
            assert new == old


def test_noise_fraction_is_about_right():
    values = [str(i) for i in range(4000)]
    out = noisy_answers(values, noise=0.3, rng=np.random.default_rng(0))
    frac = np.mean([a != b for a, b in zip(values, out)])
    assert abs(frac - 0.3) < 0.03
    with pytest.raises(ValueError, match="noise must be in"):
        noisy_answers(values, noise=1.5, rng=np.random.default_rng(0))


def test_supervised_pairs_hand_worked():
    problem = generate("Arithmetic", 0, 4, 1)  # "What is 4 + 8?" -> 12
    prompts, targets = supervised_pairs([problem], TOKENIZER, template="{prompt}\n",
                                        use_chat_template=False, answer_prefix="Answer: ")
    assert TOKENIZER.decode(prompts[0]) == problem.prompt + "\n"
    assert TOKENIZER.decode(targets[0][:-1]) == "Answer: " + problem.answer
    assert targets[0][-1] == TOKENIZER.eos_token_id
    _, wrong = supervised_pairs([problem], TOKENIZER, template="{prompt}\n",
                                use_chat_template=False, answer_prefix="", answers=["99"])
    assert TOKENIZER.decode(wrong[0][:-1]) == "99"


def test_warm_start_lowers_the_loss():
    model = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    kwargs = {"family": "Arithmetic", "level": 1, "seed": 3, "excluded": set(),
              "batch_size": 16, "lr": 1e-2, "template": "{prompt}\n",
              "use_chat_template": False, "answer_prefix": "Answer: "}
    first = warmstart(model, TOKENIZER, steps=1, **kwargs)["warmstart/loss"]
    later = warmstart(model, TOKENIZER, steps=30, **kwargs)["warmstart/loss"]
    assert later < first / 2
    assert warmstart(model, TOKENIZER, steps=0, **kwargs) == {"warmstart/steps": 0.0}


def test_solution_targets_are_the_worked_solution_then_eos():
    problems = [generate("Chain", 5, i, 3) for i in range(3)]
    prompts, targets = supervised_pairs(problems, TOKENIZER, template="{prompt}\n",
                                        use_chat_template=False, answer_prefix="Answer: ",
                                        targets="solution")
    for problem, prompt, target in zip(problems, prompts, targets):
        assert TOKENIZER.decode(prompt) == problem.prompt + "\n"
        assert target[-1] == TOKENIZER.eos_token_id
        assert TOKENIZER.decode(target[:-1]) == worked_solution(problem)
        assert TOKENIZER.decode(target[:-1]).endswith("Answer: " + problem.answer)
    with pytest.raises(ValueError, match="no worked solution"):
        supervised_pairs([generate("Arithmetic", 0, 0, 1)], TOKENIZER, template="{prompt}",
                         use_chat_template=False, answer_prefix="", targets="solution")
    with pytest.raises(ValueError, match="warmstart.targets"):
        supervised_pairs(problems, TOKENIZER, template="{prompt}", use_chat_template=False,
                         answer_prefix="", targets="steps")


def test_answer_targets_are_the_default():
    problems = [generate("Chain", 5, i, 3) for i in range(3)]
    kwargs = {"template": "{prompt}\n", "use_chat_template": False, "answer_prefix": "A: "}
    assert supervised_pairs(problems, TOKENIZER, **kwargs) == \
        supervised_pairs(problems, TOKENIZER, targets="answer", **kwargs)
    _, targets = supervised_pairs(problems, TOKENIZER, **kwargs)
    assert [TOKENIZER.decode(t[:-1]) for t in targets] == ["A: " + p.answer for p in problems]


def _run_rule(accuracies, *, steps, every, target, checks, near_every=0):
    """train_until with a counting train step and a fake evaluator replaying ``accuracies``."""
    trained, calls = [], iter(accuracies)
    result = train_until(lambda: trained.append(1), lambda: next(calls), steps=steps,
                         rule=StopRule(target, every, checks, near_every))
    return result, len(trained)


def _check_steps(accuracies, *, steps, every, target, near_every):
    """The steps the rule checks at while none stops it (the reference schedule)."""
    out, step, best = [], every, 0.0
    for accuracy in accuracies:
        if step > steps:
            break
        out.append(step)
        best = max(best, accuracy)
        step += near_every if near_every and best >= target / 2 else every
    return out


def _first_run(hits: list[bool], checks: int) -> int | None:
    """Index of the check ending the first ``checks`` consecutive hits (the reference)."""
    run = 0
    for i, hit in enumerate(hits):
        run = run + 1 if hit else 0
        if run >= checks:
            return i
    return None


@given(st.lists(st.floats(0, 1), max_size=30), st.integers(1, 7), st.integers(1, 4),
       st.integers(1, 150), st.floats(0.05, 1), st.sampled_from([0, 1, 3]))
def test_stop_rule_stops_at_the_first_consecutive_hits_and_respects_the_cap(
        accuracies, every, checks, steps, target, near_every):
    accuracies = accuracies + [0.0] * steps  # enough checks for any cap
    result, trained = _run_rule(accuracies, steps=steps, every=every, target=target,
                                checks=checks, near_every=near_every)
    assert trained == result["steps"] <= steps
    at = _check_steps(accuracies, steps=steps, every=every, target=target, near_every=near_every)
    expected = _first_run([a >= target for a in accuracies[:len(at)]], checks)
    if expected is None:
        assert not result["reached"] and result["steps"] == steps
        assert result["history"] == list(zip(at, accuracies))
    else:
        assert result["reached"] and result["steps"] == at[expected]
        assert result["history"] == list(zip(at, accuracies))[:expected + 1]


def test_checks_come_closer_once_half_the_target_is_reached():
    result, _ = _run_rule([0.1, 0.2, 0.3, 0.5, 0.6], steps=200, every=50, target=0.4,
                          checks=2, near_every=10)
    assert [s for s, _ in result["history"]] == [50, 100, 110, 120, 130]
    assert result["reached"] and result["steps"] == 130


def test_stop_rule_needs_consecutive_hits_not_a_single_noisy_one():
    noisy = [0.1, 0.4, 0.2, 0.4, 0.41, 0.9]
    result, _ = _run_rule(noisy, steps=100, every=10, target=0.35, checks=2)
    assert result == {"steps": 50, "reached": True, "trained": 50,
                      "history": [(10, 0.1), (20, 0.4), (30, 0.2), (40, 0.4), (50, 0.41)]}
    assert "stopped at step 50 of at most 100" in describe_stop(result, StopRule(0.35, 10, 2), 100)
    capped, trained = _run_rule([0.4, 0.1] * 10, steps=95, every=10, target=0.35, checks=2)
    assert trained == 95 and not capped["reached"] and len(capped["history"]) == 9
    assert "CAP REACHED" in describe_stop(capped, StopRule(0.35, 10, 2), 95)
    none, trained = _run_rule([], steps=7, every=1, target=None, checks=2)
    assert trained == 7 and none == {"steps": 7, "reached": False, "history": [], "trained": 7}


def test_probe_set_avoids_the_excluded_prompts_and_is_fixed():
    held = {generate("Chain", 12345, i, 3).prompt for i in range(50)}
    probe = probe_problems("Chain", 3, seed=24680, count=40, excluded=held)
    assert len(probe) == 40 and len({p.prompt for p in probe}) == 40
    assert not held & {p.prompt for p in probe}
    assert probe == probe_problems("Chain", 3, seed=24680, count=40, excluded=held)


def test_warmstart_config_checks_its_new_fields():
    assert WarmstartConfig().targets == "answer" and WarmstartConfig().target_accuracy is None
    for bad, field in [({"targets": "steps"}, "warmstart.targets"),
                       ({"targets": "solution", "noise": 0.5, "flaws": []}, "warmstart.flaws"),
                       ({"target_accuracy": 0.0}, "warmstart.target_accuracy"),
                       ({"eval_every": 0}, "warmstart.eval_every"),
                       ({"target_checks": 0}, "warmstart.target_checks"),
                       ({"near_every": -1}, "warmstart.near_every"),
                       ({"probe_problems": 0}, "warmstart.probe_problems")]:
        with pytest.raises(ValueError, match=field):
            WarmstartConfig(**bad)


def test_warm_start_with_a_target_stops_early_and_reports_it():
    model = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    said, values = [], iter([0.1, 0.5, 0.6])
    out = warmstart(model, TOKENIZER, family="Chain", level=1, seed=3, excluded=set(),
                    steps=20, batch_size=4, lr=1e-2, template="{prompt}\n",
                    use_chat_template=False, answer_prefix="", targets="solution",
                    stop=StopRule(0.5, 2, 2), evaluate=lambda: next(values), echo=said.append)
    assert out["warmstart/steps"] == 6.0 and out["warmstart/reached"] == 1.0
    assert out["warmstart/probe_accuracy"] == 0.6
    assert len(said) == 4 and "stopped at step 6 of at most 20" in said[-1]
    assert said[0].startswith("warm start step 2: probe accuracy 0.100")


def test_probe_evaluator_is_seeded_and_leaves_the_training_state_alone():
    import torch

    model = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    problems = probe_problems("Chain", 1, seed=1, count=4, excluded=set())
    evaluate = probe_evaluator(model, TOKENIZER, problems, k=2, temperature=1.0, top_p=1.0,
                               max_new_tokens=6, template="{prompt}\n", use_chat_template=False,
                               answer_style="dapo", mode="integer", seed=5)
    model.train()
    torch.manual_seed(0)
    state = torch.get_rng_state()
    first = evaluate()
    assert 0.0 <= first <= 1.0 and evaluate() == first
    assert model.training and torch.equal(torch.get_rng_state(), state)
