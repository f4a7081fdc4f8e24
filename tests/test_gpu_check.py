"""scripts/gpu_check.py runs on a CPU machine: tiny sizes, GPU-only rows named as skipped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_check.py"


@pytest.mark.slow
def test_gpu_check_runs_every_part_on_tiny_sizes(tmp_path):
    torch = pytest.importorskip("torch")
    out = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {check: (result, detail) for check, result, detail in json.loads(out.read_text())}
    assert rows["tiny preset, hf engine"][0].startswith("ran (too short to learn)")
    update = next(key for key in rows if key.startswith("update, small shape"))
    assert "bf16 FSDP2 on 1 rank" in rows[update][1]
    assert rows["generation, HF"][0].endswith("tokens/s")
    assert done.stdout.splitlines()[-len(rows) - 1].split() == ["check", "result", "detail"]
    if not torch.cuda.is_available():
        assert rows[update][0] == "n/a: no GPU"
        assert rows["peak memory, update"][0] == "n/a: no GPU"
        assert rows["tiny preset, vllm engine"][0] == "skipped"
        assert rows["generation, vLLM"] == ("skipped", rows["tiny preset, vllm engine"][1])


def test_gpu_check_names_unknown_parts():
    done = subprocess.run([sys.executable, str(SCRIPT), "--parts", "tiny,nope"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "unknown nope" in done.stderr
