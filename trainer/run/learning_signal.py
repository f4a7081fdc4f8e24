"""Is the run learning anything? Warnings for steps without a learning signal, and one line
(not one per step) for dynamic sampling that stops short.

A group whose responses are all right or all wrong has zero advantage everywhere, so a step without
an informative group (``0 < #correct < G``; carried surplus groups count) changes nothing.
:class:`LearningSignalWatch` warns after :data:`QUIET_STEPS` such steps in a row, naming the likely
cause from the step's counts, and tells the caller whether the session learned at all.
"""

from __future__ import annotations

from collections.abc import Callable

QUIET_STEPS = 3
"""Steps in a row without an informative group before the warning."""

SHORT_NOTE = "dynamic sampling "
"""How :func:`~verimath.trainer.algo.dynamic_sampling.collect_informative`'s note begins."""


def quiet_cause(config, all_wrong: int, all_right: int) -> str:
    """The likely reason that no group was informative, from the groups' verdicts."""
    style, template = config.reward.answer_style, config.model.prompt_template
    if all_wrong and not all_right:
        return (f"every response was wrong ({all_wrong} all-wrong groups). Most often the "
                "responses never state an answer the verifier reads: reward.answer_style="
                f"{style} looks for {_style_text(style)}, and model.prompt_template="
                f"{template!r:.40} must ask for that format (with a template and answer style "
                "that disagree every response is wrong, reward -1); otherwise the problems are "
                "far beyond the model (an easier data.level or data.train_file, or a warm "
                "start)")
    if all_right and not all_wrong:
        return (f"every response was right ({all_right} all-right groups): the problems are "
                "too easy for the model, so no response is better than another; use harder "
                "problems (data.level, data.train_file) or a higher rollout.temperature")
    return (f"each group was all right or all wrong ({all_right} all-right, {all_wrong} "
            "all-wrong): raise rollout.group_size so that groups mix right and wrong answers")


def _style_text(style: str) -> str:
    return {"dapo": "a last line 'Answer: x'", "boxed": "\\boxed{x}"}.get(
        style, "'Answer: x' or \\boxed{x}")


class LearningSignalWatch:
    """Fed every step's metrics; says (through ``echo``) when steps teach nothing."""

    def __init__(self, config, echo: Callable[[str], None]) -> None:
        self.config, self.echo = config, echo
        self.quiet, self.learned, self.steps, self.short = 0, 0, 0, 0
        self.first_short: int | None = None
        self.short_right = self.short_wrong = 0  # groups discarded on the steps cut short

    def update(self, step: int, metrics: dict[str, float]) -> None:
        self.steps += 1
        if metrics.get("sampling/hit_cap", 0):
            self.short += 1
            self.first_short = step if self.first_short is None else self.first_short
            self.short_right += int(metrics.get("sampling/all_correct_groups", 0))
            self.short_wrong += int(metrics.get("sampling/all_wrong_groups", 0))
        informative = metrics.get("sampling/informative_groups", 0) + \
            metrics.get("sampling/carried_groups", 0)
        if informative > 0 and metrics.get("compute/trained_tokens", 0) > 0:
            self.learned, self.quiet = self.learned + 1, 0
            return
        self.quiet, self.last = self.quiet + 1, (step, metrics)
        if self.quiet == QUIET_STEPS:
            self._warn()

    def _warn(self) -> None:
        step, metrics = self.last
        cause = quiet_cause(self.config, int(metrics.get("sampling/all_wrong_groups", 0)),
                            int(metrics.get("sampling/all_correct_groups", 0)))
        self.echo(f"warning: steps {step - self.quiet + 1}-{step} trained on nothing (no group "
                  f"mixed right and wrong answers): {cause}")

    @property
    def trained_nothing(self) -> bool:
        return self.steps > 0 and self.learned == 0

    def close(self) -> None:
        if self.trained_nothing and self.quiet < QUIET_STEPS:  # too few steps to have warned
            self._warn()
        if self.short > 1:
            self.echo(self.short_summary())

    def short_summary(self) -> str:
        """What steps cut short by the round cap mean: a policy that solves most problems
        (the discarded groups mostly all right: how a run that masters its task ends), or
        one that solves few (then more rounds or prompts per step would fill the steps)."""
        head = (f"dynamic sampling stopped short of algo.train_prompts on {self.short} of "
                f"{self.steps} steps, from step {self.first_short} on (only the first was "
                "printed; sampling/hit_cap in metrics.jsonl marks each)")
        discarded = self.short_right + self.short_wrong
        if discarded and self.short_right >= 0.8 * discarded:
            return (f"{head}: {self.short_right / discarded:.0%} of the groups discarded on "
                    "those steps were all right, so the policy solves most of these problems "
                    "and those steps trained on the informative groups there were; this is how "
                    "a run that masters its task ends")
        return (f"{head}: most discarded groups were all wrong; to fill every step, raise "
                "algo.max_gen_rounds or rollout.gen_prompts, or pose easier problems")



def first_note_only(echo: Callable[[str], None]) -> Callable[[str], None]:
    """``echo`` that prints the first "dynamic sampling stopped short" note of a session and
    drops the later ones (:meth:`LearningSignalWatch.close` counts them)."""
    seen = False

    def filtered(message: str) -> None:
        nonlocal seen
        if message.split(": ", 1)[-1].startswith(SHORT_NOTE):
            if seen:
                return
            seen = True
            message += " (later steps that stop short are counted, not printed)"
        echo(message)

    return filtered
