"""The overlay folder of an allow-list: where its fetched packages live, and whether they do.

``<root>/<key>/site`` is a ``pip install --target`` folder; ``<root>/<key>/pins.json``, written
last, says it is complete (the allow-list, the interpreter it was built for and the
distributions pip installed). The key hashes the pins and the interpreter (compiled wheels
differ per Python version and machine), so a changed pin is a new folder and an old run's
folder is never reused for it. The root is ``$CODEEVAL_DEPS_DIR`` or
``~/.cache/codeeval/deps``. The sandbox mounts the root read-only and puts the problem's
``site`` folder on the child's ``sys.path`` (:mod:`harness.sandbox`).
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# The root lives in harness.paths (the sandbox, below this package, mounts it); re-exported.
from harness.paths import DEPS_ROOT_ENV
from harness.paths import deps_root as deps_root

ROOT_ENV = DEPS_ROOT_ENV
MARKER = "pins.json"
SITE = "site"


def interpreter_tag() -> str:
    """What a compiled wheel depends on: Python's version and implementation, the machine."""
    impl = sys.implementation.name
    return f"{impl}{sys.version_info[0]}{sys.version_info[1]}-{sys.platform}-{platform.machine()}"


def canonical(allowlist: Mapping[str, str]) -> dict[str, str]:
    """The allow-list checked and spelled one way (``PyPDF2==3`` and ``pypdf2==3`` agree)."""
    from harness.deps.pins import check_allowlist  # packaging: only when an overlay is used

    return check_allowlist(allowlist, "allow-list")


def overlay_key(allowlist: Mapping[str, str]) -> str:
    text = json.dumps([sorted(canonical(allowlist).items()), interpreter_tag()])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def overlay_dir(allowlist: Mapping[str, str], root: Path | None = None) -> Path:
    return (root or deps_root()) / overlay_key(allowlist)


def read_marker(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def ready_site(allowlist: Mapping[str, str], root: Path | None = None) -> Path | None:
    """The ``site`` folder of the allow-list's overlay when it was fetched completely."""
    folder = overlay_dir(allowlist, root)
    marker = read_marker(folder)
    if marker is None or marker.get("allowlist") != canonical(allowlist):
        return None
    site = folder / SITE
    return site if site.is_dir() else None


def fetch_hint(suite: str) -> str:
    """The command that fetches a suite's overlay (for messages)."""
    return f"codeeval deps fetch {suite}"


def missing_message(suite: str, modules: list[str]) -> str:
    """One line: what is missing and the command to run (a run never downloads)."""
    return (
        f"{suite}: third-party modules {', '.join(modules)} are allowed but not fetched; "
        f"run `{fetch_hint(suite)}` once (it uses the network; runs never do)"
    )
