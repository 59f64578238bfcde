"""The allow-list of third-party modules a suite's programs may import, each pinned.

An allow-list maps a top-level import name to one exactly pinned distribution::

    bs4: beautifulsoup4==4.12.3
    docx: python-docx==1.1.2

A suite declares it as a dict (``suites.classeval.DEPENDENCIES``), a JSONL problem in its
``dependencies`` field, a reward config in its ``dependencies`` key (harness.deps.sources); a
file holds one entry per line (``#`` starts a comment). Only ``==`` pins are accepted: a run must see the same code
every time, and the overlay folder is named after the pins (:mod:`harness.deps.overlay`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

_IMPORT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class PinError(ValueError):
    """A malformed allow-list entry (the message names where and what)."""


def parse_requirement(text: str, where: str) -> str:
    """``text`` as a canonical exact pin (``name==version``), or a :class:`PinError`."""
    try:
        req = Requirement(text.strip())
    except InvalidRequirement as exc:
        raise PinError(f"{where}: {text.strip()!r} is not a requirement: {exc}") from None
    specs = list(req.specifier)
    if req.url or req.marker or req.extras:
        raise PinError(f"{where}: {text.strip()!r}: no URLs, extras or markers, only name==X")
    if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
        raise PinError(f"{where}: {text.strip()!r} is not pinned: write it as name==version")
    return f"{canonicalize_name(req.name)}=={specs[0].version}"


def check_entry(name: object, requirement: object) -> str:
    """One entry's canonical pin; a :class:`PinError` says what is wrong (the caller adds
    where: the file, line and field)."""
    if not isinstance(name, str) or not _IMPORT_NAME.fullmatch(name):
        raise PinError(f"import name {name!r} is not a top-level module name")
    if not isinstance(requirement, str):
        raise PinError(f"{name}: the pin must be a string, got {requirement!r}")
    return parse_requirement(requirement, name)


def check_allowlist(entries: Mapping[str, str], where: str) -> dict[str, str]:
    """A validated allow-list (import name -> canonical pin), sorted by import name.

    Two import names may name one distribution (``yaml`` and ``_yaml``), with one version:
    an overlay holds one version of each distribution.
    """
    out: dict[str, str] = {}
    versions: dict[str, str] = {}
    for name, requirement in entries.items():
        try:
            pin = check_entry(name, requirement)
        except PinError as exc:
            raise PinError(f"{where}: {exc}") from None
        dist, version = pin.split("==", 1)
        if versions.setdefault(dist, version) != version:
            raise PinError(f"{where}: {name}: {dist} is pinned to two versions")
        out[name] = pin
    return dict(sorted(out.items()))


def merge_allowlists(*lists: tuple[str, Mapping[str, str]]) -> dict[str, str]:
    """The union of ``(source, allow-list)`` pairs (a suite's and a reward config's). An
    import name or a distribution pinned differently by two of them is a :class:`PinError`
    that names both sources."""
    out: dict[str, str] = {}
    named_by: dict[str, str] = {}
    dists: dict[str, tuple[str, str]] = {}  # distribution -> (version, source)
    for source, entries in lists:
        for name, requirement in check_allowlist(entries, source).items():
            if name in out and out[name] != requirement:
                raise PinError(
                    f"{source}: {name}: pinned to {requirement}, but {named_by[name]} pins "
                    f"it to {out[name]}: one run has one version of each module"
                )
            dist, version = requirement.split("==", 1)
            seen = dists.setdefault(dist, (version, source))
            if seen[0] != version:
                raise PinError(
                    f"{source}: {name}: {dist}=={version}, but {seen[1]} pins {dist}=={seen[0]}"
                )
            out[name], named_by[name] = requirement, named_by.get(name, source)
    return dict(sorted(out.items()))


def parse_allowlist(text: str, where: str = "<allow-list>") -> dict[str, str]:
    """An allow-list from text, one ``import_name: dist==version`` per line."""
    entries: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, requirement = line.partition(":")
        if not sep or not requirement.strip():
            raise PinError(f"{where}:{number}: expected 'import_name: dist==version', got {line!r}")
        name = name.strip()
        if name in entries:
            raise PinError(f"{where}:{number}: import name {name!r} is listed twice")
        entries[name] = requirement.strip()
        check_allowlist({name: entries[name]}, f"{where}:{number}")
    return check_allowlist(entries, where)


def read_allowlist(path: str | Path) -> dict[str, str]:
    """An allow-list file (see :func:`parse_allowlist`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise PinError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_allowlist(text, str(path))


def format_allowlist(entries: Mapping[str, str]) -> str:
    """The text form that :func:`parse_allowlist` reads back."""
    return "".join(f"{name}: {pin}\n" for name, pin in sorted(entries.items()))
