"""A training run's resources and bookkeeping: everything around the loop in ``loop.py``.

:class:`Run` builds the policy, the held-out set, the warm start, the optimizer and
scheduler, the episode source and the metrics writer from a :class:`TrainConfig`; it logs
steps, checkpoints, evaluates, and at the end writes ``summary.json``, the learning curve and
a table. The run directory holds::

    config.yaml          the full config of the run
    metrics.jsonl        one line per RL step (namespaced keys)
    checkpoints/step_*   model + tokenizer, optimizer, scheduler, RNG, sampler/env state
    reference/           only with algo.kl_coef > 0 and a warm start (or the tiny model):
                         the KL reference, i.e. the policy as RL started
    learning_curve.png   a few metrics against the step
    summary.json         held-out accuracy before/after RL, tokens, wall time
"""

from __future__ import annotations

import copy
import json
import math
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch
from verimath.rewards.pool import configure_default_pool
from verimath.trainer.checkpoint import load_checkpoint, resolve_checkpoint, save_checkpoint
from verimath.trainer.config import TrainConfig
from verimath.trainer.config_io import save_config
from verimath.trainer.episodes import EpisodeSource, heldout_problems
from verimath.trainer.evaluate import evaluate
from verimath.trainer.metrics import MetricsWriter, plot_learning_curve
from verimath.trainer.policy import (
    load_policy,
    load_reference,
    resolve_device,
    save_reference,
    seed_everything,
)
from verimath.trainer.rollout import HFRolloutEngine, SamplingParams
from verimath.trainer.schedule import make_lr_lambda
from verimath.trainer.update import LossSettings
from verimath.trainer.warmstart import warmstart

REFERENCE_DIR = "reference"
PLOT_KEYS = ("reward/accuracy", "eval/avg@{k}", "loss/policy", "sampling/kept_groups",
             "policy/entropy", "length/mean")


def new_run_dir(root: str | Path = "runs", name: str = "run") -> Path:
    """A fresh ``root/<name>-<UTC timestamp>`` directory (suffixed if it exists)."""
    base = Path(root) / f"{name}-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}"
    path, i = base, 1
    while path.exists():
        path, i = Path(f"{base}-{i}"), i + 1
    return path


def make_loss_settings(config: TrainConfig) -> LossSettings:
    """The loss switches of a config: DAPO 1 (``algo.clip_higher`` -> ``eps_high``, else
    ``eps_low`` on both sides) and DAPO 3 (``algo.token_level_loss`` -> ``token-mean``, else
    GRPO's ``seq-mean-token-mean``)."""
    algo = config.algo
    eps_low, eps_high = algo.clip_range
    return LossSettings(
        eps_low=eps_low, eps_high=eps_high, dual_clip=algo.dual_clip,
        aggregation="token-mean" if algo.token_level_loss else "seq-mean-token-mean",
        kl_coef=algo.kl_coef, temperature=config.rollout.temperature,
        chunk_size=algo.logprob_chunk_size)


class Run:
    """Owns model, optimizer, episode source, metrics file and progress bar of one run.

    Use as a context manager (or call ``close()``, idempotent). ``resume`` is a checkpoint
    directory or a run directory (its latest checkpoint is used).
    """

    def __init__(self, config: TrainConfig, *, run_dir: str | Path, resume: str | None = None,
                 echo=print) -> None:
        self.config, self.run_dir, self.echo = config, Path(run_dir), echo
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.t_start = time.perf_counter()
        cfg = config
        if cfg.model.threads:
            torch.set_num_threads(cfg.model.threads)
        self.device, self.dtype = resolve_device(cfg.model.device, cfg.model.dtype)
        seed_everything(cfg.optim.seed)
        self.model, self.tokenizer = load_policy(cfg.model, device=self.device, dtype=self.dtype,
                                                 seed=cfg.optim.seed)
        self.pad_id = self.tokenizer.pad_token_id
        self.temperature = cfg.rollout.temperature
        self.loss_settings = make_loss_settings(cfg)
        if cfg.reward.workers:
            configure_default_pool(cfg.reward.workers)
        procedural = cfg.data.train_file is None  # a file run evaluates on heldout_file only
        self.heldout = heldout_problems(
            family=cfg.data.family, level=cfg.data.level, seed=cfg.eval.seed,
            count=cfg.eval.num_problems if procedural else 0, path=cfg.data.heldout_file,
            skip_containing=cfg.data.skip_containing)
        if cfg.rollout.engine != "hf":
            raise ValueError(f"rollout.engine={cfg.rollout.engine!r} is not available yet; "
                             "use rollout.engine=hf")
        whole = max(cfg.eval.batch_size, cfg.rollout.gen_prompts * cfg.rollout.group_size)
        self.engine = HFRolloutEngine(self.model, self.tokenizer,
                                      batch_size=cfg.rollout.batch_size or whole)
        self.state = {"totals": {"generated_tokens": 0, "trained_tokens": 0}, "before": {},
                      "warmstart": {}, "seconds_before": 0.0}
        self.start_step, ckpt = 0, None
        self.resumed = resume is not None
        if resume is not None:
            ckpt = load_checkpoint(resolve_checkpoint(resume), model=self.model, restore_rng=False)
            self.start_step = ckpt["step"]
            self.state.update(copy.deepcopy(_trainer_state(ckpt)["run"]))
        if ckpt is None:
            save_config(cfg, self.run_dir / "config.yaml")
            self._warm_start_and_evaluate()
        self.ref_model = self._reference_model(ckpt) if cfg.algo.kl_coef > 0 else None
        self._build_optimizer()
        self.episodes = self._make_episodes()
        if ckpt is not None:  # optimizer, scheduler, RNG and the problem stream
            load_checkpoint(ckpt["path"], optimizer=self.optimizer, scheduler=self.scheduler)
            self.episodes.load_state_dict(_trainer_state(ckpt)["episodes"])
            save_config(cfg, self.run_dir / "config.yaml")  # the resumed config, overrides included
            self.say(f"resumed from {ckpt['path']} at step {self.start_step}")
        self.writer = MetricsWriter(self.run_dir / "metrics.jsonl", resume_step=self.start_step)
        if ckpt is None and self.state["before"]:
            self.writer.write(0, self.state["before"])  # step 0: the held-out start of RL
        self.bar = _progress(cfg.optim.steps, self.start_step, cfg.logging.progress, "RL")
        self.closed = False

    # -- setup -----------------------------------------------------------------------------
    def _warm_start_and_evaluate(self) -> None:
        cfg = self.config
        if cfg.warmstart.steps:
            bar = _progress(cfg.warmstart.steps, 0, cfg.logging.progress, "warm start")
            ws = cfg.warmstart
            self.state["warmstart"] = warmstart(
                self.model, self.tokenizer, family=cfg.data.family, level=cfg.data.level,
                seed=cfg.data.seed + 1, excluded=self._heldout_prompts(),
                skip_containing=cfg.data.skip_containing, steps=ws.steps,
                batch_size=ws.batch_size, lr=ws.lr, template=cfg.model.prompt_template,
                use_chat_template=cfg.model.use_chat_template, answer_prefix=ws.answer_prefix,
                noise=ws.noise, progress=bar)
            bar.close()
        self.state["before"] = self.evaluate()
        if self.state["before"]:
            self.say("held-out before RL: " + _fmt(self.state["before"]))

    def _reference_model(self, ckpt: dict | None):
        """The frozen KL reference: the policy as RL started (after the warm start), also
        after ``--resume``. Its origin is recorded in the run state (so in every checkpoint):
        ``model.path`` when RL starts from that directory unchanged, else a copy written once
        to ``<run dir>/reference/`` (a relative origin resolves against the checkpoint's run
        directory)."""
        cfg = self.config
        if ckpt is None:
            if cfg.model.path is not None and not cfg.warmstart.steps:
                self.state["reference"] = str(Path(cfg.model.path).resolve())
            else:
                save_reference(self.model, self.run_dir / REFERENCE_DIR)
                self.state["reference"] = REFERENCE_DIR
            return copy.deepcopy(self.model).eval().requires_grad_(False)
        origin = self.state.get("reference")
        if origin is None:
            raise ValueError(
                f"algo.kl_coef > 0 but checkpoint {ckpt['path']} records no KL reference model "
                "(the run started with algo.kl_coef=0); resume with algo.kl_coef=0 or start a "
                "new run")
        path = Path(ckpt["path"]).parent.parent / origin  # an absolute origin stays as is
        if path.resolve().parent != self.run_dir.resolve():  # resumed into another directory
            self.state["reference"] = str(path.resolve())
        return load_reference(path, device=self.device, dtype=self.dtype)

    def _heldout_prompts(self) -> set[str]:
        return {p.prompt for p in self.heldout}

    def _build_optimizer(self) -> None:
        o, a = self.config.optim, self.config.algo
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=o.lr, betas=o.betas,
                                           weight_decay=o.weight_decay)
        per_step = a.ppo_epochs * math.ceil(a.train_prompts / a.mini_batch_prompts)
        total = max(1, o.steps * per_step)
        lam = make_lr_lambda(warmup_steps=min(o.warmup_steps, total - 1),  # total >= 1
                             total_steps=total, schedule=o.schedule)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lam)

    def _make_episodes(self) -> EpisodeSource:
        cfg, r = self.config, self.config.reward
        reward_kwargs = {"style": r.answer_style, "mode": r.mode, "timeout": r.timeout}
        if r.overlong_punishment:  # DAPO 4: soft overlong punishment, added by the env
            reward_kwargs.update(max_length=cfg.rollout.max_new_tokens,
                                 cache_length=r.overlong_buffer)
        return EpisodeSource(
            tokenizer=self.tokenizer, engine=self.engine, params=self.sampling_params(),
            num_problems=cfg.rollout.gen_prompts, group_size=cfg.rollout.group_size,
            template=cfg.model.prompt_template, use_chat_template=cfg.model.use_chat_template,
            family=cfg.data.family, level=cfg.data.level, seed=cfg.data.seed,
            train_file=cfg.data.train_file, excluded=self._heldout_prompts(),
            reward_kwargs=reward_kwargs, skip_containing=cfg.data.skip_containing)

    def sampling_params(self) -> SamplingParams:
        r = self.config.rollout
        return SamplingParams(temperature=r.temperature, top_p=r.top_p,
                              max_new_tokens=r.max_new_tokens)

    # -- during training -------------------------------------------------------------------
    def say(self, message: str) -> None:
        bar = getattr(self, "bar", None)
        (bar.write if bar is not None and hasattr(bar, "write") else self.echo)(message)

    def evaluate(self) -> dict[str, float]:
        cfg = self.config
        if not self.heldout:
            return {}
        return evaluate(self.engine, self.tokenizer, self.heldout, k=cfg.eval.k,
                        temperature=cfg.rollout.temperature, top_p=cfg.rollout.top_p,
                        max_new_tokens=cfg.rollout.max_new_tokens,
                        template=cfg.model.prompt_template,
                        use_chat_template=cfg.model.use_chat_template,
                        answer_style=cfg.reward.answer_style, mode=cfg.reward.mode,
                        timeout=cfg.reward.timeout, batch_size=cfg.eval.batch_size)

    def log_step(self, step: int, metrics: dict[str, float]) -> None:
        """Record step ``step`` (1-based count of finished steps); evaluate and save if due."""
        cfg, totals = self.config, self.state["totals"]
        totals["generated_tokens"] += int(metrics["compute/generated_tokens"])
        totals["trained_tokens"] += int(metrics["compute/trained_tokens"])
        if step == cfg.optim.steps:  # the run's result, stored in the final checkpoint too
            self.state["after"] = self.evaluate()
            metrics.update(self.state["after"])
        elif cfg.eval.every and step % cfg.eval.every == 0:
            metrics.update(self.evaluate())
        self.writer.write(step, metrics)
        self.bar.update(1)
        self.bar.set_postfix(acc=f"{metrics['reward/accuracy']:.2f}",
                             kept=int(metrics["sampling/kept_groups"]))
        every = cfg.logging.save_every
        if every and step % every == 0 and step < cfg.optim.steps:
            self.save(step)

    def save(self, step: int) -> Path:
        state = {"run": {**self.state, "seconds_before": self.elapsed()},
                 "episodes": self.episodes.state_dict()}
        return save_checkpoint(self.run_dir / "checkpoints", model=self.model,
                               tokenizer=self.tokenizer, optimizer=self.optimizer,
                               scheduler=self.scheduler, step=step,
                               config=self.config.to_dict(), extra_state=state,
                               keep_last=self.config.logging.keep_checkpoints)

    def elapsed(self) -> float:
        """Wall seconds of this run, earlier sessions of a resumed run included."""
        return self.state["seconds_before"] + time.perf_counter() - self.t_start

    # -- the end ---------------------------------------------------------------------------
    def finish(self) -> dict:
        """Final checkpoint, summary.json, learning curve and table.

        The final held-out evaluation was logged with the last step (``log_step``) and saved
        in the final checkpoint, so resuming from that checkpoint neither evaluates again nor
        writes a metrics line twice; it rewrites the same summary."""
        cfg = self.config
        self.bar.close()
        done_before = self.start_step >= cfg.optim.steps and self.resumed
        if done_before:
            self.say(f"the checkpoint is already at step {self.start_step} of "
                     f"{cfg.optim.steps}: nothing to train (raise optim.steps to continue)")
        after = self.state.get("after")
        if after is None:  # no RL step ran (optim.steps=0), or an older final checkpoint
            after = self.state["after"] = self.evaluate()
            if after and not done_before:
                self.writer.write(cfg.optim.steps, after)
        if not done_before:
            self.save(cfg.optim.steps)
        summary = make_summary(self.state, after, k=cfg.eval.k, wall_seconds=self.elapsed(),
                               steps=cfg.optim.steps)
        (self.run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        self.writer.close()
        if cfg.logging.plot:
            self._plot()
        self.echo(summary_table(summary, self.run_dir))
        return summary

    def _plot(self) -> None:
        keys = [k.format(k=self.config.eval.k) for k in PLOT_KEYS]
        try:
            plot_learning_curve(self.run_dir / "metrics.jsonl",
                                self.run_dir / "learning_curve.png", keys=keys)
        except (ImportError, ValueError) as exc:  # no matplotlib, or no steps logged
            self.say(f"learning curve not written: {exc}")

    def close(self) -> None:
        if getattr(self, "closed", True):
            return
        self.closed = True
        self.bar.close()
        self.writer.close()
        self.episodes.close()
        self.engine.close()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _trainer_state(ckpt: dict) -> dict:
    """The trainer's part of a checkpoint (``run`` bookkeeping and ``episodes`` stream)."""
    extra = ckpt.get("extra_state")
    if not isinstance(extra, dict) or not {"run", "episodes"} <= extra.keys():
        raise ValueError(f"checkpoint {ckpt['path']} holds no trainer state (extra_state needs "
                         "'run' and 'episodes'): it was not written by verimath train, or is "
                         "corrupt; resume from an earlier checkpoint directory")
    return extra


def _progress(total: int, initial: int, enabled: bool, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, desc=desc, dynamic_ncols=True,
                leave=True)


def _fmt(metrics: dict[str, float]) -> str:
    return ", ".join(f"{k.split('/')[-1]} {v:.3f}" for k, v in metrics.items()
                     if k != "eval/problems")


def step_metrics(sampling, rounds, update: dict[str, float], kept, *, seconds_update: float,
                 seconds_step: float) -> dict[str, float]:
    """The namespaced record of one RL step (see the README's metric list)."""
    lengths = np.asarray(rounds.lengths if rounds.lengths else [0])
    out = {
        "compute/generated_tokens": float(rounds.generated_tokens),
        "compute/trained_tokens": update.get("compute/trained_tokens", 0.0),
        **sampling.as_metrics(),
        "time/generate": rounds.seconds_generate,
        "time/score": rounds.seconds_score,
        "time/update": seconds_update,
        "time/step": seconds_step,
        "reward/accuracy": rounds.correct / max(rounds.responses, 1),
        "reward/kept_mean": float(np.mean([g.rewards.mean() for g in kept])) if kept else 0.0,
        "length/mean": float(lengths.mean()),
        "length/max": float(lengths.max()),
        "length/truncated_frac": rounds.truncated / max(rounds.responses, 1),
    }
    out.update({k: v for k, v in update.items() if k != "compute/trained_tokens"})
    return out


def make_summary(state: dict, after: dict[str, float], *, k: int, wall_seconds: float,
                 steps: int) -> dict:
    """The ``summary.json`` record: accuracies as fractions in [0, 1] (None when no held-out
    set), token totals and wall time."""
    before = state.get("before", {})
    return {
        "heldout_acc_before_rl": before.get(f"eval/avg@{k}"),
        "heldout_acc_after_rl": after.get(f"eval/avg@{k}"),
        "heldout_greedy_acc_before_rl": before.get("eval/greedy"),
        "heldout_greedy_acc_after_rl": after.get("eval/greedy"),
        "heldout_problems": int(after.get("eval/problems", 0)),
        "eval_k": k,
        "rl_steps": steps,
        "generated_tokens": int(state["totals"]["generated_tokens"]),
        "trained_tokens": int(state["totals"]["trained_tokens"]),
        "wall_seconds": round(wall_seconds, 1),
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
        f"{'wall time':<18}{summary['wall_seconds']:>21.0f}s",
        f"run directory: {run_dir}",
    ]
    return "\n".join(lines)
