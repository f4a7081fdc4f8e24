"""Reading configs: YAML presets, nested dicts and dotted command-line overrides.

``load_config("tiny", ["algo.eps_high=0.2"])`` reads a preset (``trainer/config/presets``)
or a YAML path, then applies ``section.key=value`` overrides; each value is parsed as YAML and
checked against the field's type, and every error names the file or override, the key and
what was expected. A YAML file may start from another preset with ``__base__: tiny``, and
may name settings that have no usable default with ``__requires__`` (a mapping from
``section.key`` to a hint; the ``dapo`` preset requires ``model.path``): ``load_config``
refuses to build a config that leaves one of them unset. A preset's first comment line is
its one-line purpose (``verimath train --list-presets``).
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
import types
import typing
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from verimath.trainer.config import TrainConfig


def presets_folder():
    """The folder of the bundled presets (``verimath/trainer/config/presets/*.yaml``)."""
    return resources.files("verimath.trainer.config.presets")


SECTIONS = {f.name: f.type for f in dataclasses.fields(TrainConfig)}
_ALIASES = {"algorithm": "algo", "optimisation": "optim", "optimization": "optim"}
BASE_KEY, REQUIRES_KEY = "__base__", "__requires__"

RETIRED_PRESETS = {
    "chain": "RL on it ended -0.3 points from its warm start "
             "(docs/experiments/2026-12-02-chain-ablation.md). Train `chain-mix` (mixed chain "
             "lengths, flawed warm start), which learns; the settings remain as `chain-base`, "
             "the base of chain-mix and the mech-* presets, to reproduce that page.",
}
"""Names that were presets, with why they went and what to use: loading one says so."""


def _section_class(name: str) -> type:
    return typing.get_type_hints(TrainConfig)[name]


def _coerce(value: Any, hint: Any, where: str) -> Any:
    """Check ``value`` against a field type hint; ints are accepted for floats."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _coerce(value, arg, where)
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError(errors[0])
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:  # tuple[X, ...]
            if isinstance(value, str) and args[0] is str:  # one name: a list of one
                value = [value]
            if not isinstance(value, (list, tuple)):
                raise ValueError(f"{where}: expected a list, got {value!r}")
            return tuple(_coerce(v, args[0], where) for v in value)
        if not isinstance(value, (list, tuple)) or len(value) != len(args):
            raise ValueError(f"{where}: expected a list of {len(args)} values, got {value!r}")
        return tuple(_coerce(v, a, where) for v, a in zip(value, args))
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint is bool and not isinstance(value, bool):
        raise ValueError(f"{where}: expected true or false, got {value!r}")
    if hint is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"{where}: expected an integer, got {value!r}")
    if not isinstance(value, hint):
        raise ValueError(f"{where}: expected {hint.__name__}, got {type(value).__name__} {value!r}")
    return value


def config_from_dict(data: dict[str, Any] | None, *, source: str = "config") -> TrainConfig:
    """Build a :class:`TrainConfig` from a nested dict; unknown sections/keys raise ValueError."""
    data = data or {}
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a mapping of sections, got {type(data).__name__}")
    sections = {}
    for raw_name, values in data.items():
        name = _ALIASES.get(raw_name, raw_name)
        if name not in SECTIONS:
            raise ValueError(f"{source}: unknown section {raw_name!r}; known: "
                             f"{', '.join(SECTIONS)}")
        if not isinstance(values, dict):
            raise ValueError(f"{source}: section {raw_name!r} must be a mapping")
        sections[name] = _build_section(name, values, source)
    return TrainConfig(**sections)


def _build_section(name: str, values: dict[str, Any], source: str):
    cls = _section_class(name)
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for key, value in values.items():
        if key not in hints:
            raise ValueError(
                f"{source}: unknown key {name}.{key}; {name} has: {', '.join(hints)}"
            )
        kwargs[key] = _coerce(value, hints[key], f"{source}: {name}.{key}")
    return cls(**kwargs)


def parse_override(text: str) -> tuple[str, str, Any]:
    """``"algo.eps_high=0.28"`` -> ``("algo", "eps_high", 0.28)`` (value parsed as YAML)."""
    key, sep, raw = text.partition("=")
    section, dot, name = key.strip().partition(".")
    if not sep or not dot or not section or not name:
        raise ValueError(f"override {text!r} must look like section.key=value (e.g. optim.lr=1e-5)")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise ValueError(f"override {text!r}: value is not valid YAML ({exc})") from None
    if isinstance(value, str) and _looks_numeric(value):
        value = float(value)  # YAML 1.1 reads "1e-5" as a string
    return _ALIASES.get(section, section), name, value


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def apply_overrides(config: TrainConfig, overrides: list[str]) -> TrainConfig:
    """Return a new config with ``section.key=value`` overrides applied and re-validated."""
    data = config.to_dict()
    for text in overrides:
        section, name, value = parse_override(text)
        if section not in data:
            raise ValueError(f"override {text!r}: unknown section {section!r}; known: "
                             f"{', '.join(data)}")
        if name not in data[section]:
            raise ValueError(
                f"override {text!r}: unknown key {section}.{name}; "
                f"{section} has: {', '.join(data[section])}"
            )
        data[section][name] = value
    return config_from_dict(data, source="command line")


def preset_names() -> list[str]:
    """Names of the bundled presets (``tiny``, ``dapo``, ``grpo``, ...)."""
    folder = presets_folder()
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def preset_descriptions() -> dict[str, str]:
    """``{name: one-line purpose}``: each preset's first comment line."""
    folder = presets_folder()
    out = {}
    for name in preset_names():
        text = (folder / f"{name}.yaml").read_text(encoding="utf-8")
        comments = [line.lstrip("#").strip() for line in text.splitlines()
                    if line.startswith("#")]
        out[name] = comments[0] if comments else ""
    return out


def read_config_file(name_or_path: str, *, _depth: int = 0) -> tuple[dict[str, Any], str]:
    """Load a preset name or a YAML path; returns ``(mapping, source description)``.

    A file may name another preset or file as ``__base__``; its sections are merged under
    the file's own keys. ``__requires__`` entries of the chain are merged and kept in the
    mapping (as a dict ``{"section.key": hint}``) for :func:`load_config` to check.
    """
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise ValueError(f"config file {path} does not exist")
        try:
            text, source = path.read_text(encoding="utf-8"), str(path)
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at "
                             f"offset {exc.start}); save the file as UTF-8") from None
    else:
        if name_or_path in RETIRED_PRESETS:
            raise ValueError(f"preset {name_or_path!r} is retired: "
                             f"{RETIRED_PRESETS[name_or_path]}")
        if name_or_path not in preset_names():
            raise ValueError(
                f"unknown preset {name_or_path!r}; presets: {', '.join(preset_names())} "
                "(or pass a path to a .yaml file)"
            )
        res = presets_folder() / f"{name_or_path}.yaml"
        text, source = res.read_text(encoding="utf-8"), f"preset {name_or_path}"
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{source}: invalid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a mapping of sections, got {type(data).__name__}")
    requires = _read_requires(data.pop(REQUIRES_KEY, None), source)
    base = data.pop(BASE_KEY, None)
    if base is not None:  # a preset may start from another one and change a few keys
        if base == name_or_path or _depth >= 8:
            raise ValueError(f"{source}: __base__ chain is circular or too deep")
        try:
            base_data, _ = read_config_file(str(base), _depth=_depth + 1)
        except ValueError as exc:
            raise ValueError(f"{source}: __base__: {exc}") from None
        requires = {**base_data.pop(REQUIRES_KEY, {}), **requires}
        data = _merge(base_data, data)
    if requires:
        data[REQUIRES_KEY] = requires
    return data, source


def _read_requires(value: Any, source: str) -> dict[str, str]:
    """``__requires__`` as ``{"section.key": hint}``; a list of keys is accepted too."""
    if value is None:
        return {}
    if isinstance(value, list):
        value = {key: "" for key in value}
    if not isinstance(value, dict):
        raise ValueError(f"{source}: __requires__ must map section.key to a hint, e.g. "
                         "'__requires__: {model.path: a local model directory}'")
    for key in value:
        section, _, name = str(key).partition(".")
        fields = {f.name for f in dataclasses.fields(_section_class(section))} \
            if section in SECTIONS else set()
        if name not in fields:
            raise ValueError(f"{source}: __requires__ names {key!r}, which is not a setting "
                             "(expected section.key, e.g. model.path)")
    return {str(k): str(v or "") for k, v in value.items()}


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def load_config(name_or_path: str = "tiny", overrides: list[str] | None = None, *,
                check_required: bool = True) -> TrainConfig:
    """Read a preset or YAML file, then apply dotted overrides.

    With ``check_required`` (the default), a setting the file lists in ``__requires__``
    that is still unset (None) after the overrides raises ValueError naming it, with an
    example command.
    """
    data, source = read_config_file(name_or_path)
    requires = data.pop(REQUIRES_KEY, {})
    config = apply_overrides(config_from_dict(data, source=source), list(overrides or []))
    if check_required:
        check_required_settings(config, requires, name_or_path)
    return config


def required_settings(name_or_path: str) -> dict[str, str]:
    """The ``__requires__`` of a preset or YAML file (its ``__base__`` chain included)."""
    return read_config_file(name_or_path)[0].get(REQUIRES_KEY, {})


def setting(config: TrainConfig, key: str) -> Any:
    """The value of ``"section.key"`` in ``config``."""
    section, _, name = key.partition(".")
    return getattr(getattr(config, section), name)


def check_required_settings(config: TrainConfig, requires: dict[str, str],
                            name_or_path: str) -> None:
    """ValueError when a required setting is unset, naming it and the way to give it."""
    missing = [key for key in requires if setting(config, key) is None]
    if not missing:
        return
    where = f"preset {name_or_path!r}" if name_or_path in preset_names() else name_or_path
    what = "; ".join(f"{key}: {requires[key]}" if requires[key] else key for key in missing)
    example = " ".join(f"{key}=..." for key in missing)
    raise ValueError(f"{where} needs {what}; it is not set. Pass it on the command line: "
                     f"verimath train --config {name_or_path} {example}")


def config_to_yaml(config: TrainConfig) -> str:
    """The full config as YAML text (every field, sections in declaration order)."""
    return yaml.safe_dump(config.to_dict(), sort_keys=False)


def save_config(config: TrainConfig, path: str | Path) -> None:
    """Write the full config as YAML (every field, so a run is reproducible from it)."""
    Path(path).write_text(config_to_yaml(config), encoding="utf-8")


def field_docs() -> dict[str, dict[str, str]]:
    """``{section: {field: docstring}}``, read from the docstrings under the fields of each
    section's class (``verimath.trainer.config``; empty when its source is not available)."""
    hints = typing.get_type_hints(TrainConfig)
    return {section: _class_field_docs(hints[section]) for section in SECTIONS}


def _class_field_docs(cls: type) -> dict[str, str]:
    import ast
    import inspect

    try:
        node = ast.parse(inspect.getsource(cls)).body[0]
    except (OSError, TypeError):
        return {}
    docs = {}
    for stmt, after in zip(node.body, node.body[1:]):
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            docs[stmt.target.id] = " ".join(inspect.cleandoc(after.value.value).split())
    return docs


def config_to_commented_yaml(config: TrainConfig, header: list[str] = ()) -> str:
    """The full config as YAML with each field's docstring as a comment above it (what
    ``verimath train --print-config`` prints); it loads back to the same config."""
    docs = field_docs()
    lines = [f"# {line}" for text in header for line in textwrap.wrap(text, 92)]
    for section, values in config.to_dict().items():
        lines.append(f"{section}:")
        for key, value in values.items():
            doc = docs.get(section, {}).get(key, "").replace("``", "`")
            lines += [f"  # {line}" for line in textwrap.wrap(doc, 90)]
            lines.append(f"  {key}: {yaml_value(value)}")
    return "\n".join(lines) + "\n"


def yaml_value(value: Any) -> str:
    """One value in YAML flow style: strings double-quoted (JSON escapes are YAML's too)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(yaml_value(v) for v in value) + "]"
    return yaml.safe_dump(value).splitlines()[0]


# Settings that may change when a run is resumed without changing what it trains: the
# length of the run, bookkeeping, and memory/speed knobs whose results are the same.
SAFE_ON_RESUME = ("optim.steps", "optim.token_budget", "logging.*", "eval.every", "eval.batch_size",
                  "rollout.batch_size", "algo.micro_batch_size", "algo.logprob_chunk_size",
                  "model.threads", "reward.workers")


def config_changes(old: TrainConfig, new: TrainConfig) -> list[tuple[str, Any, Any]]:
    """``[("section.key", old value, new value), ...]`` for every field that differs."""
    a, b = old.to_dict(), new.to_dict()
    return [(f"{section}.{key}", a[section][key], b[section][key])
            for section in a for key in a[section] if a[section][key] != b[section][key]]


def is_safe_on_resume(key: str) -> bool:
    """Whether changing ``key`` ("section.key") on resume leaves the experiment the same."""
    return key in SAFE_ON_RESUME or f"{key.split('.')[0]}.*" in SAFE_ON_RESUME
