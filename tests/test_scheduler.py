"""plugin.scheduler against xdist's side of the protocol, simulated: workers that run an item
only once they know what follows it (its next item or a shutdown), as xdist's workers do."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

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


def run_timed(
    sched: ModuleScheduling, nodes: list[Worker], seconds: dict[int, float]
) -> dict[str, float]:
    """Run with each item taking its ``seconds``, the worker that is free first going next;
    returns when each worker ended."""
    clock = {n.name: 0.0 for n in nodes}
    while ready := [n for n in nodes if n.can_run()]:
        node = min(ready, key=lambda n: clock[n.name])
        index = node.queue.pop(0)
        clock[node.name] += seconds[index]
        sched.mark_test_complete(node, index)
    assert sched.tests_finished
    return clock


def test_costly_samples_go_first_and_the_workers_end_together() -> None:
    # HumanEval+ with one sample a problem: three samples take seconds, the rest milliseconds,
    # and the costly ones come last in collection order.
    ids = collection([1] * 164)
    seconds = {i: 3.5 if i >= 161 else 0.1 for i in range(164)}
    costs = {ids[i].partition("::")[0]: s for i, s in seconds.items()}
    sched = ModuleScheduling(config=None, numnodes=2, costs=costs)
    nodes = [Worker("gw0"), Worker("gw1")]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, ids)
    sched.schedule()
    firsts = sorted(node.queue[0] for node in nodes)
    assert firsts == [161, 162]  # the costliest first, one on each worker
    ends = run_timed(sched, nodes, seconds)
    assert abs(ends["gw0"] - ends["gw1"]) <= 0.1 + 1e-9
    # By count alone (an older suite's manifest has no costs) they end seconds apart.
    blind, blind_nodes = start(ids, 2)
    ends = run_timed(blind, blind_nodes, seconds)
    assert abs(ends["gw0"] - ends["gw1"]) >= 3.0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=10),
    workers=st.integers(1, 6),
    cases=st.sampled_from([1, 3]),
    data=st.data(),
)
def test_with_costs_every_item_still_runs_once_and_nothing_waits(
    sizes: list[int], workers: int, cases: int, data: st.DataObject
) -> None:
    ids = collection(sizes, cases)
    modules = sorted({nodeid.partition("::")[0] for nodeid in ids})
    # Some modules without a cost (a suite compiled before costs were written): zero.
    costs = {m: data.draw(st.floats(0.0, 5.0)) for m in modules if data.draw(st.booleans())}
    sched = ModuleScheduling(config=None, numnodes=workers, costs=costs)
    nodes = [Worker(f"gw{i}") for i in range(workers)]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, ids)
    sched.schedule()
    assert sum(bool(n.queue) for n in nodes) == min(workers, sum(sizes))
    ran = run(sched, nodes, random.Random(data.draw(st.integers(0, 2**16))))
    assert sorted(i for indices in ran.values() for i in indices) == list(range(len(ids)))
    assert sched.tests_finished and not sched.has_pending
    assert sched.queued == 0 and abs(sched.queued_cost) < 1e-6


def test_the_compiled_suite_gives_each_module_its_cost(tmp_path: Path) -> None:
    # What the session hands the scheduler: each module's estimated seconds a sample, by the
    # module's folder and file (the end of its node id), costlier for a problem of more cases.
    from harness.evaluate import evaluate
    from harness.pipeline.compile import SAMPLE_COSTS, load_manifest
    from harness.records import CheckCase, Problem, Sample

    def problem(task_id: str, cases: int) -> Problem:
        checks = tuple(
            CheckCase(f"c{i}", f"assert candidate({i}) == {i}", "compare", calls=(f"f({i})",))
            for i in range(cases)
        )
        return Problem("s", task_id, "def f(n):\n", "f", checks, "    return n\n")

    program = "def f(n):\n    return n\n"
    problems = [problem("T/0", 1), problem("T/1", 300)]
    evaluate(problems, [Sample(p.task_id, program, "s0") for p in problems], out_dir=tmp_path)
    root = tmp_path / "suite"
    costs = load_manifest(root)[SAMPLE_COSTS]
    assert sorted(costs) == ["s/test_T_0.py", "s/test_T_1.py"]
    assert all((root / module).is_file() for module in costs)
    assert costs["s/test_T_1.py"] > costs["s/test_T_0.py"] > 0
