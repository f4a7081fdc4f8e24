"""``verimath ablate --mechanisms``: the regimes, their records and the summary rows."""

from __future__ import annotations

import json
import math

import pytest
from verimath.trainer.ablation import results as res
from verimath.trainer.ablation.cli import mechanism_seeds
from verimath.trainer.ablation.regimes import (
    METRIC_LABELS,
    REGIMES,
    select_regimes,
    training_measures,
)
from verimath.trainer.cli import main as cli_main
from verimath.trainer.config.files import load_config


def test_dry_run_lists_the_four_regimes_with_their_arms_and_commands(capsys, tmp_path):
    code = cli_main(["ablate", "--mechanisms", "--dry-run", "--seeds", "2",
                     "--output-dir", str(tmp_path / "mech")])
    err = capsys.readouterr().err
    assert code == 0
    for name in ("clip-higher", "token-level", "overlong", "dynamic-sampling"):
        assert f"{name} (preset mech-" in err
        assert f"{tmp_path / 'mech' / name}/warmstart/seed1/stage0" in err
    assert "arm symmetric" in err and "arm soft" in err and "algo.clip_higher=false" in err
    assert not (tmp_path / "mech").exists()  # a dry run writes nothing


def test_the_seeds_a_run_will_take_are_said_first(capsys):
    """``--pilot --seeds 100`` is a hundred pilot seeds from 100 (a mistake made once: it
    ran 28 seeds beside a declared run before anyone saw it): the first line says so."""
    from verimath.trainer.ablation.cli import seed_span

    assert cli_main(["ablate", "--mechanisms", "--dry-run", "--pilot", "--seeds", "100",
                     "--only", "overlong"]) == 0
    assert "1 regimes x 100 seeds (seeds 100-199)" in capsys.readouterr().err.splitlines()[0]
    assert cli_main(["ablate", "--mechanisms", "--dry-run", "--seeds", "100,",
                     "--only", "overlong"]) == 0
    assert "(seed 100)" in capsys.readouterr().err.splitlines()[0]
    assert seed_span([0, 1, 2, 5]) == "seeds 0,1,2,5" and seed_span([3, 4]) == "seeds 3-4"


def test_dry_run_of_one_regime_and_a_wrong_name(capsys):
    assert cli_main(["ablate", "--mechanisms", "--dry-run", "--only", "overlong"]) == 0
    err = capsys.readouterr().err
    assert "overlong (preset" in err and "clip-higher (preset" not in err
    assert cli_main(["ablate", "--mechanisms", "--dry-run", "--only", "kl"]) == 2
    assert "no regime kl; choose from clip-higher, token-level" in capsys.readouterr().err


def test_mechanism_seeds_count_from_zero_or_from_the_pilots_start():
    assert mechanism_seeds("5", pilot=False) == [0, 1, 2, 3, 4]
    assert mechanism_seeds(None, pilot=True) == [100, 101, 102, 103, 104]
    assert mechanism_seeds("3,7", pilot=False) == [3, 7]
    with pytest.raises(ValueError, match="--seeds"):
        mechanism_seeds("0", pilot=False)


@pytest.mark.parametrize("regime", list(REGIMES.values()), ids=list(REGIMES))
def test_every_regime_loads_and_its_arms_differ_only_in_the_controls_under_test(regime):
    configs = {a.name: load_config(regime.preset, list(a.overrides)).to_dict()
               for a in regime.arms}
    for stage in regime.warm_start:
        load_config(regime.preset, list(stage))
    tested = {e.control for e in regime.effects}
    keys = {"clip-higher": {"algo.clip_higher"}, "token-level loss": {"algo.token_level_loss"},
            "overlong filtering": {"algo.overlong_filtering"},
            "soft overlong punishment": {"reward.overlong_punishment"},
            "dynamic sampling": {"algo.dynamic_sampling"}}
    allowed = set().union(*(keys[c] for c in tested))
    first = next(iter(configs.values()))
    for config in configs.values():
        differ = {f"{s}.{k}" for s in config for k in config[s] if config[s][k] != first[s][k]}
        assert differ <= allowed, (regime.name, differ)
    arms = {a.name for a in regime.arms}
    for effect in regime.effects:
        assert {effect.on, effect.off} <= arms and effect.metric in METRIC_LABELS
    assert sum(e.primary and e.kind == "mechanism" for e in regime.effects) >= 1


def test_select_regimes_keeps_the_registry_order():
    assert [r.name for r in select_regimes("overlong,clip-higher")] == ["clip-higher", "overlong"]


def test_training_measures_worked_by_hand():
    records = [{"step": 0, "eval/avg@4": 0.25},
               {"step": 1, "compute/generated_tokens": 100.0, "optim/updates": 2.0,
                "sampling/kept_groups": 4.0, "sampling/informative_groups": 1.0,
                "policy/entropy": 0.5, "length/mean": 10.0, "reward/accuracy": 0.2},
               {"step": 2, "compute/generated_tokens": 300.0, "optim/updates": 2.0,
                "sampling/kept_groups": 4.0, "sampling/informative_groups": 6.0,
                "policy/entropy": 0.3, "length/mean": 12.0, "reward/accuracy": 0.4,
                "eval/avg@4": 0.5}]
    m = training_measures(records, k=4)
    assert m["informative_per_update"] == pytest.approx((1 + 4) / 4)  # kept caps informative
    assert m["entropy"] == pytest.approx(0.4) and m["generated_tokens"] == 400
    assert m["curve"]["eval"] == [[0, 0.0, 0.25], [2, 400.0, 0.5]]
    assert m["curve"]["length"] == [10.0, 12.0]


def _arm(acc, mass, tokens=(0.0, 100.0, 200.0), accs=(0.1, 0.2, 0.3)):
    return {"acc": acc, "first_token_mass": mass, "entropy": 0.1,
            "curve": {"eval": [[i, t, a] for i, (t, a) in enumerate(zip(tokens, accs))]}}


def _record(seed, on, off, *, phase="confirmatory", design="d1", date="2026-12-03T10:00"):
    return {"regime": "clip-higher", "seed": seed, "phase": phase, "design": design,
            "date": date, "arms": {"clip-higher": on, "symmetric": off}}


def test_rows_pair_by_seed_and_leave_out_pilots_and_older_designs(tmp_path):
    path = tmp_path / "mechanisms.json"
    res.add_record(path, _record(0, _arm(0.5, 0.4), _arm(0.4, 0.1)))
    res.add_record(path, _record(1, _arm(0.6, 0.5), _arm(0.4, 0.2)))
    res.add_record(path, _record(2, _arm(0.3, 0.3), _arm(0.4, 0.3), phase="pilot"))
    data = res.add_record(path, _record(0, _arm(0.0, 0.0), _arm(0.9, 0.9), design="d0",
                                        date="2026-12-01T10:00"))
    rows = {(r["kind"], r["metric"]): r for r in data["rows"]}
    mass = rows[("mechanism", "first_token_mass")]
    assert mass["seeds"] == 2 and mass["effect"] == pytest.approx(0.3)  # (0.3 + 0.3) / 2
    assert mass["ci"] == pytest.approx([0.3, 0.3]) and mass["decisive"]  # no spread
    acc = rows[("accuracy", "acc")]
    assert acc["effect"] == pytest.approx(0.15) and acc["direction_ok"] is True
    low, high = acc["ci"]
    assert low < 0.15 < high and acc["decisive"] == (low > 0)
    assert json.loads(path.read_text())["runs"][0]["seed"] == 0
    assert len(data["runs"]) == 4  # every record is kept; the pool is the newest design's


def test_a_record_of_the_same_seed_and_design_replaces_the_old_one(tmp_path):
    path = tmp_path / "mechanisms.json"
    res.add_record(path, _record(0, _arm(0.5, 0.4), _arm(0.4, 0.1)))
    data = res.add_record(path, _record(0, _arm(0.5, 0.4), _arm(0.5, 0.1)))
    assert len(data["runs"]) == 1
    assert data["rows"][-1]["effect"] == pytest.approx(0.0)


def test_equal_token_accuracy_reads_both_curves_at_the_smaller_budget():
    a = _arm(0, 0, tokens=(0.0, 100.0, 400.0), accs=(0.1, 0.5, 0.9))
    b = _arm(0, 0, tokens=(0.0, 100.0, 200.0), accs=(0.1, 0.2, 0.3))
    assert res.equal_token_accuracy(a, b) == pytest.approx((0.5 + 0.4 * 100 / 300, 0.3))


def test_non_finite_values_are_written_as_null(tmp_path):
    path = tmp_path / "mechanisms.json"
    res.add_record(path, _record(0, _arm(0.5, math.nan), _arm(0.4, 0.1)))
    text = path.read_text()
    assert "NaN" not in text and json.loads(text)["runs"][0]["arms"]["clip-higher"][
        "first_token_mass"] is None


def _full_record(seed, regime, *, design="d1"):
    from verimath.trainer.ablation.regimes import REGIMES

    arms = {}
    for i, arm in enumerate(REGIMES[regime].arms):
        curve = {"step": [1, 2, 3], "entropy": [0.3, 0.2 + 0.01 * i, 0.1],
                 "length": [30.0, 31.0, 32.0 + i], "accuracy": [0.1, 0.2, 0.3],
                 "eval": [[0, 0.0, 0.1], [3, 300.0 + 10 * i, 0.2 + 0.05 * i + 0.01 * seed]]}
        arms[arm.name] = {"acc": 0.2 + 0.05 * i + 0.01 * seed, "entropy": 0.2, "curve": curve,
                          "first_token_mass": 0.1 * (i + 1) + 0.001 * seed}
    return {"regime": regime, "seed": seed, "phase": "confirmatory", "design": design,
            "date": f"2026-12-03T1{seed}:00", "arms": arms, "load_1min": [1.5, 2.5],
            "cpu_seconds": {"warm_start": 100.0, **{a: 50.0 for a in arms}, "probes": 5.0,
                            "total": 100.0 + 50.0 * len(arms) + 5.0}}


def test_the_report_tables_and_figure_come_from_the_records(tmp_path):
    from verimath.trainer.ablation.regime_report import cost_table, plot_regimes, rows_table

    path = tmp_path / "mechanisms.json"
    for seed in range(3):
        data = res.add_record(path, _full_record(seed, "clip-higher"))
    table = rows_table(data["rows"])
    assert "| clip-higher | mechanism | probability of the right first token" in table
    assert "| +0.050 | +0.050 to +0.050 | 3 | yes | yes |" in table  # acc: 0.05 each seed
    cost = cost_table(data["runs"])
    assert "| clip-higher | 3 | 205 (205-205) | 100 | 100 | 5 | 1.5-2.5 |" in cost
    for seed in range(2):
        data = res.add_record(path, _full_record(seed, "overlong"))
        data = res.add_record(path, _full_record(seed, "overlong-rare"))
    table = rows_table(data["rows"])
    assert "| overlong filtering (overlong) | accuracy |" in table
    assert "| overlong filtering (overlong-rare) | accuracy |" in table
    assert "| soft overlong punishment | accuracy |" in table  # in one regime only
    png = plot_regimes(data["runs"], tmp_path / "fig.png")
    assert png.stat().st_size > 10_000
    with pytest.raises(ValueError, match="no confirmatory record"):
        plot_regimes([], tmp_path / "none.png")


@pytest.mark.parametrize("name", [n for n, r in REGIMES.items() if r.probe == "cap"])
def test_the_cap_cuts_the_answer_of_the_right_working_it_is_built_to_cut(name):
    """A response cut at the cap only once its answer is complete (EOS lost) still scores as
    right: the overlong regimes must cut into the answer, or truncation costs nothing."""
    from verimath.envs import generate, worked_solution
    from verimath.rewards import score_batch
    from verimath.trainer.model.tiny import make_char_tokenizer

    config = load_config(REGIMES[name].preset, [])
    assert config.model.path is None  # the tiny model and its character tokenizer
    tokenizer, cap = make_char_tokenizer(), config.rollout.max_new_tokens
    problems = [generate(config.data.family, 7, i, level=config.data.level) for i in range(300)]
    ids = [tokenizer(worked_solution(p), add_special_tokens=False)["input_ids"] for p in problems]
    cut = [len(x) + 1 > cap for x in ids]  # + EOS
    texts = [tokenizer.decode(x[:cap]) for x in ids]
    correct = score_batch(texts, [p.answer for p in problems]).correct
    assert 0.05 < sum(cut) / len(cut) < 0.7, (name, sum(cut))
    assert all(bool(ok) != c for ok, c in zip(correct, cut)), name  # cut ⇔ scored wrong


def test_the_clip_regime_spreads_the_first_token_over_many_wrong_openings():
    """The upper clip can only matter when the mass a wrong opening loses spreads over many
    others: with one common wrong opening (the 2026-12-04 regime's ``Answer:``) pushing it
    down hands its mass to the right token whatever the upper bound. The last warm-start
    stage's targets must make the right first token rare and no wrong opening common."""
    from collections import Counter

    import numpy as np
    from verimath.envs import generate, worked_solution
    from verimath.trainer.warmstart.supervised import noisy_solutions

    regime = REGIMES["clip-higher"]
    config = load_config(regime.preset, list(regime.warm_start[-1]))
    problems = [generate(config.data.family, 7, i, level=config.data.level) for i in range(2000)]
    targets = noisy_solutions(problems, noise=config.warmstart.noise,
                              flaws=tuple(config.warmstart.flaws), rng=np.random.default_rng(0))
    right = np.mean([t[0] == worked_solution(p)[0] for t, p in zip(targets, problems)])
    wrong = Counter((worked_solution(p)[0], t[0]) for t, p in zip(targets, problems)
                    if t[0] != worked_solution(p)[0])
    per_first = Counter(worked_solution(p)[0] for p in problems)
    largest = max(n / per_first[first] for (first, _), n in wrong.items())
    assert right < 0.1, right  # rare
    assert largest < 0.2, largest  # no wrong opening takes much of one problem's mass
    assert len({w for _, w in wrong}) >= 8  # many wrong openings
