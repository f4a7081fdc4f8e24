"""Reading configs: YAML presets, nested dicts and dotted command-line overrides.

``load_config("tiny", ["algo.eps_high=0.2"])`` reads a preset (``verimath/trainer/configs``)
or a YAML path, then applies ``section.key=value`` overrides; each value is parsed as YAML and
checked against the field's type, and every error names the file or override, the key and
what was expected. A YAML file may start from another preset with ``__base__: tiny``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from verimath.trainer.config import TrainConfig

SECTIONS = {f.name: f.type for f in dataclasses.fields(TrainConfig)}
_ALIASES = {"algorithm": "algo", "optimisation": "optim", "optimization": "optim"}


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
            raise ValueError(f"{source}: unknown section {raw_name!r}; known: {', '.join(SECTIONS)}")
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
            raise ValueError(f"override {text!r}: unknown section {section!r}; known: {', '.join(data)}")
        if name not in data[section]:
            raise ValueError(
                f"override {text!r}: unknown key {section}.{name}; "
                f"{section} has: {', '.join(data[section])}"
            )
        data[section][name] = value
    return config_from_dict(data, source="command line")


def preset_names() -> list[str]:
    """Names of the bundled presets (``tiny``, ``dapo``, ``grpo``, ...)."""
    folder = resources.files("verimath.trainer.configs")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def read_config_file(name_or_path: str, *, _depth: int = 0) -> tuple[dict[str, Any], str]:
    """Load a preset name or a YAML path; returns ``(mapping, source description)``.

    A file may name another preset or file as ``__base__``; its sections are merged under
    the file's own keys.
    """
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise ValueError(f"config file {path} does not exist")
        text, source = path.read_text(encoding="utf-8"), str(path)
    else:
        if name_or_path not in preset_names():
            raise ValueError(
                f"unknown preset {name_or_path!r}; presets: {', '.join(preset_names())} "
                "(or pass a path to a .yaml file)"
            )
        res = resources.files("verimath.trainer.configs") / f"{name_or_path}.yaml"
        text, source = res.read_text(encoding="utf-8"), f"preset {name_or_path}"
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{source}: invalid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a mapping of sections, got {type(data).__name__}")
    base = data.pop("__base__", None)
    if base is not None:  # a preset may start from another one and change a few keys
        if base == name_or_path or _depth >= 8:
            raise ValueError(f"{source}: __base__ chain is circular or too deep")
        try:
            base_data, _ = read_config_file(str(base), _depth=_depth + 1)
        except ValueError as exc:
            raise ValueError(f"{source}: __base__: {exc}") from None
        data = _merge(base_data, data)
    return data, source


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def load_config(name_or_path: str = "tiny", overrides: list[str] | None = None) -> TrainConfig:
    """Read a preset or YAML file, then apply dotted overrides."""
    data, source = read_config_file(name_or_path)
    return apply_overrides(config_from_dict(data, source=source), list(overrides or []))


def config_to_yaml(config: TrainConfig) -> str:
    """The full config as YAML text (every field, sections in declaration order)."""
    return yaml.safe_dump(config.to_dict(), sort_keys=False)


def save_config(config: TrainConfig, path: str | Path) -> None:
    """Write the full config as YAML (every field, so a run is reproducible from it)."""
    Path(path).write_text(config_to_yaml(config), encoding="utf-8")
