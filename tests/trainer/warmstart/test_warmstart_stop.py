"""The bracketed warm-start stop (``fine_every``): replays the gap of a crossing with fine
checks, keeps the checked weights closest to the target, never passes the step cap, and the
supervised trainer's snapshots replay exactly."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.trainer.config import WarmstartConfig
from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model
from verimath.trainer.rollout.episodes import ExcludingGenerator
from verimath.trainer.warmstart.stopping import StopRule, Trainer, describe_stop, train_until
from verimath.trainer.warmstart.supervised import (
    SupervisedTrainer,
    probe_evaluator,
    probe_problems,
    warmstart,
)

TOKENIZER = make_char_tokenizer()


class FakeTrainer:
    """A trainer whose state is its step; the accuracy is a function of that step."""

    def __init__(self) -> None:
        self.position, self.highest, self.trained = 0, 0, 0

    def step(self) -> None:
        self.position += 1
        self.trained += 1
        self.highest = max(self.highest, self.position)

    def restore(self, position: int) -> None:
        self.position = position

    def trainer(self) -> Trainer:
        return Trainer(self.step, lambda: self.position, self.restore)


def _run(curve, *, steps, target, every=50, near=10, fine=2, noise=None, tolerance=0.01):
    """train_until on ``curve`` (accuracy by step) with a fine probe reading the curve and a
    cheap one reading ``noise`` (accuracy by step; default: the curve)."""
    fake = FakeTrainer()
    cheap = noise or curve
    result = train_until(fake.trainer(), lambda: cheap(fake.position), steps=steps,
                         rule=StopRule(target, every, 1, near, fine, tolerance),
                         evaluate_fine=lambda: curve(fake.position))
    return result, fake


def _ramp(start: int, slope: float):
    return lambda s: min(1.0, max(0.0, (s - start) * slope))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 600), st.floats(0.002, 0.2), st.floats(0.05, 0.95),
       st.integers(20, 800), st.sampled_from([(50, 10, 2), (50, 0, 2), (7, 3, 1), (10, 10, 5)]))
def test_a_rising_curve_stops_at_the_fine_check_closest_to_the_target(
        start, slope, target, steps, cadence):
    every, near, fine = cadence
    curve = _ramp(start, slope)
    result, fake = _run(curve, steps=steps, target=target, every=every, near=near, fine=fine)
    assert fake.highest <= steps and result["trained"] == fake.trained
    assert fake.position == result["steps"]  # the kept weights are the reported ones
    first = next((s for s in range(steps + 1) if curve(s) >= target), None)
    if not result["reached"]:
        assert fake.position == steps and (first is None or first > steps - every)
        return
    kept = result["steps"]
    assert result["accuracy"] == curve(kept)
    if "bracket" not in result:  # the fine probe was at the target where the cheap one crossed
        assert first == 0 and kept == 0
        return
    (low_step, low), (high_step, high) = result["bracket"]
    assert low < target <= high and 0 < high_step - low_step <= fine
    assert low_step < first <= high_step  # the fine bracket holds the first crossing
    assert high_step - low_step == 1 or min(target - low, high - target) <= 0.01
    assert kept == (low_step if target - low < high - target else high_step)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 400), st.floats(0.005, 0.1), st.floats(0.1, 0.9), st.integers(50, 600),
       st.lists(st.floats(-0.15, 0.15), min_size=1, max_size=50))
def test_a_noisy_cheap_probe_never_passes_the_cap_and_is_deterministic(
        start, slope, target, steps, noise):
    curve = _ramp(start, slope)
    noisy = lambda s: curve(s) + noise[s % len(noise)]  # noqa: E731
    result, fake = _run(curve, steps=steps, target=target, noise=noisy)
    again, _ = _run(curve, steps=steps, target=target, noise=noisy)
    assert result == again
    assert fake.highest <= steps and fake.position == result["steps"] <= steps
    if result["reached"]:
        assert result["accuracy"] == curve(result["steps"])
        fine = [a for s, a in result["history"] if s == result["steps"]]
        assert result["accuracy"] in fine  # the kept weights were checked by the fine probe


def test_a_hand_worked_bracket():
    # cheap probe 5 points high; the fine curve crosses 0.34 at step 117
    result, fake = _run(_ramp(100, 0.02), steps=1000, target=0.34,
                        noise=lambda s: _ramp(100, 0.02)(s) + 0.05)
    assert [s for s, _ in result["history"]] == [50, 100, 150, 100, 110, 120, 112, 114, 116,
                                                  118, 117]
    assert result["steps"] == 117 == fake.position and result["trained"] == 179
    assert result["accuracy"] == pytest.approx(0.34)
    closer, _ = _run(_ramp(100, 0.02), steps=1000, target=0.325)  # 116 misses by 0.005
    assert closer["steps"] == 116 and closer["accuracy"] == pytest.approx(0.32)
    line = describe_stop(closer, StopRule(0.325, 50, 1, 10, 2), 1000)
    assert "kept the weights of step 116" in line and "fine probe accuracy 0.320" in line


def test_a_jump_across_the_fine_gap_is_checked_step_by_step():
    jump = {100: 0.30, 101: 0.35, 102: 0.40}  # 0.30 -> 0.40 in two steps: both miss by 0.04
    curve = lambda s: jump.get(s, 0.0 if s < 100 else 0.5)  # noqa: E731
    result, fake = _run(curve, steps=300, target=0.34, every=10, near=0, fine=2)
    assert [s for s, _ in result["history"]][-4:] == [110, 100, 102, 101]
    assert result["bracket"] == ((100, 0.30), (101, 0.35))
    assert result["steps"] == 101 == fake.position and result["accuracy"] == 0.35
    loose, _ = _run(curve, steps=300, target=0.34, every=10, near=0, fine=2, tolerance=0.05)
    assert loose["steps"] == 100 and loose["bracket"] == ((100, 0.30), (102, 0.40))


def test_a_cap_below_the_target_says_so():
    result, fake = _run(lambda s: 0.1, steps=95, target=0.5)
    assert not result["reached"] and fake.position == fake.trained == 95
    assert "CAP REACHED" in describe_stop(result, StopRule(0.5, 50, 1, 10, 2), 95)
    fake = FakeTrainer()
    plain = train_until(fake.step, None, steps=7, rule=StopRule(None, 50, 1, 10, 2))
    assert plain == {"steps": 7, "reached": False, "history": [], "trained": 7}


def test_a_bracketed_rule_needs_its_pieces_and_one_check():
    with pytest.raises(ValueError, match="checks must be 1"):
        StopRule(0.3, 50, 2, 10, 2)
    with pytest.raises(ValueError, match="snapshot, restore and evaluate_fine"):
        train_until(lambda: None, lambda: 0.0, steps=5, rule=StopRule(0.3, 1, 1, 0, 1))
    for bad, field in [({"fine_every": -1}, "warmstart.fine_every"),
                       ({"fine_every": 2, "target_checks": 2}, "warmstart.target_checks"),
                       ({"fine_probe_problems": 50}, "warmstart.fine_probe_problems"),
                       ({"fine_tolerance": -0.1}, "warmstart.fine_tolerance"),
                       ({"noise_after": 0.1}, "warmstart.noise_after"),  # no target
                       ({"noise_after": 0.5, "target_accuracy": 0.3}, "warmstart.noise_after")]:
        with pytest.raises(ValueError, match=field):
            WarmstartConfig(**bad)


def _trainer(model):
    return SupervisedTrainer(model, TOKENIZER, generator=ExcludingGenerator("Chain", set()),
                             seed=3, level=1, batch_size=4, lr=1e-2, template="{prompt}\n",
                             use_chat_template=False, answer_prefix="", noise=0.0,
                             targets="solution")


def test_a_restored_snapshot_retraces_the_same_training():
    model = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    trainer = _trainer(model)
    for _ in range(2):
        trainer.step()
    snap = trainer.snapshot()
    for _ in range(2):
        trainer.step()
    first = {k: v.clone() for k, v in model.state_dict().items()}
    trainer.restore(snap)
    assert trainer.position == 2 and not torch.equal(model.lm_head.weight, first["lm_head.weight"])
    for _ in range(2):
        trainer.step()
    assert trainer.position == 4
    assert all(torch.equal(v, first[k]) for k, v in model.state_dict().items())


def test_noise_after_trains_clean_until_a_check_reaches_it_and_a_restore_keeps_that(
        monkeypatch):
    from verimath.trainer.warmstart import supervised as module

    used, real = [], module.noisy_solutions
    def recording(problems, *, noise, **kwargs):
        used.append(noise)
        return real(problems, noise=noise, **kwargs)

    monkeypatch.setattr(module, "noisy_solutions", recording)
    model = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    scores, said = iter([0.1, 0.3, 0.6]), []
    out = warmstart(model, TOKENIZER, family="Chain", level=1, seed=3, excluded=set(),
                    steps=20, batch_size=4, lr=1e-2, template="{prompt}\n",
                    use_chat_template=False, answer_prefix="", targets="solution", noise=1.0,
                    noise_after=0.25, stop=StopRule(0.5, 2, 1), evaluate=lambda: next(scores),
                    echo=said.append)
    assert out["warmstart/steps"] == 6.0
    assert used == [0.0] * 4 + [1.0] * 2  # the check at step 4 read 0.3 >= 0.25
    assert "warm start step 4: noisy targets (1) from the next step on" in said[2]
    trainer = _trainer(model)
    trainer.noisy = False
    snap = trainer.snapshot()
    trainer.noisy = True
    trainer.restore(snap)
    assert trainer.noisy is False


class Progress:
    """A progress bar that only counts: ``n`` is the trainer's step."""

    def __init__(self) -> None:
        self.n = 0

    def update(self, count: int) -> None:
        self.n += count

    def set_postfix(self, **_) -> None:
        pass

    def refresh(self) -> None:
        pass


def test_warm_start_keeps_the_weights_of_the_closest_fine_check():
    model = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    bar, seen = Progress(), {}
    fine_scores = {0: 0.0, 2: 0.1, 4: 0.45, 6: 0.9}  # by step: 4 is the closest to 0.5

    def fine() -> float:
        seen[bar.n] = {k: v.clone() for k, v in model.state_dict().items()}
        return fine_scores[bar.n]

    said = []
    out = warmstart(model, TOKENIZER, family="Chain", level=1, seed=3, excluded=set(),
                    steps=20, batch_size=4, lr=1e-2, template="{prompt}\n",
                    use_chat_template=False, answer_prefix="", targets="solution",
                    stop=StopRule(0.5, 6, 1, 0, 2, 0.1), evaluate=lambda: 0.7, evaluate_fine=fine,
                    echo=said.append, progress=bar)
    assert sorted(seen) == [0, 2, 4, 6] and bar.n == 4
    assert out["warmstart/steps"] == 4.0 and out["warmstart/probe_accuracy"] == 0.45
    assert out["warmstart/trained_steps"] == 12.0 and out["warmstart/reached"] == 1.0
    assert all(torch.equal(v, seen[4][k]) for k, v in model.state_dict().items())
    assert not torch.equal(model.lm_head.weight, seen[6]["lm_head.weight"])
    assert said[0].startswith("warm start step 6: probe accuracy 0.700")
    assert said[1].startswith("warm start step 0: fine probe accuracy 0.000")
    assert "kept the weights of step 4" in said[-1]


def test_the_probe_is_the_sampled_half_of_the_evaluation():
    from verimath.trainer.evaluation.evaluate import evaluate
    from verimath.trainer.rollout.hf_engine import HFRolloutEngine

    model = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    trainer = SupervisedTrainer(model, TOKENIZER, generator=ExcludingGenerator("Arithmetic"),
                                seed=3, level=1, batch_size=32, lr=1e-2, template="{prompt}\n",
                                use_chat_template=False, answer_prefix="Answer: ", noise=0.0,
                                targets="answer")
    for _ in range(40):
        trainer.step()
    problems = probe_problems("Arithmetic", 1, seed=1, count=8, excluded=set())
    settings = dict(k=4, temperature=1.0, top_p=1.0, max_new_tokens=10, template="{prompt}\n",
                    use_chat_template=False, answer_style="dapo", mode="integer", seed=5,
                    batch_size=8)
    probe = probe_evaluator(model, TOKENIZER, problems, **settings)()
    model.eval()
    full = evaluate(HFRolloutEngine(model, TOKENIZER), TOKENIZER, problems, **settings)
    assert probe == full["eval/avg@4"] and 0 < probe < 1


def test_the_run_gives_the_fine_probe_its_larger_set_and_trains_on_neither(monkeypatch):
    from verimath.trainer.config.files import load_config
    from verimath.trainer.core.distributed import Comm
    from verimath.trainer.rollout.episodes import heldout_problems
    from verimath.trainer.run import setup

    cfg = load_config("chain-base", ["warmstart.steps=4", "warmstart.batch_size=2",
                                "warmstart.eval_every=2", "warmstart.near_every=0",
                                "warmstart.probe_problems=3", "warmstart.fine_probe_problems=7",
                                "model.tiny_hidden_size=32", "model.tiny_layers=1",
                                "model.tiny_heads=2", "logging.progress=false"])
    sets, trained = [], []
    monkeypatch.setattr(setup, "probe_evaluator",
                        lambda model, tokenizer, problems, **_: sets.append(problems) or
                        (lambda: 1.0))
    real = setup.warmstart

    def spy(*args, excluded, **kwargs):
        trained.append(set(excluded))
        return real(*args, excluded=excluded, **kwargs)

    monkeypatch.setattr(setup, "warmstart", spy)
    model = make_tiny_model(TOKENIZER, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    heldout = heldout_problems(family="Chain", level=3, seed=cfg.eval.seed, count=5)
    said = []
    out = setup._warm_start(model, TOKENIZER, cfg, heldout, said.append, Comm())
    cheap, fine = sets
    assert len(cheap) == 3 and len(fine) == 7 and cheap == fine[:3]
    assert {p.prompt for p in fine + heldout} == trained[0]
    # the cheap check at step 2 crosses; the fine probe already reads 1.0 at step 0
    assert out["warmstart/steps"] == 0.0 and out["warmstart/trained_steps"] == 2.0
    assert "kept the weights of step 0" in said[-1]
