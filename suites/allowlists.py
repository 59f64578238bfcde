"""The dependency allow-lists a suite's problems carry (for ``codeeval deps fetch SUITE``).

A ``jsonl:`` suite's problems each name their own (:mod:`harness.deps.sources`); a registered
suite may declare one list for all its problems as a module attribute (``suites.classeval``).
"""

from __future__ import annotations

import importlib

from harness.deps.pins import PinError, check_allowlist
from harness.deps.sources import SUITE_ATTRIBUTE, distinct_lists, jsonl_allowlists
from suites.registry import JSONL_PREFIX, loader_module


def suite_allowlists(name: str) -> list[tuple[str, dict[str, str]]]:
    """``(source, allow-list)`` per distinct list a suite's problems carry; ``{}`` stands for
    problems with none of their own (they still get a reward config's)."""
    if name.startswith(JSONL_PREFIX):
        return distinct_lists(jsonl_allowlists(name[len(JSONL_PREFIX) :]))
    try:
        module_name = loader_module(name)
    except KeyError as exc:
        raise PinError(exc.args[0]) from None
    module = importlib.import_module(module_name)
    where = f"{module_name}.{SUITE_ATTRIBUTE}"
    own = check_allowlist(getattr(module, SUITE_ATTRIBUTE, {}), where)
    # A suite-wide list is only carried by the problems that need it (suites.classeval).
    return [(where, own), ("", {})] if own else [("", {})]
