"""Optional metric backends beside ``metrics.jsonl``: TensorBoard event files and W&B.

Both take the records that ``MetricsWriter`` has already checked (``{"step": n, key: scalar}``)
and log their numeric values (booleans as 0/1; strings and nulls are skipped). Each is an
optional dependency imported when the writer is built, with an ``ImportError`` naming the
extra to install:

- :class:`TensorBoardWriter` writes ``events.out.tfevents.*`` files with ``tensorboardX``
  (a small package: protobuf and numpy), readable by ``tensorboard --logdir RUN_DIR``.
  ``resume_step=n`` sets TensorBoard's ``purge_step`` so that events after step ``n`` (left
  by a run that crashed after its last checkpoint) are hidden, as ``metrics.jsonl`` drops them.
- :class:`WandbWriter` logs to a Weights & Biases run whose files live under
  ``RUN_DIR/wandb/``. ``mode="offline"`` needs no network or login (``wandb sync`` uploads
  later); the run id is kept in ``RUN_DIR/wandb_run_id`` so a resumed training run continues
  the same W&B run.
"""

from __future__ import annotations

import math
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

WANDB_ID_FILE = "wandb_run_id"


def numeric_items(record: Mapping[str, Any]) -> dict[str, float]:
    """The loggable values of a record: numbers and booleans (as 0/1), ``step`` excluded."""
    out = {}
    for key, value in record.items():
        if key == "step" or value is None or isinstance(value, str):
            continue
        value = float(value)
        if math.isfinite(value):
            out[key] = value
    return out


class TensorBoardWriter:
    """Scalars of each step as TensorBoard events in ``log_dir``. ``close()`` is idempotent.

    Tags are the metric keys exactly (``eval/avg@4``): summaries are written with
    tensorboardX's ``FileWriter``, whose ``SummaryWriter.add_scalar`` would rename them
    (``eval/avg_4``).
    """

    def __init__(self, log_dir: str | os.PathLike, *, resume_step: int | None = None) -> None:
        try:
            from tensorboardX import FileWriter
            from tensorboardX.proto.event_pb2 import Event, SessionLog
            from tensorboardX.proto.summary_pb2 import Summary
        except ImportError as exc:
            raise ImportError("logging.backends includes tensorboard, which needs tensorboardX: "
                              "pip install 'verimath[tensorboard]'") from exc
        self.log_dir, self._summary = Path(log_dir), Summary
        self._writer = FileWriter(str(self.log_dir), flush_secs=30)
        if resume_step is not None:  # TensorBoard hides earlier events from this step on
            purge = int(resume_step) + 1
            self._writer.add_event(Event(step=purge, file_version="brain.Event:2"))
            self._writer.add_event(Event(step=purge,
                                         session_log=SessionLog(status=SessionLog.START)))

    def write(self, step: int, record: Mapping[str, Any]) -> None:
        if self._writer is None:
            raise ValueError(f"TensorBoardWriter for {self.log_dir} is closed")
        values = [self._summary.Value(tag=key, simple_value=value)
                  for key, value in numeric_items(record).items()]
        self._writer.add_summary(self._summary(value=values), global_step=int(step))

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> TensorBoardWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class WandbWriter:
    """Each step as one ``wandb.log`` call of a run stored under ``run_dir/wandb``.

    ``mode`` is ``online``, ``offline`` or ``disabled``; ``None`` leaves it to W&B
    (``$WANDB_MODE``, else online). ``close()`` finishes the run and is idempotent.
    """

    def __init__(self, run_dir: str | os.PathLike, *, project: str, name: str | None = None,
                 config: Mapping[str, Any] | None = None, mode: str | None = None) -> None:
        try:
            import wandb
        except ImportError as exc:
            raise ImportError("logging.backends includes wandb, which needs the wandb package: "
                              "pip install 'verimath[wandb]'") from exc
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        id_file = self.run_dir / WANDB_ID_FILE
        run_id = (id_file.read_text(encoding="utf-8").strip() if id_file.is_file()
                  else secrets.token_hex(4))
        self._run = wandb.init(project=project, name=name or self.run_dir.name, id=run_id,
                               dir=str(self.run_dir), config=dict(config or {}), mode=mode,
                               resume="allow", reinit="create_new")
        id_file.write_text(run_id + "\n", encoding="utf-8")
        self.run_id = run_id

    @property
    def directory(self) -> Path | None:
        """The local folder of the W&B run (``run_dir/wandb/<offline-run-...>``), if any."""
        run = self._run
        folder = getattr(run, "dir", None) if run is not None else None
        return Path(folder).parent if folder else None

    def write(self, step: int, record: Mapping[str, Any]) -> None:
        if self._run is None:
            raise ValueError(f"WandbWriter for {self.run_dir} is closed")
        self._run.log(numeric_items(record), step=int(step))

    def close(self) -> None:
        if self._run is not None:
            self._run.finish()
            self._run = None

    def __enter__(self) -> WandbWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
