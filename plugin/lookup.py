"""Which compiled suite a generated test file belongs to, and what the protocol tells an item.

Shared by the collection hooks (:mod:`plugin.fixtures`) and the items (:mod:`plugin.items`),
which import it and never each other's modules back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

_roots: dict[Path, Path | None] = {}
ROW_ATTR = "codeeval_row"  # a sample item's call report: [task id, sample id, row's JSON text]
NEXT_ITEM = pytest.StashKey["pytest.Item | None"]()  # set by plugin.protocol
_WORKER = pytest.StashKey[Any]()  # xdist's worker-side plugin, or None
# In a worker that runs a copy of the suite sent to it (plugin.remote): its caches are not the
# controller's.
SHIPPED_SUITE = pytest.StashKey[bool]()


def queued_items(config: pytest.Config, limit: int) -> list[pytest.Item] | None:
    """Up to ``limit`` items an xdist worker holds after its next one, in the order it runs
    them; None outside a worker (or with an xdist whose queue this cannot read).

    A worker runs what the scheduler sent it, which need not be the module's next samples
    (plugin.scheduler cuts a large module between workers): reading ahead from here starts
    only samples this worker will judge.
    """
    if not hasattr(config, "workerinput"):
        return None
    if _WORKER not in config.stash:
        config.stash[_WORKER] = next(
            (
                p
                for p in config.pluginmanager.get_plugins()
                if type(p).__name__ == "WorkerInteractor"
            ),
            None,
        )
    worker = config.stash[_WORKER]
    queue = getattr(worker, "torun", None)
    items = getattr(getattr(worker, "session", None), "items", None)
    if not hasattr(queue, "lock") or items is None:
        return None
    with queue.lock() as queued:
        indices = [i for i in list(queued)[:limit] if isinstance(i, int)]
    return [items[i] for i in indices if i < len(items)]


def suite_root(test_file: Path) -> Path | None:
    """The compiled suite folder that holds ``test_file`` (looked up once per folder: a suite's
    hundreds of modules share a few)."""
    folder = test_file.parent
    if folder not in _roots:
        from harness.pipeline.compile import find_suite_root

        _roots[folder] = find_suite_root(folder)
    return _roots[folder]


def suite_of(test_file: Path) -> Any:
    """The loaded suite a generated test file belongs to.

    Keyed by the collected file, not the module object: an in-process caller (a trainer)
    runs many sessions, and a module cached in ``sys.modules`` may come from an older folder.
    """
    # Imported here: the plugin loads in every pytest run, the sandbox only when it is used.
    from harness.pipeline.runtime import loaded_suite

    root = suite_root(test_file)
    if root is None:
        raise pytest.UsageError(f"{test_file} is not inside a suite compiled by codeeval-rl")
    return loaded_suite(root)
