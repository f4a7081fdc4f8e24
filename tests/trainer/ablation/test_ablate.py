"""``verimath ablate``: variants, the statistics over seeds, run planning, and a micro ablation
end to end (two variants, one seed, two steps) whose rerun trains nothing."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from verimath.trainer.ablation import runs as ablation_runs
from verimath.trainer.ablation.runs import RunJob, execute, make_jobs, plan_run
from verimath.trainer.ablation.stats import common_budget, interpolate_curve, t_interval
from verimath.trainer.ablation.variants import CONTROLS, Variant, select_variants
from verimath.trainer.cli import main as verimath
from verimath.trainer.config.files import load_config

finite = st.floats(-1e6, 1e6, allow_nan=False)
samples = st.lists(finite, min_size=2, max_size=30)


# --- statistics -------------------------------------------------------------------------

@given(samples)
def test_interval_contains_the_mean(values):
    mean, low, high = t_interval(values)
    assert low <= mean + 1e-9 * (1 + abs(mean)) and mean <= high + 1e-9 * (1 + abs(mean))
    assert mean == pytest.approx(float(np.mean(values)), rel=1e-9, abs=1e-9)


@given(samples, st.integers(2, 5))
def test_interval_shrinks_with_more_equal_samples(values, copies):
    assume(np.ptp(values) > 1e-3)
    _, low, high = t_interval(values)
    _, low_more, high_more = t_interval(values * copies)  # the same values, more of them
    assert high_more - low_more < high - low


def test_interval_hand_worked_and_degenerate_cases():
    mean, low, high = t_interval([1.0, 2.0, 3.0])  # sd 1, t_{0.975, 2} = 4.3027
    assert (mean, low, high) == pytest.approx((2.0, 2 - 4.3027 / 3**0.5, 2 + 4.3027 / 3**0.5))
    assert t_interval([0.5, 0.5, 0.5]) == (0.5, 0.5, 0.5)
    one = t_interval([0.7])
    assert one[0] == 0.7 and math.isnan(one[1]) and math.isnan(one[2])
    with pytest.raises(ValueError, match="at least one value"):
        t_interval([])


curves = st.lists(st.tuples(st.floats(0, 1e7), st.floats(0, 1)), min_size=1, max_size=20,
                  unique_by=lambda p: p[0]).map(sorted)


@given(curves)
def test_interpolation_is_exact_at_the_sample_points(points):
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    for x, y in points:
        assert interpolate_curve(xs, ys, x) == y


@given(curves, st.floats(0, 1), st.floats(0, 1))
def test_interpolation_is_monotone_where_the_curve_is(points, a, b):
    xs = [p[0] for p in points]
    ys = sorted(p[1] for p in points)  # a non-decreasing curve
    lo, hi = sorted((a, b))
    # inside [xs[0], xs[-1]] also after rounding (xs[0] + 1.0 * span can pass xs[-1] by an ulp)
    x_lo, x_hi = (min(xs[0] + t * (xs[-1] - xs[0]), xs[-1]) for t in (lo, hi))
    y_lo, y_hi = interpolate_curve(xs, ys, x_lo), interpolate_curve(xs, ys, x_hi)
    assert ys[0] <= y_lo <= y_hi + 1e-12 and y_hi <= ys[-1]


def test_interpolation_between_points_and_its_errors():
    assert interpolate_curve([0, 100, 300], [0.2, 0.4, 0.8], 200) == pytest.approx(0.6)
    with pytest.raises(ValueError, match="outside"):
        interpolate_curve([0, 100], [0.2, 0.4], 150)
    with pytest.raises(ValueError, match="non-decreasing"):
        interpolate_curve([0, 100, 50], [0.2, 0.4, 0.5], 10)
    assert common_budget([300, 120.5, 900]) == 120.5


# --- variants and runs ------------------------------------------------------------------

def test_families_dedupe_and_name_variants():
    everything = select_variants("all")
    assert len(everything) == len({v.on for v in everything}) == 14
    cumulative = [v.name for v in select_variants("cumulative")]
    assert cumulative == ["grpo", "grpo+filter", "grpo+filter+clip-higher",
                          "grpo+filter+clip-higher+soft-punish", "dapo-dyn-sampling", "dapo"]
    by_name = {v.name: v for v in everything}
    assert by_name["grpo+filter"].families == ("cumulative", "add-one")
    assert by_name["dapo"].families == ("cumulative", "leave-one-out")
    assert [v.name for v in select_variants("add-one")][0] == "grpo"
    config = load_config("tiny", Variant(("clip-higher",)).overrides())
    assert config.algo.clip_higher and not config.algo.dynamic_sampling
    assert not config.reward.overlong_punishment and len(CONTROLS) == 5
    with pytest.raises(ValueError, match="--family"):
        select_variants("some")


def test_shared_warm_start_runs_first_and_feeds_its_seed(tmp_path):
    config = load_config("ablation")
    assert config.warmstart.steps > 0 and config.eval.every > 0
    jobs = make_jobs("ablation", select_variants("cumulative")[:2], [0, 1], tmp_path, [],
                     config=config)
    assert [j.name for j in jobs] == ["warmstart/seed0", "warmstart/seed1", "grpo/seed0",
                                      "grpo/seed1", "grpo+filter/seed0", "grpo+filter/seed1"]
    warm0 = jobs[0]
    assert "optim.steps=0" in warm0.overrides and [j.name for j in warm0.after] == [
        "grpo/seed0", "grpo+filter/seed0"]
    run = load_config("ablation", jobs[3].overrides)
    assert run.optim.seed == run.data.seed == 1 and run.warmstart.steps == 0
    assert run.model.path.endswith("warmstart/seed1/checkpoints/step_00000000/model")


def test_given_warm_starts_replace_the_shared_one(tmp_path, capsys):
    folder = tmp_path / "ws"
    run_model = folder / "seed0" / "checkpoints" / "step_00000000" / "model"
    run_model.mkdir(parents=True)  # seed 0: a run directory of optim.steps=0
    (run_model / "config.json").write_text("{}")
    (folder / "seed1").mkdir()  # seed 1: a model directory
    (folder / "seed1" / "config.json").write_text("{}")
    jobs = make_jobs("ablation", select_variants("cumulative")[:1], [0, 1], tmp_path / "out",
                     [], config=load_config("ablation"), warm_starts=folder)
    assert [j.name for j in jobs] == ["grpo/seed0", "grpo/seed1"]  # no warm start runs
    paths = [load_config("ablation", j.overrides).model.path for j in jobs]
    assert paths == [str(run_model.resolve()), str((folder / "seed1").resolve())]
    assert all(load_config("ablation", j.overrides).warmstart.steps == 0 for j in jobs)
    assert verimath(["ablate", "--warm-starts", str(folder), "--seeds", "0,2",
                     "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "no model for seed 2" in err and str(folder / "seed2") in err


def test_a_failed_run_is_reported_and_the_others_go_on(tmp_path, monkeypatch):
    jobs = [RunJob("a/seed0", tmp_path / "a" / "seed0", []),
            RunJob("b/seed0", tmp_path / "b" / "seed0", [])]
    jobs[0].after = [RunJob("c/seed0", tmp_path / "c" / "seed0", [])]  # a warm start and
    jobs[1].after = [RunJob("d/seed0", tmp_path / "d" / "seed0", [])]  # the runs after it
    jobs += [jobs[0].after[0], jobs[1].after[0]]
    code = {"a/seed0": 3, "b/seed0": 0, "c/seed0": 0, "d/seed0": 0}
    def fake_train(job, preset):  # a finished run leaves its summary.json
        finish = f"p = pathlib.Path({str(job.run_dir)!r}); p.mkdir(parents=True); " \
                 "(p / 'summary.json').write_text('{}')" if code[job.name] == 0 else "pass"
        return [sys.executable, "-c", f"import pathlib, sys; print('log line'); {finish}; "
                                      f"sys.exit({code[job.name]})"]

    monkeypatch.setattr(ablation_runs, "train_command", fake_train)
    lines = []
    execute(jobs, "tiny", workers=2, echo=lines.append)
    assert [j.returncode for j in jobs] == [3, 0, -1, 0]  # c waited on a, which failed
    assert jobs[2].reason == "its warm start failed"
    assert "log line" in jobs[0].log.read_text() and any("FAILED (exit 3)" in s for s in lines)


def test_ablate_user_errors(capsys):
    assert verimath(["ablate", "--seeds", "0,x", "--dry-run"]) == 2
    assert "--seeds" in capsys.readouterr().err
    assert verimath(["ablate", "algo.clip_higher=true", "--dry-run"]) == 2
    assert "sets algo.clip_higher itself" in capsys.readouterr().err
    assert verimath(["ablate", "optim.nope=1", "--dry-run"]) == 2
    assert verimath(["ablate", "--only", "dapo,grpo+nothing", "--dry-run"]) == 2
    assert "--only: no variant grpo+nothing" in capsys.readouterr().err


# --- end to end -------------------------------------------------------------------------

MICRO = ["model.tiny_hidden_size=16", "model.tiny_layers=1", "model.tiny_heads=2",
         "rollout.gen_prompts=2", "rollout.group_size=2", "rollout.max_new_tokens=6",
         "reward.overlong_buffer=2", "algo.train_prompts=2", "algo.mini_batch_prompts=2",
         "algo.max_gen_rounds=1", "optim.steps=2", "warmstart.steps=0",
         "eval.num_problems=3", "eval.k=1", "eval.every=1",
         "eval.batch_size=8", "logging.plot=false", "logging.save_every=1"]


@pytest.mark.slow  # two training processes
def test_micro_ablation_end_to_end_and_rerun_reuses(tmp_path, monkeypatch, capsys):
    out = tmp_path / "abl"
    argv = ["ablate", "--config", "ablation", "--family", "add-one", "--only", "grpo,grpo+filter",
            "--seeds", "0", "--workers", "2", "--output", str(out), *MICRO]
    two = select_variants("add-one")[:2]  # GRPO and GRPO + overlong filtering
    assert verimath(argv) == 0, capsys.readouterr().err
    table = (out / "ablation.md").read_text()
    assert "| GRPO | 1 |" in table and "| GRPO + overlong filtering | 1 |" in table
    assert (out / "ablation.png").stat().st_size > 0
    assert (out / "ablation-curves.png").stat().st_size > 0
    assert "### Mechanisms" in table and "| GRPO + overlong filtering | 1 | " in table
    metrics = {p: p.stat().st_mtime_ns for p in out.glob("*/seed0/metrics.jsonl")}
    assert len(metrics) == 2

    def no_training(*args, **kwargs):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr(subprocess, "call", no_training)
    capsys.readouterr()
    assert verimath(argv) == 0
    assert "2 done" in capsys.readouterr().err
    assert {p: p.stat().st_mtime_ns for p in metrics} == metrics

    job = make_jobs("ablation", two[:1], [0], out, MICRO, config=load_config("ablation", MICRO))[0]
    (job.run_dir / "summary.json").unlink()
    plan_run(job, "ablation")
    assert job.action == "resume"  # a checkpoint is there, the summary is not
    job.overrides = [*job.overrides, "algo.eps_low=0.1"]
    plan_run(job, "ablation")
    assert job.action == "conflict" and "algo.eps_low" in job.reason


def _result(seed, acc, before):
    from verimath.trainer.ablation.report import RunResult

    return RunResult(seed=seed, acc=acc, greedy=acc, acc_before=before, entropy=0.1,
                     generated_tokens=100.0, trained_tokens=50.0, wall_seconds=1.0, steps=2,
                     curve=([0.0, 100.0], [before, acc]))


def test_paired_changes_remove_the_warm_starts_spread():
    """Seeds start far apart (0.05, 0.35, 0.65) and every variant of a seed starts there: by
    hand, GRPO gains 0.05 and DAPO 0.15 on each seed, so DAPO - GRPO = +0.10 with no spread,
    while the unpaired means differ by the same 0.10 inside intervals about 0.75 wide."""
    from verimath.trainer.ablation.report import markdown_table, reference_of, summarize
    from verimath.trainer.ablation.variants import select_variants

    before = {0: 0.05, 1: 0.35, 2: 0.65}
    results = {"grpo": [_result(s, b + 0.05, b) for s, b in before.items()],
               "dapo": [_result(s, b + 0.15, b) for s, b in before.items()],
               "dapo-clip-higher": [_result(s, b + 0.10, b) for s, b in before.items()]}
    variants = [v for v in select_variants("all") if v.name in results]
    rows, _ = summarize(results, variants)
    by_name = {row.name: row for row in rows}
    assert reference_of("grpo") is None and reference_of("dapo") == "grpo"
    assert reference_of("dapo-clip-higher") == "dapo" and reference_of("grpo+filter") == "grpo"
    assert by_name["dapo"].versus == "GRPO" and by_name["dapo"].change == pytest.approx(
        (0.10, 0.10, 0.10))
    assert by_name["dapo-clip-higher"].versus == "DAPO"
    assert by_name["dapo-clip-higher"].change == pytest.approx((-0.05, -0.05, -0.05))
    assert by_name["dapo"].gain == pytest.approx((0.15, 0.15, 0.15))
    assert by_name["dapo"].values["change"] == pytest.approx([0.10] * 3)  # the chart's dots
    assert "change" not in by_name["grpo"].values
    _, low, high = by_name["dapo"].acc
    assert high - low > 0.7  # unpaired, the warm starts' spread hides the difference
    table = markdown_table(rows, 100.0, k=4, steps=2)
    assert "| GRPO | 3 | " in table and "reference" in table
    assert "+10.0 (+10.0 to +10.0) vs GRPO" in table and "-5.0 (-5.0 to -5.0) vs DAPO" in table


def test_the_losses_family_sets_each_policy_loss_beside_dapo():
    from verimath.trainer.ablation.report import reference_of
    from verimath.trainer.config.choices import POLICY_LOSS_NAMES

    losses = select_variants("losses")
    assert [v.name for v in losses] == ["dapo", "dapo-with-cispo", "dapo-with-gspo",
                                        "dapo-with-clip-cov", "dapo-with-kl-cov"]
    assert {v.loss for v in losses} == set(POLICY_LOSS_NAMES)
    assert all(reference_of(v.name) == "dapo" for v in losses[1:])  # paired with DAPO
    assert losses[2].label == "DAPO, GSPO loss"
    for variant in losses:
        config = load_config("tiny", variant.overrides())
        assert config.algo.policy_loss == variant.loss and config.algo.dynamic_sampling
    assert "losses" not in {f for v in select_variants("all") for f in v.families}
    assert all(v.loss == "clip" for v in select_variants("all"))  # the other families stay


def test_the_corrections_family_runs_dapo_one_step_off_with_each_correction():
    from verimath.trainer.ablation.report import reference_of
    from verimath.trainer.config.choices import ROLLOUT_CORRECTION_NAMES

    variants = select_variants("corrections")
    names = [v.name for v in variants]
    assert names == ["dapo", "dapo-async-sampler"] + [
        f"dapo-async-{mode}" for mode in ROLLOUT_CORRECTION_NAMES]
    assert all(reference_of(name) == "dapo" for name in names[1:])  # paired with sync DAPO
    sync = load_config("tiny", variants[0].overrides())
    assert sync.rollout.async_steps == 0
    sampler = load_config("tiny", variants[1].overrides())
    assert sampler.rollout.async_steps == 1 and not sampler.algo.uses_proximal(1)
    for variant, mode in zip(variants[2:], ROLLOUT_CORRECTION_NAMES):
        config = load_config("tiny", variant.overrides())
        assert config.rollout.async_steps == 1 and config.algo.uses_proximal(1)
        assert config.algo.correction(1)[0] == mode and config.algo.dynamic_sampling
    assert variants[1].label == "DAPO, one step off, ratio against the sampler"
    assert variants[2].label == "DAPO, one step off, ratio against the step's start, unweighted"
    assert "corrections" not in {f for v in select_variants("all") for f in v.families}
    assert all(v.stale is None for v in select_variants("losses"))
