"""The variants of a DAPO ablation: which of the five controls each one switches on.

DAPO is GRPO plus five switches (``verimath.trainer.config``): overlong filtering,
clip-higher, the soft overlong punishment, the token-level loss and dynamic sampling. A
variant is the set of switches it turns on; its name and label follow from that set, so two
families that reach the same set share one variant (and one set of runs). Families:

- ``cumulative``: the paper's path (Yu et al. 2025, Table 1): GRPO, then each control added
  on top of the previous ones in :data:`CONTROLS` order, ending at DAPO;
- ``leave-one-out``: DAPO, then DAPO with one control switched off, for each control;
- ``add-one``: GRPO, then GRPO with one control switched on, for each control;
- ``all``: the three together, each variant once (14 variants);
- ``losses``: DAPO, then DAPO with each other registered policy loss in place of the clipped
  surrogate (``algo.policy_loss``: CISPO, GSPO, Clip-Cov, KL-Cov; named ``dapo-with-<loss>``
  and compared with DAPO seed by seed). Not part of ``all``.
- ``corrections``: DAPO, then DAPO one step off (``rollout.async_steps=1``) with each
  treatment of stale groups: the ratio against the sampler (``dapo-async-sampler``,
  ``algo.proximal_clip=false``), and against the policy at the start of the step with each
  rollout correction (``dapo-async-<mode>``, ``algo.rollout_correction``; ``token-truncate``
  is the asynchronous default). Compared with synchronous DAPO seed by seed. Not part of
  ``all``; in a synchronous run the corrections change nothing (the sampler is the policy).
"""

from __future__ import annotations

from dataclasses import dataclass

from verimath.trainer.config.choices import POLICY_LOSS_NAMES, ROLLOUT_CORRECTION_NAMES


@dataclass(frozen=True)
class Control:
    """One DAPO switch: a short name for variant names, the config key, a label."""

    slug: str
    key: str
    label: str


CONTROLS = (  # the paper's cumulative order
    Control("filter", "algo.overlong_filtering", "overlong filtering"),
    Control("clip-higher", "algo.clip_higher", "clip-higher"),
    Control("soft-punish", "reward.overlong_punishment", "soft overlong punishment"),
    Control("token-loss", "algo.token_level_loss", "token-level loss"),
    Control("dyn-sampling", "algo.dynamic_sampling", "dynamic sampling"),
)
FAMILIES = ("cumulative", "leave-one-out", "add-one")
FAMILY_CHOICES = (*FAMILIES, "all", "losses", "corrections")
SAMPLER = "sampler"
"""The ``corrections`` family's stale-group treatment without a proximal policy."""
LOSS_LABELS = {"cispo": "CISPO", "gspo": "GSPO", "clip-cov": "Clip-Cov", "kl-cov": "KL-Cov"}
"""Table labels of the policy losses (a registered loss without one shows its name)."""


@dataclass(frozen=True)
class Variant:
    """A set of switched-on controls (by slug, in :data:`CONTROLS` order), the policy loss,
    and the families that asked for it."""

    on: tuple[str, ...]
    families: tuple[str, ...] = ()
    loss: str = "clip"
    """``algo.policy_loss``; ``clip`` (the default) is DAPO's clipped surrogate."""
    stale: str | None = None
    """One step off with this treatment of stale groups: a rollout correction's name, or
    :data:`SAMPLER`; None: synchronous."""

    @property
    def off(self) -> tuple[str, ...]:
        return tuple(c.slug for c in CONTROLS if c.slug not in self.on)

    @property
    def name(self) -> str:
        """Directory name: ``grpo``, ``dapo``, ``grpo+clip-higher``, ``dapo-token-loss``,
        ``grpo+filter+clip-higher`` (fewer switches on than off: listed as added to GRPO),
        then ``-with-<loss>`` for a policy loss other than ``clip`` (``dapo-with-gspo``)."""
        name = self._controls_name + ("" if self.loss == "clip" else f"-with-{self.loss}")
        return name if self.stale is None else f"{name}-async-{self.stale}"

    @property
    def _controls_name(self) -> str:
        if not self.on:
            return "grpo"
        if not self.off:
            return "dapo"
        if len(self.off) == 1:
            return f"dapo-{self.off[0]}"
        return "grpo+" + "+".join(self.on)

    @property
    def label(self) -> str:
        """Table label: ``GRPO``, ``DAPO``, ``DAPO - clip-higher``, ``GRPO + ... + ...``, and
        ``, <loss> loss`` for a policy loss other than ``clip`` (``DAPO, GSPO loss``)."""
        label = self._controls_label
        if self.loss != "clip":
            label = f"{label}, {LOSS_LABELS.get(self.loss, self.loss)} loss"
        if self.stale is not None:
            label = f"{label}, one step off, " + (
                "ratio against the sampler" if self.stale == SAMPLER else
                "ratio against the step's start" + (
                    ", unweighted" if self.stale == "none" else f", {self.stale}"))
        return label

    @property
    def _controls_label(self) -> str:
        labels = {c.slug: c.label for c in CONTROLS}
        if not self.on:
            return "GRPO"
        if not self.off:
            return "DAPO"
        if len(self.off) == 1:
            return f"DAPO - {labels[self.off[0]]}"
        return "GRPO + " + " + ".join(labels[s] for s in self.on)

    def overrides(self) -> list[str]:
        """``key=true|false`` for every control (all five, so that the preset's own values
        never leak into a variant), and ``algo.policy_loss`` when it is not ``clip``."""
        out = [f"{c.key}={'true' if c.slug in self.on else 'false'}" for c in CONTROLS]
        out += [] if self.loss == "clip" else [f"algo.policy_loss={self.loss}"]
        if self.stale == SAMPLER:
            out += ["rollout.async_steps=1", "algo.proximal_clip=false"]
        elif self.stale is not None:
            out += ["rollout.async_steps=1", "algo.proximal_clip=true",
                    f"algo.rollout_correction={self.stale}"]
        return out


def family_variants(family: str) -> list[tuple[str, ...]]:
    """The switched-on sets of one family, in its reading order (its reference first)."""
    slugs = [c.slug for c in CONTROLS]
    if family == "cumulative":
        return [tuple(slugs[:k]) for k in range(len(slugs) + 1)]
    if family == "leave-one-out":  # DAPO first: the reference of the family
        return [tuple(slugs)] + [tuple(s for s in slugs if s != off) for off in slugs]
    if family == "add-one":  # GRPO first
        return [()] + [(on,) for on in slugs]
    raise ValueError(f"--family must be one of {', '.join(FAMILY_CHOICES)}, got {family!r}")


DAPO_ON = tuple(c.slug for c in CONTROLS)
"""Every control switched on: DAPO."""


def _dapo_reference(family: str) -> Variant:
    """DAPO as the reference of ``family`` (it also belongs to two of the paper's families)."""
    return Variant(DAPO_ON, ("cumulative", "leave-one-out", family))


def loss_variants() -> list[Variant]:
    """The ``losses`` family: DAPO (its reference), then DAPO with each other registered
    policy loss."""
    return [_dapo_reference("losses")] + [
        Variant(DAPO_ON, ("losses",), loss) for loss in POLICY_LOSS_NAMES if loss != "clip"]


def correction_variants() -> list[Variant]:
    """The ``corrections`` family: synchronous DAPO (its reference), then DAPO one step off
    with the sampler's ratio and with each rollout correction."""
    return [_dapo_reference("corrections")] + [
        Variant(DAPO_ON, ("corrections",), stale=stale)
        for stale in (SAMPLER, *ROLLOUT_CORRECTION_NAMES)]


def select_variants(family: str) -> list[Variant]:
    """The variants of ``family`` (or of ``all``), each switched-on set once, with every
    family it belongs to; order: first appearance (cumulative, leave-one-out, add-one)."""
    if family == "losses":
        return loss_variants()
    if family == "corrections":
        return correction_variants()
    names = FAMILIES if family == "all" else (family,)
    if family != "all" and family not in FAMILIES:
        raise ValueError(f"--family must be one of {', '.join(FAMILY_CHOICES)}, got {family!r}")
    members: dict[tuple[str, ...], list[str]] = {}
    for fam in FAMILIES:  # every family, so that a variant lists all it belongs to
        for on in family_variants(fam):
            members.setdefault(on, []).append(fam)
    chosen: list[tuple[str, ...]] = []
    for fam in names:
        chosen += [on for on in family_variants(fam) if on not in chosen]
    return [Variant(on, tuple(members[on])) for on in chosen]
