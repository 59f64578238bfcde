"""Loading trainer configs: YAML file + ``--override a.b=c`` + legacy flags -> typed dataclasses.

A config is a tree of dataclasses (TRL's style: every field has ``metadata={"help": ...}`` and
``__post_init__`` rejects impossible settings). :func:`build` turns a nested dict into that tree,
checking every key and value against the field's type; a bad one raises :class:`ConfigError`
naming the file, the line and the dotted key. Override values are parsed as YAML scalars/lists.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, Union

import yaml

T = TypeVar("T")


class ConfigError(ValueError):
    """A bad config key or value; the message names where it came from and what to do."""

    kind = "config error"  # how ``python -m trainers.<algorithm>`` labels it


class NeedsFirst(ConfigError):
    """The config is fine but its data is not here yet: the message names what to run or
    fetch first (a mined suite, a difficulty measurement, a data set this machine lacks)."""

    kind = "needs a step first"


class InvalidSetting(ValueError):
    """Raised by a ``__post_init__``: ``field`` is the offending field of that dataclass."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name
        self.message = message


def invalid(field_name: str, message: str) -> InvalidSetting:
    """The error a ``__post_init__`` raises: ``raise invalid("num_generations", "...")``."""
    return InvalidSetting(field_name, message)


def help_field(default: Any = dataclasses.MISSING, help: str = "", **kwargs: Any) -> Any:
    """A dataclass field with help text; mutable defaults are copied per instance."""
    if not help:
        raise TypeError("every config field needs help text")
    meta = {"help": help}
    if isinstance(default, list | dict):
        value = default
        return dataclasses.field(
            default_factory=lambda: type(value)(value), metadata=meta, **kwargs
        )
    return dataclasses.field(default=default, metadata=meta, **kwargs)


# ---------------------------------------------------------------- where a key came from


class Origins:
    """Maps dotted keys to where their value came from (``file:line`` or ``--override``)."""

    def __init__(self) -> None:
        self._where: dict[str, str] = {}

    def set(self, key: str, where: str) -> None:
        self._where[key] = where

    def get(self, key: str) -> str:
        """The most specific known origin of ``key`` (falls back to its parents)."""
        parts = key.split(".")
        while parts:
            found = self._where.get(".".join(parts))
            if found:
                return found
            parts.pop()
        return self._where.get("", "<defaults>")


def _record_lines(node: yaml.Node, prefix: str, path: str, origins: Origins) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
            origins.set(key, f"{path}:{key_node.start_mark.line + 1}")
            _record_lines(value_node, key, path, origins)


def read_yaml(path: str | Path, origins: Origins | None = None) -> dict[str, Any]:
    """A YAML mapping from ``path``; records each key's line in ``origins``."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file ({exc.strerror})") from exc
    try:
        data = yaml.safe_load(text)
        node = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: the config must be a mapping of sections")
    if origins is not None:
        origins.set("", str(path))
        _record_lines(node, "", str(path), origins)
    return data


# ---------------------------------------------------------------- overrides


def parse_override(text: str) -> tuple[str, Any, str]:
    """``"a.b=[1, 2]"`` -> ``("a.b", [1, 2], "[1, 2]")``: key, YAML value, raw text."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError(f"--override {text!r}: expected section.key=value")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise ConfigError(f"--override {key}: value {raw!r} is not valid YAML: {exc}") from exc
    return key, value, raw


class RawText(str):
    """A YAML-parsed override value that a ``str`` field takes as its original text."""

    value: Any


def _raw(value: Any, raw: str) -> Any:
    """Keep the raw text so that ``model.name=123`` or ``x=on`` stay strings for str fields."""
    if isinstance(value, str | list | dict):
        return value
    marker = RawText(raw.strip())
    marker.value = value
    return marker


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    """``data[a][b] = value`` for ``key == "a.b"``, creating sections as needed."""
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def apply_overrides(
    data: dict[str, Any],
    overrides: Sequence[str],
    origins: Origins | None = None,
    aliases: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Apply ``a.b=c`` strings in order (later ones win); ``aliases`` rename dotted keys."""
    for text in overrides:
        key, value, raw = parse_override(text)
        key = (aliases or {}).get(key, key)
        set_dotted(data, key, _raw(value, raw))
        if origins is not None:
            origins.set(key, f"--override {text}")
    return data


# ---------------------------------------------------------------- typed building


def _describe(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _union(value: Any, plain: Any, args: tuple[Any, ...], key: str) -> Any:
    if plain is None and type(None) in args:
        return None
    for arg in (a for a in args if a is not type(None)):
        try:
            return coerce(value, arg, key)
        except ValueError:
            continue
    raise ValueError(f"expected {' or '.join(_describe(a) for a in args)}, got {plain!r}")


def _literal(value: Any, plain: Any, args: tuple[Any, ...]) -> Any:
    choice = str(value) if isinstance(value, RawText) else plain
    if choice in args:
        return choice
    raise ValueError(f"expected one of {', '.join(map(repr, args))}, got {choice!r}")


def _sequence(plain: Any, origin: Any, args: tuple[Any, ...], key: str) -> Any:
    if isinstance(plain, str | int | float) and not isinstance(plain, bool):
        plain = [plain]  # a single value where a list is expected
    if not isinstance(plain, list | tuple):
        raise ValueError(f"expected a list, got {plain!r}")
    item = args[0] if args else Any
    items = [coerce(v, item, f"{key}[{i}]") for i, v in enumerate(plain)]
    return tuple(items) if origin is tuple else items


def _is_number(plain: Any) -> bool:
    return isinstance(plain, int | float) and not isinstance(plain, bool)


def _bool(value: Any, plain: Any) -> bool:
    if isinstance(plain, bool):
        return plain
    raise ValueError(f"expected true or false, got {plain!r}")


def _int(value: Any, plain: Any) -> int:
    if isinstance(plain, int) and not isinstance(plain, bool):
        return plain
    if isinstance(plain, float) and plain.is_integer():
        return int(plain)
    raise ValueError(f"expected an integer, got {plain!r}")


def _float(value: Any, plain: Any) -> float:
    if _is_number(plain):
        return float(plain)
    if isinstance(plain, str):
        try:  # PyYAML reads "1e-5" (no dot) as a string
            return float(plain)
        except ValueError:
            pass
    raise ValueError(f"expected a number, got {plain!r}")


def _str(value: Any, plain: Any) -> str:
    if isinstance(value, RawText):
        return str(value)  # the override's own text: model.name=123 stays "123"
    if isinstance(plain, str):
        return plain
    if _is_number(plain):
        return str(plain)
    raise ValueError(f"expected a string, got {plain!r}")


# The plain types, each as ``(value, plain) -> converted``; ``value`` may be a RawText.
SCALARS: dict[Any, Callable[[Any, Any], Any]] = {bool: _bool, int: _int, float: _float, str: _str}


def coerce(value: Any, tp: Any, key: str) -> Any:
    """``value`` checked/converted to type ``tp``; raises ``ValueError`` saying what was expected."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    plain = value.value if isinstance(value, RawText) else value
    if tp is Any:
        return plain
    if origin in (Union, types.UnionType):
        return _union(value, plain, args, key)
    if origin is typing.Literal:
        return _literal(value, plain, args)
    if dataclasses.is_dataclass(tp):
        if not isinstance(plain, dict):
            raise ValueError(f"expected a mapping of {tp.__name__} settings, got {plain!r}")
        return build(tp, plain, prefix=key)  # type: ignore[arg-type]
    if origin in (list, tuple) or tp in (list, tuple):
        return _sequence(plain, origin, args, key)
    if origin is dict or tp is dict:
        if not isinstance(plain, dict):
            raise ValueError(f"expected a mapping, got {plain!r}")
        return dict(plain)
    if tp in SCALARS:
        return SCALARS[tp](value, plain)
    if isinstance(plain, tp):
        return plain
    raise ValueError(f"expected {_describe(tp)}, got {plain!r}")


def build(cls: type[T], data: Mapping[str, Any], prefix: str = "") -> T:
    """An instance of dataclass ``cls`` from ``data``; raises :class:`KeyedError` on bad input."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        key = f"{prefix}.{name}" if prefix else str(name)
        if name not in fields:
            known = ", ".join(sorted(fields))
            raise KeyedError(key, f"unknown key (known keys here: {known})")
        try:
            kwargs[name] = coerce(value, hints[name], key)
        except KeyedError:
            raise
        except ValueError as exc:
            raise KeyedError(key, str(exc)) from exc
    try:
        return cls(**kwargs)
    except InvalidSetting as exc:
        key = f"{prefix}.{exc.field}" if prefix else exc.field
        raise KeyedError(key, exc.message) from exc


class KeyedError(ValueError):
    """A problem with one dotted key (turned into a :class:`ConfigError` with its origin)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


def to_dict(config: Any) -> dict[str, Any]:
    """A plain nested dict of a config tree (for YAML dumps and checkpoints)."""
    return dataclasses.asdict(config)


# Paths a config file may give relative to its own folder (data bundled beside the configs).
FILE_RELATIVE = (("dataset", "data_dir"),)


def config_path(path: str | Path) -> Path:
    """``path``, or the bundled config it names when there is no such file here:
    ``configs/grpo_he_cpu.yaml``, ``grpo_he_cpu.yaml`` or ``grpo_he_cpu`` work from any
    folder and from an installed wheel."""
    given = Path(path)
    if given.exists() or given.is_absolute():
        return given
    from harness.paths import bundled

    name = given.name if given.suffix == ".yaml" else f"{given.name}.yaml"
    found = bundled(name)
    return found if found.is_file() and given.parent.name in ("", "configs") else given


def _beside_file(data: dict[str, Any], path: Path) -> None:
    """A relative path of :data:`FILE_RELATIVE` that exists beside the config file is read
    from there (else from the working folder, as given)."""
    for section, key in FILE_RELATIVE:
        value = data.get(section, {}).get(key) if isinstance(data.get(section), dict) else None
        if isinstance(value, str) and value and not Path(value).is_absolute():
            beside = path.parent / value
            if beside.exists():
                data[section][key] = str(beside.resolve())


def load_config(
    cls: type[T],
    path: str | Path | None = None,
    overrides: Sequence[str] = (),
    aliases: Mapping[str, str] | None = None,
) -> T:
    """The config in ``path`` with ``overrides`` applied, as an instance of ``cls``."""
    origins = Origins()
    data: dict[str, Any] = {}
    if path:
        path = config_path(path)
        data = read_yaml(path, origins)
        _beside_file(data, path)
    apply_overrides(data, overrides, origins, aliases)
    try:
        return build(cls, data)
    except KeyedError as exc:
        raise ConfigError(f"{origins.get(exc.key)}: {exc.key}: {exc.message}") from exc


# ---------------------------------------------------------------- command line


@dataclasses.dataclass(frozen=True)
class LegacyFlag:
    """A flag from older command lines (``--num_turns 2``) mapped onto a dotted key."""

    flag: str
    key: str
    nargs: str | None = None
    help: str = ""


def common_legacy_flags(algo: str) -> list[LegacyFlag]:
    """Flags every trainer accepts; ``algo`` is its config section (``magrpo``, ``grpo``...)."""
    a = algo
    return [
        LegacyFlag("--model_name", "model.name", help="model name or path (model.name)"),
        LegacyFlag("--output_dir", "output.dir", help="output folder (output.dir)"),
        LegacyFlag("--seed", "seed", help="random seed (seed)"),
        LegacyFlag("--dataset", "dataset.suite", help="suite name (dataset.suite)"),
        LegacyFlag("--train_split", "dataset.train_split", help="(dataset.train_split)"),
        LegacyFlag("--eval_split", "dataset.eval_split", help="(dataset.eval_split)"),
        LegacyFlag("--num_epochs", f"{a}.num_epochs", help=f"({a}.num_epochs)"),
        LegacyFlag("--max_steps", f"{a}.max_steps", help=f"({a}.max_steps)"),
        LegacyFlag("--learning_rate", f"{a}.learning_rate", help=f"({a}.learning_rate)"),
        LegacyFlag("--num_generations", f"{a}.num_generations", help=f"({a}.num_generations)"),
        LegacyFlag("--max_new_tokens", f"{a}.max_new_tokens", help=f"({a}.max_new_tokens)"),
        LegacyFlag("--temperature", f"{a}.temperature", help=f"({a}.temperature)"),
        LegacyFlag("--reward", "reward.preset", help="reward preset or YAML (reward.preset)"),
    ]


def build_parser(prog: str, legacy: Sequence[LegacyFlag]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=f"Train with {prog}.")
    parser.add_argument("--config", help="YAML config file")
    parser.add_argument(
        "--override",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help="dotted keys set after the file, values parsed as YAML (a.b=3 c.d='[1, 2]')",
    )
    parser.add_argument("--resume", help="checkpoint folder to resume from (output.resume_from)")
    for flag in legacy:
        parser.add_argument(flag.flag, dest=f"legacy:{flag.key}", nargs=flag.nargs, help=flag.help)
    return parser


def parse_cli(
    cls: type[T],
    argv: Sequence[str] | None,
    prog: str,
    legacy: Sequence[LegacyFlag],
    aliases: Mapping[str, str] | None = None,
) -> T:
    """Parse a trainer's command line into its config (legacy flags apply before overrides)."""
    parser = build_parser(prog, legacy)
    args = parser.parse_args(argv)
    extra: list[str] = []
    for name, value in vars(args).items():
        if not name.startswith("legacy:") or value is None:
            continue
        key = name.removeprefix("legacy:")
        text = "[" + ", ".join(value) + "]" if isinstance(value, list) else value
        extra.append(f"{key}={text}")
    if args.resume:
        extra.append(f"output.resume_from={args.resume}")
    return load_config(cls, args.config, [*extra, *args.override], aliases)
