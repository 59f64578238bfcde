"""Pausing the cyclic garbage collector while a block builds a large tree of fresh objects.

Each collection the allocations would trigger traverses objects the process already holds (a
loaded suite's hundred thousand cases, a trainer's whole state): a cost that grows with the
process, not with what the block makes. A compiled suite's problems and a decoded value make no
cycles, so reference counting alone frees them. The pause only defers the traversal of what the
block made to the next collection: it pays where nothing else traverses it again (a judging
worker freezes its suite right after loading it, harness.pipeline.worker) or where the block's
objects are gone before that collection (a decoded value, judged and dropped).

At exit the interpreter collects several times over everything still held; a process that
judged a large suite spends a second or more there, and its caller (pytest's controller,
waiting for each xdist worker to end) waits with it. :func:`no_collection_at_exit` skips that.
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """The collector off inside the block, back on after it where it was on before.

    Nested and concurrent pauses are safe: only the pause that found the collector on turns it
    back on, so it ends on once every pause that began with it on has ended.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


_at_exit = False


def no_collection_at_exit() -> None:
    """Freeze every object when the process exits (an atexit hook, registered once).

    The interpreter's last collections then traverse nothing: what the process holds is freed
    by reference counting as its modules are torn down, and a cycle left at exit is left to
    the operating system, as it is after ``os._exit``. Only at exit: an in-process caller (a
    trainer) keeps its collector as it was until then.
    """
    global _at_exit
    if not _at_exit:
        _at_exit = True
        atexit.register(gc.freeze)


# A judging process's young generation: collected every JUDGING_THRESHOLD allocations, not
# every 700. Each sample leaves caches behind (parsed expected outputs, passed values) and a
# collection right after it walked them and the sample's verdicts: 0.7 ms a sample, 12 % of a
# HumanEval+ worker's CPU. Its garbage has few cycles (a failed check's traceback), so the
# memory they hold between collections stays small.
JUDGING_THRESHOLD = (50_000, 20, 10)


def fewer_collections() -> None:
    """Collect less often in a process that only judges (a pool or xdist worker), never in a
    caller's own process (a trainer's thresholds are its own)."""
    gc.set_threshold(*JUDGING_THRESHOLD)
