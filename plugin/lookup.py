"""Which compiled suite a generated test file belongs to, and what the protocol tells an item.

Shared by the collection hooks (:mod:`plugin.fixtures`) and the items (:mod:`plugin.items`),
which import it and never each other's modules back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

_roots: dict[Path, Path | None] = {}
NEXT_ITEM = pytest.StashKey["pytest.Item | None"]()  # set by plugin.protocol


def suite_root(test_file: Path) -> Path | None:
    """The compiled suite folder that holds ``test_file`` (looked up once per file)."""
    if test_file not in _roots:
        from harness.compile import find_suite_root

        _roots[test_file] = find_suite_root(test_file.parent)
    return _roots[test_file]


def suite_of(test_file: Path) -> Any:
    """The loaded suite a generated test file belongs to.

    Keyed by the collected file, not the module object: an in-process caller (a trainer)
    runs many sessions, and a module cached in ``sys.modules`` may come from an older folder.
    """
    # Imported here: the plugin loads in every pytest run, the sandbox only when it is used.
    from harness.runtime import loaded_suite

    root = suite_root(test_file)
    if root is None:
        raise pytest.UsageError(f"{test_file} is not inside a suite compiled by codeeval-rl")
    return loaded_suite(root)
