"""Metric backends: the fan-out writer, TensorBoard events read back, a W&B offline run."""

from __future__ import annotations

import json
import struct
import sys
import time

import pytest
from verimath.trainer.config.files import load_config
from verimath.trainer.config.logging import check_backends
from verimath.trainer.run.metrics import (
    MetricLoggers,
    MetricsWriter,
    check_backend_packages,
    make_metric_loggers,
    read_metrics,
)

STEPS = [
    (1, {"loss/policy": 0.5, "sampling/hit_cap": False, "note": "warm", "eval/avg@4": None}),
    (2, {"loss/policy": 0.25, "sampling/hit_cap": True, "eval/avg@4": 0.75}),
    (3, {"loss/policy": 0.125, "sampling/hit_cap": False}),
]


def tfrecords(path):
    """The payloads of a TFRecord file: ``uint64 length, uint32 crc, data, uint32 crc``."""
    data, pos, out = path.read_bytes(), 0, []
    while pos < len(data):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        out.append(data[pos + 12:pos + 12 + length])
        pos += 12 + length + 4
    return out


def tensorboard_events(log_dir):
    """``(scalars {tag: {step: value}}, purge steps)`` from every event file in ``log_dir``."""
    from tensorboardX.proto.event_pb2 import Event

    scalars, purges = {}, []
    for path in sorted(log_dir.glob("events.out.tfevents.*")):
        for payload in tfrecords(path):
            event = Event.FromString(payload)
            if event.HasField("session_log") and event.session_log.status == 1:  # START
                purges.append(event.step)
            for value in event.summary.value:
                scalars.setdefault(value.tag, {})[event.step] = value.simple_value
    return scalars, purges


def test_backend_names_are_checked():
    assert check_backends(["tensorboard"]) == ("jsonl", "tensorboard")
    assert check_backends(["wandb", "jsonl"]) == ("jsonl", "wandb")
    for bad in (["tb"], ["jsonl", "jsonl"]):
        with pytest.raises(ValueError, match="logging.backends must be"):
            check_backends(bad)
    with pytest.raises(ValueError, match="logging.backends must be"):
        load_config("tiny", ["logging.backends=[jsonl, csv]"])
    assert load_config("tiny", ["logging.backends=[tensorboard]"]).logging.backends == (
        "tensorboard",)
    with pytest.raises(ValueError, match="logging.wandb_mode"):
        load_config("tiny", ["logging.wandb_mode=sometimes"])


def test_jsonl_only_is_the_plain_writer(tmp_path):
    with make_metric_loggers(tmp_path) as loggers:
        assert isinstance(loggers, MetricLoggers) and len(loggers.writers) == 1
        for step, metrics in STEPS:
            loggers.write(step, metrics)
    assert [r["step"] for r in read_metrics(tmp_path / "metrics.jsonl")] == [1, 2, 3]
    loggers.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        loggers.write(4, {})


def test_tensorboard_events_read_back(tmp_path):
    pytest.importorskip("tensorboardX")
    with make_metric_loggers(tmp_path, ["jsonl", "tensorboard"]) as loggers:
        for step, metrics in STEPS:
            loggers.write(step, metrics)
    scalars, _ = tensorboard_events(tmp_path / "tensorboard")
    assert scalars["loss/policy"] == {1: 0.5, 2: 0.25, 3: 0.125}
    assert scalars["sampling/hit_cap"] == {1: 0.0, 2: 1.0, 3: 0.0}
    assert scalars["eval/avg@4"] == {2: 0.75}  # null skipped
    assert "note" not in scalars  # strings are not scalars
    with pytest.raises(ValueError, match="unsupported type"):  # the jsonl writer checks values
        with make_metric_loggers(tmp_path / "x", ["tensorboard"]) as loggers:
            loggers.write(1, {"loss/policy": [1.0, 2.0]})


def test_tensorboard_resume_purges_later_steps(tmp_path):
    pytest.importorskip("tensorboardX")
    with make_metric_loggers(tmp_path, ["tensorboard"]) as loggers:
        for step, metrics in STEPS:
            loggers.write(step, metrics)
    with make_metric_loggers(tmp_path, ["tensorboard"], resume_step=2) as loggers:
        loggers.write(3, {"loss/policy": 0.0625})
    _, purges = tensorboard_events(tmp_path / "tensorboard")
    assert purges == [3]  # TensorBoard drops the earlier run's events from step 3 on
    assert [r["step"] for r in read_metrics(tmp_path / "metrics.jsonl")] == [1, 2, 3]


def test_missing_optional_packages_name_the_extra(tmp_path, monkeypatch):
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("tensorboardX", "wandb")
                        else real_find_spec(name, *a))
    check_backend_packages(["jsonl"])
    for backend in ("tensorboard", "wandb"):
        with pytest.raises(ValueError, match=rf"pip install 'verimath\[{backend}\]'"):
            check_backend_packages([backend])
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(ImportError, match=r"pip install 'verimath\[tensorboard\]'"):
        make_metric_loggers(tmp_path, ["tensorboard"])
    with pytest.raises(ImportError, match=r"pip install 'verimath\[wandb\]'"):
        make_metric_loggers(tmp_path / "w", ["jsonl", "wandb"])


def read_wandb_records(path):
    """Records of a ``.wandb`` file: a 7-byte header, then 32 KiB blocks of chunks
    ``uint32 crc, uint16 length, uint8 kind`` (1 full, 2 first, 3 middle, 4 last)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    block, pos, pending, records = 32768, 7, b"", []
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:  # a block's tail too short for a chunk header is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if (kind == 0 and length == 0) or pos + 7 + length > len(data):
            break  # the end, or a chunk still being written
        pending += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            records.append(pb.Record.FromString(pending))
            pending = b""
    return records


@pytest.mark.slow
def test_wandb_offline_run_holds_the_history(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    for name in ("CONFIG_DIR", "CACHE_DIR", "DATA_DIR", "ARTIFACT_DIR"):
        monkeypatch.setenv(f"WANDB_{name}", str(tmp_path / "wandb-home" / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    run_dir = tmp_path / "run"
    config = {"algo": {"eps_high": 0.28}}
    with make_metric_loggers(run_dir, ["wandb"], config=config, wandb_mode="offline",
                             wandb_project="verimath-tests") as loggers:
        for step, metrics in STEPS:
            loggers.write(step, metrics)
        folder = loggers.writers[1].directory
    assert folder is not None and folder.parent == run_dir / "wandb"
    assert folder.name.startswith("offline-run-")
    run_id = (run_dir / "wandb_run_id").read_text().strip()
    (store,) = folder.glob(f"run-{run_id}.wandb")
    deadline = time.monotonic() + 30
    records = read_wandb_records(store)  # W&B's service finishes the file in the background
    while not any(r.WhichOneof("record_type") == "exit" for r in records):
        assert time.monotonic() < deadline, f"{store} has no exit record after 30 s"
        time.sleep(0.2)
        records = read_wandb_records(store)
    history = {r.history.step.num: {(i.key or "/".join(i.nested_key)): json.loads(i.value_json)
                                    for i in r.history.item}
               for r in records if r.WhichOneof("record_type") == "history"}
    assert sorted(history) == [1, 2, 3]
    assert [history[s]["loss/policy"] for s in (1, 2, 3)] == [0.5, 0.25, 0.125]
    assert history[2]["eval/avg@4"] == 0.75 and "eval/avg@4" not in history[1]
    runs = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert runs and runs[0].project == "verimath-tests" and runs[0].run_id == run_id
    assert isinstance(loggers.writers[0], MetricsWriter)
    assert [r["step"] for r in read_metrics(run_dir / "metrics.jsonl")] == [1, 2, 3]
