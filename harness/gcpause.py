"""Pausing the cyclic garbage collector while a block builds a large tree of fresh objects.

Each collection the allocations would trigger traverses objects the process already holds (a
loaded suite's hundred thousand cases, a trainer's whole state): a cost that grows with the
process, not with what the block makes. A compiled suite's problems and a decoded value make no
cycles, so reference counting alone frees them. The pause only defers the traversal of what the
block made to the next collection: it pays where nothing else traverses it again (a judging
worker freezes its suite right after loading it, harness.pipeline.worker) or where the block's
objects are gone before that collection (a decoded value, judged and dropped).
"""

from __future__ import annotations

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
