"""The ablation's mechanism metrics: per run from step records, paired changes by seed."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.trainer.ablation.mechanisms import (
    MECHANISMS,
    mean_curves,
    mechanism_rows,
    mechanisms_table,
    plot_curves,
    run_mechanisms,
)


def _step(step, *, entropy, length, truncated, wrong, acc=0.5, kept=4, generated=8,
          tokens=1000, clip_high=0.0):
    return {"step": step, "compute/generated_tokens": tokens, "policy/entropy": entropy,
            "clip/frac_high": clip_high,
            "length/mean": length, "length/truncated_frac": truncated,
            "length/wrong_mean": wrong, "reward/accuracy": acc,
            "sampling/kept_groups": kept, "sampling/generated_groups": generated}


def test_one_run_worked_by_hand():
    records = [{"step": 0, "eval/avg@4": 0.3}]  # the evaluation record counts for nothing
    records += [_step(1, entropy=0.4, length=60, truncated=0.5, wrong=90, kept=8, generated=8,
                      clip_high=0.02),
                _step(2, entropy=0.3, length=62, truncated=0.25, wrong=80, kept=4, generated=16),
                _step(3, entropy=0.2, length=64, truncated=0.0, wrong=0, acc=1.0, kept=0,
                      generated=8, tokens=400),
                _step(4, entropy=0.1, length=66, truncated=0.25, wrong=70, kept=8, generated=8)]
    m = run_mechanisms(records)
    assert m["entropy"] == pytest.approx(0.1)  # last quarter of 4 steps: the last one
    assert m["length"] == pytest.approx(66)
    assert m["truncated"] == pytest.approx(0.25)  # (0.5 + 0.25 + 0 + 0.25) / 4
    assert m["clip_high"] == pytest.approx(0.005)  # (0.02 + 0 + 0 + 0) / 4
    assert m["wrong_length"] == pytest.approx(80)  # the all-right step has no wrong ones
    assert m["kept_frac"] == pytest.approx(20 / 40)
    assert m["tokens_per_step"] == pytest.approx(3400 / 4)
    assert set(m) == set(MECHANISMS)


def test_a_run_without_steps_is_nan_everywhere():
    assert all(math.isnan(v) for v in run_mechanisms([{"step": 0, "eval/avg@4": 0.1}]).values())


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.floats(0.0, 5.0), min_size=2, max_size=6),
       shift=st.floats(-1.0, 1.0))
def test_a_constant_shift_against_the_reference_is_the_paired_change(values, shift):
    """Each seed's variant = its reference + shift: the change is exactly the shift with a
    zero-width interval, whatever the spread between seeds (pairing removes it)."""
    ref = {s: dict.fromkeys(MECHANISMS, v) for s, v in enumerate(values)}
    var = {s: {k: x + shift for k, x in m.items()} for s, m in ref.items()}
    rows = mechanism_rows({"dapo": ref, "dapo-clip-higher": var},
                          {"dapo": "DAPO", "dapo-clip-higher": "DAPO - clip-higher"})
    assert [r["name"] for r in rows] == ["dapo", "dapo-clip-higher"]
    mean, low, high = rows[1]["entropy_change"]
    assert mean == pytest.approx(shift, abs=1e-9)
    assert low == pytest.approx(shift, abs=1e-9) and high == pytest.approx(shift, abs=1e-9)
    assert math.isnan(rows[0]["entropy_change"][0])  # DAPO is the reference of itself: none


def test_only_seeds_both_ran_are_paired_and_the_table_shows_changes():
    ref = {0: dict.fromkeys(MECHANISMS, 1.0), 1: dict.fromkeys(MECHANISMS, 2.0)}
    var = {1: dict.fromkeys(MECHANISMS, 2.5), 7: dict.fromkeys(MECHANISMS, 9.0)}
    rows = mechanism_rows({"grpo": ref, "grpo+clip-higher": var},
                          {"grpo": "GRPO", "grpo+clip-higher": "GRPO + clip-higher"})
    assert rows[1]["length_change"][0] == pytest.approx(0.5)  # seed 1 only
    assert rows[1]["length"] == pytest.approx(5.75)  # its own mean uses both of its seeds
    table = mechanisms_table(rows)
    assert "| GRPO + clip-higher | 2 | " in table and "(+0.500)" in table  # entropy, 3 digits


def test_mean_curves_use_the_steps_every_seed_logged_and_the_plot_is_written(tmp_path):
    a = [{"step": 0, "eval/avg@4": 0.2}, {"step": 5, "eval/avg@4": 0.4}]
    b = [{"step": 0, "eval/avg@4": 0.4}, {"step": 5, "eval/avg@4": 0.6}, {"step": 9, "x": 1}]
    assert mean_curves([a, b], "eval/avg@4") == ([0, 5], [pytest.approx(0.3), pytest.approx(0.5)])
    runs = [[{"step": s, "eval/avg@4": 0.1 * s, **_step(s, entropy=1 / (s + 1), length=50 + s,
                                                        truncated=0.1, wrong=60)}
             for s in range(1, 4)]]
    png = plot_curves({"dapo": runs}, {"dapo": "DAPO"}, tmp_path / "c.png", k=4)
    assert png.stat().st_size > 5000
