"""The xdist scheduler of an evaluation: whole generated modules per worker, sent well ahead.

Every item of a module is a sample of one problem, and a worker reads samples ahead on its fork
server while it reports the current one; so a worker should always hold the next module before
it finishes the current one. xdist's ``LoadFileScheduling`` tops a worker up only when two
items are left (the read-ahead then drains at every module boundary) and looks item indices up
with ``list.index`` (quadratic in the number of items). This scheduler implements xdist's
scheduling protocol (``xdist.scheduler.protocol.Scheduling``) with:

- work units = generated modules (one problem each), in collection order;
- each worker kept at ``LOW_WATERMARK`` pending items or more while units remain;
- index lookups through a dictionary; crashes re-queue the worker's unfinished items.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from xdist.workermanage import parse_tx_spec_config

LOW_WATERMARK = 64  # pending items per worker: a few modules of read-ahead


class ModuleScheduling:
    """Distributes generated modules over xdist workers (one module never splits)."""

    def __init__(self, config: Any, log: Any = None) -> None:
        self.config = config
        self.numnodes = len(parse_tx_spec_config(config))
        self.collection: list[str] | None = None
        self.index: dict[str, int] = {}
        self.workqueue: OrderedDict[str, list[int]] = OrderedDict()
        self.registered: dict[Any, list[str]] = {}
        self.pending: dict[Any, set[int]] = {}
        self.log = log

    # -- the protocol's state ----------------------------------------------------------------
    @property
    def nodes(self) -> list[Any]:
        return list(self.pending)

    @property
    def collection_is_completed(self) -> bool:
        return len(self.registered) >= self.numnodes

    @property
    def tests_finished(self) -> bool:
        if not self.collection_is_completed or self.workqueue:
            return False
        return not any(self.pending.values())

    @property
    def has_pending(self) -> bool:
        return bool(self.workqueue) or any(self.pending.values())

    # -- workers come and go -----------------------------------------------------------------
    def add_node(self, node: Any) -> None:
        assert node not in self.pending
        self.pending[node] = set()

    def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
        if self.collection is not None and list(collection) != self.collection:
            raise RuntimeError(
                f"worker {node.gateway.id} collected other tests than the first worker: the "
                "generated suite changed during the run"
            )
        self.registered[node] = list(collection)

    def remove_node(self, node: Any) -> str | None:
        """Forget ``node``; its unfinished items go back to the queue, but the first one, which
        crashed the worker, is reported as crashed (xdist does the same): queued again, a sample
        that kills its worker would take down every replacement until xdist gives up."""
        left = sorted(self.pending.pop(node, set()))
        if not left or self.collection is None:
            return None
        if left[1:]:
            self.workqueue["crashed:" + str(left[0])] = left[1:]
            self.workqueue.move_to_end("crashed:" + str(left[0]), last=False)
        for other in list(self.pending):
            self._top_up(other)
        return self.collection[left[0]]

    # -- scheduling ----------------------------------------------------------------------------
    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is None:
            self.collection = list(next(iter(self.registered.values())))
            self.index = {nodeid: i for i, nodeid in enumerate(self.collection)}
            for i, nodeid in enumerate(self.collection):
                self.workqueue.setdefault(nodeid.split("::", 1)[0], []).append(i)
            if not self.collection:
                return
        for node in list(self.pending):
            self._top_up(node)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        self.pending[node].discard(item_index)
        self._top_up(node)

    def mark_test_pending(self, item: str) -> None:
        self.workqueue[item] = [self.index[item]]
        for node in list(self.pending):
            self._top_up(node)

    def remove_pending_tests_from_node(self, node: Any, indices: Sequence[int]) -> None:
        raise NotImplementedError("the evaluation scheduler does not take work back")

    def _top_up(self, node: Any) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            # No more work: the worker finishes what it holds (it keeps its last item until it
            # knows nothing follows), then stops.
            node.shutdown()
            return
        sent: list[int] = []
        while self.workqueue and len(self.pending[node]) + len(sent) < LOW_WATERMARK:
            sent += self.workqueue.popitem(last=False)[1]
        if sent:
            self.pending[node].update(sent)
            node.send_runtest_some(sent)
