"""plugin.scheduler against xdist's side of the protocol, simulated: workers that run an item
only once they know what follows it (its next item or a shutdown), as xdist's workers do."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin.scheduler import LOW_WATERMARK, ModuleScheduling


@dataclass(eq=False)
class Worker:
    """xdist's WorkerController as the scheduler sees it, and the worker's queue."""

    name: str
    queue: list[int] = field(default_factory=list)
    shutting_down: bool = False
    received: list[list[int]] = field(default_factory=list)

    def send_runtest_some(self, indices: list[int]) -> None:
        assert not self.shutting_down, "work sent after the shutdown"
        self.received.append(list(indices))
        self.queue += indices

    def shutdown(self) -> None:
        self.shutting_down = True

    def can_run(self) -> bool:
        return len(self.queue) >= 2 or (len(self.queue) == 1 and self.shutting_down)


def collection(sizes: list[int], cases: int = 1) -> list[str]:
    """Node ids of modules with ``sizes[i]`` samples each (``cases`` items per sample)."""
    if cases == 1:
        return [f"suite/test_{m}.py::sample[{s}]" for m, n in enumerate(sizes) for s in range(n)]
    return [
        f"suite/test_{m}.py::test_case_{c}[{s}]"
        for m, n in enumerate(sizes)
        for c in range(cases)
        for s in range(n)
    ]


def start(ids: list[str], workers: int) -> tuple[ModuleScheduling, list[Worker]]:
    sched = ModuleScheduling(config=None, numnodes=workers)
    nodes = [Worker(f"gw{i}") for i in range(workers)]
    for node in nodes:
        sched.add_node(node)
    for node in nodes:
        sched.add_node_collection(node, ids)
    sched.schedule()
    return sched, nodes


def run(
    sched: ModuleScheduling, nodes: list[Worker], pick: random.Random | None = None
) -> dict[str, list[int]]:
    """Run until nothing can run: in turns (equal speeds), or in a random order with ``pick``.
    Returns what each worker ran; asserts that no worker waits while work is queued."""
    ran: dict[str, list[int]] = {n.name: [] for n in nodes}
    while True:
        ready = [n for n in nodes if n.can_run()]
        if not ready:
            break
        for node in [pick.choice(ready)] if pick else ready:
            index = node.queue.pop(0)
            ran[node.name].append(index)
            sched.mark_test_complete(node, index)
            if sched.queue:  # busy until the end: work queued means nobody waits for it
                assert all(len(n.queue) >= 2 for n in nodes if not n.shutting_down)
    return ran


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(0, 150), min_size=0, max_size=12),
    workers=st.integers(1, 9),
    cases=st.sampled_from([1, 1, 3]),
    seed=st.integers(0, 2**16) | st.none(),
)
def test_every_item_runs_once_nothing_hangs_and_work_is_spread(
    sizes: list[int], workers: int, cases: int, seed: int | None
) -> None:
    ids = collection(sizes, cases)
    sched, nodes = start(ids, workers)
    samples = sum(sizes)
    # From the first sample: every worker that can have a sample has one.
    assert sum(bool(n.queue) for n in nodes) == min(workers, samples)
    ran = run(sched, nodes, random.Random(seed) if seed is not None else None)

    assert sorted(i for indices in ran.values() for i in indices) == list(range(len(ids)))
    assert sched.tests_finished and not sched.has_pending
    assert all(n.shutting_down and not n.queue for n in nodes)
    owners: dict[str, set[str]] = {}  # every case of a sample on one worker
    for name, indices in ran.items():
        for index in indices:
            path, _, item = ids[index].partition("::")
            owners.setdefault(path + item.rsplit("[", 1)[1], set()).add(name)
    assert all(len(names) == 1 for names in owners.values())
    if seed is None:  # equal speeds: every worker ends within one sample of the others
        counts = [len(indices) for indices in ran.values()]
        assert max(counts) - min(counts) <= cases


def test_small_runs_use_every_worker() -> None:
    # 24 samples of one problem on 2 workers: 12 each (whole modules left one worker idle).
    sched, nodes = start(collection([24]), 2)
    assert [len(n.queue) for n in nodes] == [12, 12]
    assert all(n.shutting_down for n in nodes)  # nothing queued: both know their last item
    # 24 problems of one sample each: the same.
    sched, nodes = start(collection([1] * 24), 2)
    assert [len(n.queue) for n in nodes] == [12, 12]


@pytest.mark.parametrize(("samples", "workers"), [(1, 2), (3, 4), (0, 2), (1, 1)])
def test_few_samples_on_more_workers_finish(samples: int, workers: int) -> None:
    sched, nodes = start(collection([samples] if samples else []), workers)
    assert all(n.shutting_down for n in nodes)  # each runs what it has, then stops
    ran = run(sched, nodes)
    assert sum(len(r) for r in ran.values()) == samples and sched.tests_finished


def test_large_runs_read_ahead_in_whole_modules() -> None:
    # 400 problems x 5 samples on 4 workers: whole modules first, and each worker keeps the
    # watermark's worth of items before it finishes its current one.
    sched, nodes = start(collection([5] * 400), 4)
    sent = [node.received[0] for node in nodes]
    assert [len(s) for s in sent] == [LOW_WATERMARK] * 4 and sorted(sum(sent, [])) == sum(sent, [])
    modules = [i // 5 for i in sent[0]]  # whole modules, the last one cut to fill the share
    assert all(modules.count(m) == 5 for m in modules[: -(LOW_WATERMARK % 5) or None])
    lows: list[int] = []
    while sched.queued:
        for node in nodes:
            sched.mark_test_complete(node, node.queue.pop(0))
            lows.append(len(node.queue))
    assert min(lows) >= LOW_WATERMARK - 1


def test_a_crashed_worker_reports_its_item_and_requeues_the_rest() -> None:
    ids = collection([30])
    sched, nodes = start(ids, 2)
    crashed = nodes[0]
    first = crashed.queue[0]
    assert sched.remove_node(crashed) == ids[first]
    replacement = Worker("gw2")
    sched.add_node(replacement)
    sched.add_node_collection(replacement, ids)
    sched.schedule()
    ran = run(sched, [nodes[1], replacement])
    done = sorted(i for r in ran.values() for i in r)
    assert done == [i for i in range(30) if i != first]
