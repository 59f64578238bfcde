"""What an xdist worker of an evaluation loads before its first sample.

A worker parses the controller's arguments and loads every installed pytest plugin before it
collects the generated suite. Some plugins serve hand-written tests only, and importing them
is most of a worker's start-up: anyio's imports its asyncio and trio backends (0.22 s of CPU
here), pytest-benchmark its statistics (0.04 s), and only to add fixtures and markers that a
sample item never uses. Each local or remote worker is started with ``-p no:NAME`` for those
the run does not ask for: none of their options on the command line, in ``PYTEST_ADDOPTS`` or
in the ini file's ``addopts``, none of their ini keys set, not named with ``-p``, and sample
items only (``--llm-per-case`` items are pytest functions, whose fixtures could use them).
The controller keeps them all: it collects nothing.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

import pytest

# Plugin name -> (its option prefixes, its ini keys).
UNUSED_IN_WORKERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "anyio": (("--anyio",), ("anyio_mode",)),
    "benchmark": (("--benchmark",), ()),
    "hypothesispytest": (("--hypothesis",), ()),
}


def skipped_plugins(config: pytest.Config, args: Sequence[str]) -> list[str]:
    """The plugins a worker started with ``args`` can do without (see the module)."""
    if config.getoption("llm_per_case", False):
        return []
    words = [*args, *shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))]
    try:
        words += [str(w) for w in config.getini("addopts")]
    except ValueError:
        pass
    inicfg = getattr(config, "inicfg", {}) or {}
    manager = config.pluginmanager
    skipped = []
    for name, (prefixes, ini_keys) in UNUSED_IN_WORKERS.items():
        if manager.is_blocked(name):
            continue  # the run blocks it already
        if any(w.startswith(prefixes) for w in words) or any(k in inicfg for k in ini_keys):
            continue  # the run sets one of its options
        if _named(words, name):
            continue  # asked for by name
        skipped.append(name)
    return skipped


def _named(words: Sequence[str], name: str) -> bool:
    """Whether ``-p NAME`` (or ``-pNAME``) is among ``words``."""
    for i, word in enumerate(words):
        if word == "-p" and i + 1 < len(words) and words[i + 1] == name:
            return True
        if word == f"-p{name}":
            return True
    return False


def worker_plugin_args(config: pytest.Config, args: Sequence[str]) -> list[str]:
    """``args`` with ``-p no:NAME`` for each plugin a worker can do without."""
    extra = []
    for name in skipped_plugins(config, args):
        extra += ["-p", f"no:{name}"]
    return [*args, *extra]
