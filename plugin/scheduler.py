"""The xdist scheduler of an evaluation: every worker busy from the first sample to the last.

Every item of a generated module is a sample of one problem (with ``--llm-per-case``, one case
of one sample), and a worker reads samples ahead on its fork server while it reports the
current one. xdist runs an item only once it knows what follows it (the next item, or a
shutdown), so a worker that holds one item and hears nothing more waits forever. xdist's
``LoadFileScheduling`` gives whole files until a worker holds a few items and tops it up only
when two are left (the read-ahead drains at every file boundary); its index lookups are
quadratic. This scheduler implements xdist's scheduling protocol
(``xdist.scheduler.protocol.Scheduling``):

- a unit of work is one sample (every case of a sample runs on one worker); units are grouped
  by module and handed out whole modules where they fit in a share, the costliest first (each
  module's estimated seconds a sample, from the compiled suite's manifest: EvalPlus's costliest
  samples take seconds, its cheapest milliseconds), else in collection order;
- each worker's share is the work left divided by the workers, at most ``LOW_WATERMARK``
  items: a small run is spread over every worker from its first sample (a module larger than a
  share is cut between samples), a large one keeps ``LOW_WATERMARK`` items of read-ahead; with
  costs, a share also holds at most a ``2 × workers``-th of the estimated seconds left (never
  less than its items at the median sample's cost): the costly samples are spread over the
  workers one or two at a time, the cheap ones fill in after them, and the workers end together;
- while work is queued no worker is left with fewer than two items, and once the queue is
  empty every worker is told to shut down (it finishes what it holds): nothing waits;
- index lookups through a dictionary; crashes re-queue the worker's unfinished items.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

LOW_WATERMARK = 64  # pending items per worker on a large run: a few modules of read-ahead
Unit = list[int]  # the item indices of one sample, in collection order


class ModuleScheduling:
    """Distributes samples over xdist workers, whole modules where the shares allow."""

    def __init__(
        self,
        config: Any,
        log: Any = None,
        numnodes: int | None = None,
        receiver: Any = None,
        costs: Mapping[str, float] | None = None,
    ) -> None:
        self.config = config
        # Estimated seconds a sample, by module file ("folder/test_x.py"); none: by count only.
        self.costs = dict(costs or {})
        self.item_costs: dict[int, float] = {}
        self.typical_cost = 0.0  # the median item's estimated seconds
        self.queued_cost = 0.0
        self.receiver = receiver  # plugin.batch.BatchReceiver: reports that come in batches
        if numnodes is None:
            from xdist.workermanage import parse_tx_spec_config

            numnodes = len(parse_tx_spec_config(config))
        self.numnodes = numnodes
        self.collection: list[str] | None = None
        self.index: dict[str, int] = {}
        self.queue: deque[deque[Unit]] = deque()  # modules, each a queue of samples
        self.queued = 0  # items in the queue
        self.registered: dict[Any, list[str]] = {}
        # Per worker, the items it holds in the order sent (the first is the one running).
        self.pending: dict[Any, dict[int, None]] = {}
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
        if not self.collection_is_completed or self.queue:
            return False
        return not any(self.pending.values())

    @property
    def has_pending(self) -> bool:
        return bool(self.queue) or any(self.pending.values())

    # -- workers come and go -----------------------------------------------------------------
    def add_node(self, node: Any) -> None:
        assert node not in self.pending
        self.pending[node] = {}

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
        left = list(self.pending.pop(node, {}))
        if not left or self.collection is None:
            return None
        crashed = left[0]
        if self.receiver is not None and self.receiver.batches(node):
            # Its first items may be judged with their reports still in the worker (lost with
            # it): the item it was running is the one its slot names, if any.
            from plugin.batch import running_item

            running = running_item(node)
            crashed = running if running in left else None
        rest = [i for i in left if i != crashed]
        if rest:
            self._requeue(rest, first=True)
        self._fill(self.nodes)
        return None if crashed is None else self.collection[crashed]

    # -- scheduling ----------------------------------------------------------------------------
    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is None:
            self.collection = list(next(iter(self.registered.values())))
            self.index = {nodeid: i for i, nodeid in enumerate(self.collection)}
            self._requeue(range(len(self.collection)))
            costs = sorted(self.item_costs.values())
            self.typical_cost = costs[len(costs) // 2] if costs else 0.0
        self._fill(self.nodes)

    def mark_test_complete(self, node: Any, item_index: Any, duration: float = 0) -> None:
        pending = self.pending[node]
        if isinstance(item_index, tuple) and self.receiver is not None:
            # A batch of sample items (plugin.batch): their reports first, then one top-up.
            for index in self.receiver.deliver(node, item_index):
                pending.pop(index, None)
        else:
            pending.pop(item_index, None)
        self._fill([node])

    def mark_test_pending(self, item: str) -> None:
        self._requeue([self.index[item]])
        self._fill(self.nodes)

    def remove_pending_tests_from_node(self, node: Any, indices: Sequence[int]) -> None:
        raise NotImplementedError("the evaluation scheduler does not take work back")

    # -- the queue -------------------------------------------------------------------------------
    def _requeue(self, indices: Sequence[int], first: bool = False) -> None:
        """Queue ``indices`` as modules of samples (in their order), at the end or ``first``."""
        assert self.collection is not None
        modules: dict[str, dict[str, Unit]] = {}
        for i in indices:
            path, _, name = self.collection[i].partition("::")
            modules.setdefault(path, {}).setdefault(_sample_key(name), []).append(i)
        queued = [deque(units.values()) for units in modules.values()]
        if self.costs:
            costs = [self._module_cost(path, units.values()) for path, units in modules.items()]
            if not first:  # the costliest first (a stable sort: ties in collection order)
                queued = [queued[i] for i in sorted(range(len(queued)), key=lambda i: -costs[i])]
        if first:
            self.queue.extendleft(reversed(queued))
        else:
            self.queue.extend(queued)
        self.queued += len(indices)
        self.queued_cost += sum(self.item_costs.get(i, 0.0) for i in indices)

    def _module_cost(self, path: str, units: Any) -> float:
        """A module's estimated seconds a sample, each of its items' share noted."""
        cost = self.costs.get("/".join(path.replace("\\", "/").split("/")[-2:]), 0.0)
        for unit in units:
            for i in unit:
                self.item_costs[i] = cost / len(unit)
        return cost

    def _share(self) -> int:
        """Items a worker should hold: the outstanding work split evenly, at most the
        watermark (an even split at the end leaves every worker about as much to finish)."""
        active = [n for n in self.pending if not n.shutting_down]
        outstanding = self.queued + sum(len(self.pending[n]) for n in active)
        return min(LOW_WATERMARK, max(1, outstanding // max(1, len(active))))

    def _cost_room(self, node: Any) -> float:
        """Estimated seconds ``node`` may still be sent: a ``2 × workers``-th of the seconds
        left, or its share of items at the typical (median) sample's cost if that is more,
        less what it holds (unbounded without costs)."""
        if not self.costs:
            return float("inf")
        active = [n for n in self.pending if not n.shutting_down]
        held = {n: sum(self.item_costs.get(i, 0.0) for i in self.pending[n]) for n in active}
        outstanding = self.queued_cost + sum(held.values())
        if outstanding <= 0:  # only samples of unknown cost left: by count alone
            return float("inf")
        # A share of the typical sample's cost is never held back: only costly samples are.
        room = max(outstanding / (2 * max(1, len(active))), self._share() * self.typical_cost)
        return room - held.get(node, 0.0)

    def _fill(self, nodes: Sequence[Any]) -> None:
        """Top ``nodes`` up to their share, make sure none is left waiting, and shut every
        worker down once nothing is queued."""
        for node in sorted(nodes, key=lambda n: len(self.pending[n])):
            if not node.shutting_down:
                budget = self._share() - len(self.pending[node])
                self._send(node, self._take(budget, seconds=self._cost_room(node)))
        # A worker with one item runs it only once it knows what follows: while work is queued
        # each gets a second sample (a share rounded down may have left it one).
        for node in sorted(nodes, key=lambda n: len(self.pending[n])):
            if not self.queue:
                break
            if not node.shutting_down and len(self.pending[node]) < 2:
                self._send(node, self._take(2 - len(self.pending[node]), whole=False))
        if not self.queue:
            for node in self.pending:
                if not node.shutting_down:
                    node.shutdown()  # it finishes what it holds, then stops

    def _take(self, budget: int, whole: bool = True, seconds: float = float("inf")) -> list[int]:
        """Up to ``budget`` items and ``seconds`` of estimated work from the front of the
        queue, at least one sample if both allow any: whole modules while they fit
        (``whole=False``: single samples), then the next module cut between samples (a worker
        reads ahead from what it holds, not by module)."""
        taken: list[int] = []
        cost = self.item_costs.get
        while self.queue and budget > 0 and seconds > 0:
            module = self.queue[0]
            size = sum(len(unit) for unit in module)
            module_s = sum(cost(i, 0.0) for unit in module for i in unit) if self.costs else 0.0
            if whole and size <= budget and module_s <= seconds:
                self.queue.popleft()
                for unit in module:
                    taken += unit
                budget -= size
                seconds -= module_s
                continue
            while module:
                unit_s = sum(cost(i, 0.0) for i in module[0])
                if taken and (len(module[0]) > budget or unit_s > seconds):
                    break
                unit = module.popleft()
                taken += unit
                budget -= len(unit)
                seconds -= unit_s
            if not module:
                self.queue.popleft()
            break
        self.queued -= len(taken)
        self.queued_cost -= sum(cost(i, 0.0) for i in taken)
        return taken

    def _send(self, node: Any, indices: list[int]) -> None:
        if indices:
            self.pending[node].update(dict.fromkeys(indices))
            node.send_runtest_some(indices)


def _sample_key(name: str) -> str:
    """The sample an item belongs to: ``sample[ID]`` is one; a per-case item
    ``test_case_3[ID]`` belongs to sample ``ID``, with the module's other cases of it."""
    if name.startswith("sample["):
        return name
    head, bracket, params = name.partition("[")
    return bracket + params if bracket else head
