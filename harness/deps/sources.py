"""Where allow-lists come from, each error naming the file, the line and the field.

- a suite module's ``DEPENDENCIES`` dict (``suites.classeval``);
- a JSONL problem's ``dependencies`` field (``--llm-eval jsonl:PATH``): an object mapping
  import names to pins, for that problem only;
- a reward config's ``dependencies`` key (YAML): a mapping, or the path of an allow-list file
  (relative to the config's folder), for every Python problem the run scores;
- ``codeeval deps fetch --allowlist FILE``: an allow-list file.

:func:`fetch_lists` gives the allow-lists ``codeeval deps fetch`` must install for a suite (and a
reward config): each problem's own list merged with the reward's, as a run merges them
(:mod:`harness.deps.resolve`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from harness.deps.pins import (
    PinError,
    check_entry,
    merge_allowlists,
    read_allowlist,
)

FIELD = "dependencies"  # the key in a JSONL record and in a reward config
SUITE_ATTRIBUTE = "DEPENDENCIES"  # a suite module's allow-list


def check_entries(value: Any) -> dict[str, str]:
    """A ``dependencies`` object (JSON or YAML) as a canonical allow-list; a
    :class:`PinError` says what is wrong without where (the caller knows the file and line)."""
    if not isinstance(value, Mapping):
        raise PinError(
            f"expected an object of import name -> 'dist==version', got {type(value).__name__}"
        )
    out: dict[str, str] = {}
    versions: dict[str, str] = {}
    for name, requirement in value.items():
        pin = check_entry(name, requirement)
        dist, version = pin.split("==", 1)
        if versions.setdefault(dist, version) != version:
            raise PinError(f"{name}: {dist} is pinned to two versions")
        out[name] = pin
    return dict(sorted(out.items()))


def entries_of(value: Any, where: str) -> dict[str, str]:
    """:func:`check_entries`, its error reading ``FILE:LINE: dependencies: bs4: ...``."""
    try:
        return check_entries(value)
    except PinError as exc:
        raise PinError(f"{where}: {FIELD}: {exc}") from None


def yaml_key_lines(path: Path, key: str = FIELD) -> dict[str, int]:
    """1-based lines of a top-level YAML key (``""``) and of each of its mapping's keys."""
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    lines: dict[str, int] = {}
    if not isinstance(root, yaml.MappingNode):
        return lines
    for key_node, value_node in root.value:
        if key_node.value != key:
            continue
        lines[""] = key_node.start_mark.line + 1
        if isinstance(value_node, yaml.MappingNode):
            for sub, _ in value_node.value:
                lines[str(sub.value)] = sub.start_mark.line + 1
    return lines


def reward_allowlist(value: Any, source: str) -> dict[str, str]:
    """A reward config's ``dependencies`` (a mapping, or an allow-list file's path relative to
    the config's folder); errors name ``source`` (the YAML file), the line and the entry."""
    path = Path(source)
    lines = yaml_key_lines(path) if path.is_file() else {}
    at = f"{source}:{lines['']}" if "" in lines else source
    if isinstance(value, str):
        target = Path(value).expanduser()
        if not target.is_absolute() and path.is_file():
            target = path.parent / target
        try:
            return read_allowlist(target)
        except PinError as exc:
            raise PinError(f"{at}: {FIELD}: {exc}") from None
    if not isinstance(value, Mapping):
        raise PinError(
            f"{at}: {FIELD}: expected a mapping (import name: dist==version) or the path of "
            f"an allow-list file, got {type(value).__name__}"
        )
    checked: dict[str, Any] = {}
    for name, requirement in value.items():  # entry by entry: an error names its own line
        where = f"{source}:{lines[str(name)]}" if str(name) in lines else at
        checked[name] = requirement
        entries_of(checked, where)
    return check_entries(checked)


def jsonl_allowlists(path: str | Path) -> list[tuple[str, dict[str, str]]]:
    """``(FILE:LINE, allow-list)`` of each record of a JSONL suite, ``{}`` for a record
    without ``dependencies`` (only this field is checked here; loading checks the rest)."""
    out = []
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise PinError(f"{path}: cannot read the problems file: {exc}") from None
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PinError(f"{where}: not a JSON line: {exc}") from None
        value = record.get(FIELD) if isinstance(record, dict) else None
        out.append((where, {} if value is None else entries_of(value, where)))
    return out


def fetch_lists(
    suite_lists: list[tuple[str, dict[str, str]]], run: Mapping[str, str], run_source: str
) -> list[tuple[str, dict[str, str]]]:
    """The allow-lists to fetch: each of a suite's merged with a run's (a reward config's)."""
    merged = []
    for source, own in suite_lists:
        lists = [(source, own)] if own else []
        if run:
            lists.append((run_source, dict(run)))
        if lists:
            label = " + ".join(s for s, _ in lists)
            merged.append((label, merge_allowlists(*lists)))
    return distinct_lists(merged, keep_empty=False)


def distinct_lists(
    lists: list[tuple[str, dict[str, str]]], keep_empty: bool = True
) -> list[tuple[str, dict[str, str]]]:
    seen: dict[str, tuple[str, dict[str, str]]] = {}
    for source, entries in lists:
        if entries or keep_empty:
            seen.setdefault(json.dumps(sorted(entries.items())), (source, entries))
    return list(seen.values())
