"""benchmarks/bench_lora.py on a small shape: the rows it reports for LoRA and full fine-tuning."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_lora_trains_and_stores_less_and_pushes_the_same_weights(monkeypatch):
    pytest.importorskip("peft")
    spec = importlib.util.spec_from_file_location("bench_lora", ROOT / "benchmarks/bench_lora.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setattr(bench, "SHAPE", dict(vocab_size=64, hidden_size=32, intermediate_size=48,
                                             num_attention_heads=4, num_key_value_heads=2,
                                             tie_word_embeddings=True,
                                             max_position_embeddings=64))
    rows = {mode: bench.measure(mode, layers=2, batch=2, length=16, rank=4, updates=1,
                                threads=0) for mode in ("full", "lora")}
    full, lora = rows["full"], rows["lora"]
    assert full["trainable"] == full["parameters"]
    # rank 4 on q, k, v, o, gate, up, down of 2 layers: 4 x (64 + 48 + 48 + 64 + 80 x 3) x 2
    assert lora["trainable"] == 4 * (64 + 48 + 48 + 64 + 80 * 3) * 2
    assert lora["adamw_state_mb"] < full["adamw_state_mb"]
    assert lora["push_mb"] == pytest.approx(full["push_mb"])  # merged: the base's shapes
    settings = argparse.Namespace(batch=2, length=16, layers=2, threads=0)
    assert "lora r=4" in bench.table(list(rows.values()), settings)
