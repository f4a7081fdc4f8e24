"""The training loop: RL steps, evaluation cadence, checkpoints and the summary.

    with open_state(load_config("tiny", ["optim.steps=20"]), "runs/demo") as state:
        summary = train(state)

One step is :func:`verimath.trainer.run.step.rl_step`; everything it needs lives in a
:class:`verimath.trainer.core.state.TrainState`. Around the steps this module logs one
``metrics.jsonl`` line per step, evaluates the held-out set every ``eval.every`` steps and
after the last one, checkpoints every ``logging.save_every`` steps and at the end, and writes
``summary.json``, the learning curve and a table. The run directory holds::

    config.yaml          the full config of the run
    metrics.jsonl        one line per RL step (namespaced keys); step 0 is the held-out start
    checkpoints/step_*   model + tokenizer, optimizer, scheduler, RNG, run record, env state
    reference/           only with algo.kl_coef > 0 after a warm start: the KL reference
    engine_model/        only with rollout.engine=vllm and the built tiny model
    learning_curve.png   a few metrics against the step
    summary.json         held-out accuracy before/after RL, tokens, wall time
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from verimath.trainer.algo.schedule import refresh_lr
from verimath.trainer.core.state import TrainState
from verimath.trainer.rollout.async_source import GeneratorFailed
from verimath.trainer.run.checkpoints import save_state
from verimath.trainer.run.heldout import evaluate_heldout
from verimath.trainer.run.launch import interrupted_message, resume_command
from verimath.trainer.run.learning_signal import LearningSignalWatch, first_note_only
from verimath.trainer.run.metrics import make_metric_loggers, plot_learning_curve
from verimath.trainer.run.progress import bar_echo, is_print_step, metric_line, progress_bar
from verimath.trainer.run.step import rl_step

PLOT_KEYS = ("reward/accuracy", "eval/avg@{k}", "loss/policy", "sampling/kept_groups",
             "policy/entropy", "length/mean")


class Stopped(Exception):
    """The run stopped early with a checkpoint on disk; ``exit_code`` 0 for a requested stop
    (SIGTERM), 1 for a failure (too many non-finite updates in a row, or the generator
    process of asynchronous rollouts raised or died)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def train(state: TrainState) -> dict:
    """Run RL steps ``state.step .. optim.steps`` (or until ``optim.token_budget`` generated
    tokens); returns the summary (also written to
    ``summary.json``) and sets ``state.trained_nothing`` when steps ran in this session and
    none had a group to learn from (a warning names the likely cause). Raises
    :class:`Stopped` after saving a checkpoint when SIGTERM arrives
    (the current step finishes first) or when ``optim.max_skipped_updates`` updates in a row
    had a non-finite gradient."""
    cfg, comm = state.config, state.comm
    if state.resumed and state.finished:  # a finished run: touch nothing
        return _finish(state, _NoWriter(), done_before=True)
    writer = make_metric_loggers(  # metrics.jsonl, and TensorBoard / W&B when asked
        state.run_dir, cfg.logging.backends, resume_step=state.step, config=cfg.to_dict(),
        wandb_project=cfg.logging.wandb_project, wandb_mode=cfg.logging.wandb_mode,
        run_name=state.run_dir.name) if comm.is_main else _NoWriter()
    bar = progress_bar(cfg.optim.steps, state.step, cfg.logging.progress and comm.is_main, "RL")
    echo = state.echo
    watch = LearningSignalWatch(cfg, bar_echo(bar, echo))
    state.echo = first_note_only(bar_echo(bar, echo))
    stop = _StopRequest()
    try:
        if not state.resumed and state.record.before:
            writer.write(0, state.record.before)  # step 0: the held-out start of RL
        while not state.finished:
            _set_token_clock(state)
            try:
                metrics = rl_step(state)
            except GeneratorFailed as failed:  # async rollouts: the generator process is gone
                raise _generator_stopped(state, failed) from failed
            state.step += 1
            state.record.generated_tokens += int(metrics["compute/generated_tokens"])
            state.record.trained_tokens += int(metrics["compute/trained_tokens"])
            metrics.update(_evaluate_if_due(state))
            writer.write(state.step, metrics)
            watch.update(state.step, metrics)
            bar.update(1)
            bar.set_postfix(acc=f"{metrics['reward/accuracy']:.2f}",
                            kept=int(metrics["sampling/kept_groups"]))
            if is_print_step(state.step, cfg.logging.print_every, cfg.optim.steps) or (
                    state.finished and cfg.logging.print_every):
                state.echo(metric_line(state.step, cfg.optim.steps, metrics))
            _stop_if_asked(state, stop)
            every = cfg.logging.save_every
            if every and state.step % every == 0 and not state.finished:
                save_state(state)
        bar.close()
        watch.close()
        state.trained_nothing = watch.trained_nothing
        return _finish(state, writer, done_before=False)
    finally:
        stop.restore()
        bar.close()
        writer.close()
        state.echo = echo


def _generator_stopped(state: TrainState, failed: GeneratorFailed) -> Stopped:
    """Checkpoint step ``state.step`` (the failed step changed nothing) and say so. With
    several ranks, a checkpoint only when every rank stopped at the start of the step (they
    agreed, see ``AsyncEpisodeSource.start_step``); a rank that stopped within a step saves
    nothing (saving takes every rank, and the others wait for this one in a collective): it
    says why it stops, and torchrun ends the job."""
    comm = state.comm
    if comm.enabled and not failed.at_step_start:
        stopped = interrupted_message(state.run_dir, nproc=comm.world,
                                      local=comm.local_world or None)
        message = f"rank {comm.rank}: {failed}\n{stopped}"
        if not comm.is_main:  # rank 0 says it through the trainer's output
            print(message, file=sys.stderr, flush=True)
        return Stopped(message, exit_code=1)
    path = save_state(state)
    command = resume_command(state.run_dir, comm.world, local=comm.local_world or None)
    message = (f"{failed}\nthe run stopped at step {state.step} with the checkpoint {path}; "
               f"continue with: {command}")
    if comm.enabled:
        message = f"rank {comm.rank}: {message}"
        if not comm.is_main and failed.own:  # rank 0 speaks through the trainer's output
            print(message, file=sys.stderr, flush=True)
    return Stopped(message, exit_code=1)


def _stop_if_asked(state: TrainState, stop: _StopRequest) -> None:
    """Checkpoint and raise Stopped after SIGTERM (on any rank) or after too many skipped
    updates in a row."""
    cfg = state.config
    failing = state.skipped_in_a_row >= cfg.optim.max_skipped_updates
    asked, failing = state.comm.all_sum([float(stop.asked), float(failing)]) > 0
    if not (asked or failing) or state.finished:
        return
    path = save_state(state)
    command = resume_command(state.run_dir, state.comm.world,
                             local=state.comm.local_world or None)
    if failing:
        raise Stopped(f"{state.skipped_in_a_row} optimizer updates in a row had a NaN or inf "
                      f"gradient (optim.max_skipped_updates={cfg.optim.max_skipped_updates}); "
                      f"the run stopped at step {state.step} with the checkpoint {path}. Lower "
                      f"optim.lr or check the data, then: {command}", exit_code=1)
    raise Stopped(f"SIGTERM: checkpoint {path} saved at step {state.step}; continue with: "
                  f"{command}", exit_code=0)


class _StopRequest:
    """Notes SIGTERM (what schedulers send before preemption) instead of dying at once."""

    def __init__(self) -> None:
        self.asked, self.previous = False, None
        try:
            self.previous = signal.signal(signal.SIGTERM, self._note)
        except ValueError:  # not the main thread: leave the signal alone
            self.previous = None

    def _note(self, signum, frame) -> None:
        self.asked = True

    def restore(self) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
            self.previous = None


class _NoWriter:
    """The metrics writer of ranks other than 0 (rank 0 writes for the run)."""

    def write(self, step: int, metrics: dict) -> None:
        pass

    def close(self) -> None:
        pass


def _evaluate_if_due(state: TrainState) -> dict[str, float]:
    """Held-out metrics after the last step (kept in the record, so in the final
    checkpoint) and every ``eval.every`` steps."""
    cfg = state.config
    if state.finished:
        state.record.after = evaluate_heldout(state)
        return state.record.after
    if cfg.eval.every and state.step % cfg.eval.every == 0:
        return evaluate_heldout(state)
    return {}


def _set_token_clock(state: TrainState) -> None:
    """With ``optim.token_budget``: the schedule's clock at the tokens generated so far, and
    the next update's learning rate from it."""
    if state.token_clock is not None:
        state.token_clock.tokens = state.record.generated_tokens
        refresh_lr(state.scheduler)


def _finish(state: TrainState, writer, *, done_before: bool) -> dict:
    """Final checkpoint, summary.json, learning curve and table.

    Resuming a finished run (``done_before``) trains nothing and rewrites nothing: it prints
    the summary on disk (it writes one only when the run stopped before writing it)."""
    cfg, record = state.config, state.record
    summary_file = state.run_dir / "summary.json"
    if done_before:
        budget = cfg.optim.token_budget
        if budget and record.generated_tokens >= budget and state.step < cfg.optim.steps:
            state.echo(f"the run has generated {record.generated_tokens:,} tokens of its "
                       f"budget of {budget:,}: nothing to train (raise optim.token_budget "
                       "to continue)")
        else:
            state.echo(f"the run is already at step {state.start_step} of {cfg.optim.steps}: "
                       "nothing to train (raise optim.steps to continue)")
        if state.comm.all_sum([float(summary_file.is_file())])[0] == state.comm.world:
            summary = json.loads(summary_file.read_text(encoding="utf-8"))
            state.echo(summary_table(summary, state.run_dir))
            return summary
    if record.after is None:  # no RL step ran (optim.steps=0)
        record.after = evaluate_heldout(state)
        if record.after and not done_before:
            writer.write(state.step, record.after)
    if not done_before:
        save_state(state)
    summary = make_summary(record, k=cfg.eval.k, wall_seconds=state.elapsed(),
                           steps=state.step)
    if not state.comm.is_main:
        return summary
    summary_file.write_text(json.dumps(summary, indent=2) + "\n")
    if cfg.logging.plot:
        _plot(state)
    state.echo(summary_table(summary, state.run_dir))
    return summary


def _plot(state: TrainState) -> None:
    keys = [k.format(k=state.config.eval.k) for k in PLOT_KEYS]
    try:
        plot_learning_curve(state.run_dir / "metrics.jsonl",
                            state.run_dir / "learning_curve.png", keys=keys)
    except (ImportError, ValueError) as exc:  # no matplotlib, or no steps logged
        state.echo(f"learning curve not written: {exc}")


def make_summary(record, *, k: int, wall_seconds: float, steps: int) -> dict:
    """The ``summary.json`` record: accuracies as fractions in [0, 1] (None when no held-out
    set), token totals, the wall time of RL (``wall_seconds``: the steps, their evaluations and
    checkpoints, every session of a resumed run; not the model load, the warm start or the
    first evaluation) and of the warm start (``warmstart_seconds``)."""
    before, after = record.before, record.after or {}
    return {
        "heldout_acc_before_rl": before.get(f"eval/avg@{k}"),
        "heldout_acc_after_rl": after.get(f"eval/avg@{k}"),
        "heldout_greedy_acc_before_rl": before.get("eval/greedy"),
        "heldout_greedy_acc_after_rl": after.get("eval/greedy"),
        "heldout_problems": int(after.get("eval/problems", 0)),
        "eval_k": k,
        "rl_steps": steps,
        "generated_tokens": int(record.generated_tokens),
        "trained_tokens": int(record.trained_tokens),
        "wall_seconds": round(wall_seconds, 1),
        "warmstart_seconds": round(record.warmstart.get("warmstart/seconds", 0.0), 1),
    }


def summary_table(summary: dict, run_dir: Path) -> str:
    """A small plain-text table of the summary, printed at the end of a run."""
    def pct(x):
        return "   n/a" if x is None else f"{100 * x:5.1f}%"

    k = summary["eval_k"]
    rows = [
        ("", "before RL", "after RL"),
        (f"held-out avg@{k}", pct(summary["heldout_acc_before_rl"]),
         pct(summary["heldout_acc_after_rl"])),
        ("held-out greedy", pct(summary["heldout_greedy_acc_before_rl"]),
         pct(summary["heldout_greedy_acc_after_rl"])),
    ]
    lines = [f"{a:<18}{b:>11}{c:>11}" for a, b, c in rows]
    lines += [
        f"{'RL steps':<18}{summary['rl_steps']:>22}",
        f"{'generated tokens':<18}{summary['generated_tokens']:>22,}",
        f"{'trained tokens':<18}{summary['trained_tokens']:>22,}",
        f"{'RL wall time':<18}{summary['wall_seconds']:>21.0f}s",
        *([f"{'warm start':<18}{summary['warmstart_seconds']:>21.0f}s"]
          if summary.get("warmstart_seconds") else []),
        f"run directory: {run_dir}",
    ]
    return "\n".join(lines)
