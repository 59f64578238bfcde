"""Per-process CPU of an evaluation, read from /proc: the controller, each worker, its fork server.

Two uses, both by ``benchmarks/throughput.py``:

- a pytest plugin (``-p cpu_probe`` with this folder on ``PYTHONPATH``, and
  ``CODEEVAL_CPU_PROBE`` naming a folder): the controller and every xdist worker write one JSON
  file there with their own CPU (user + system) at start-up, at their first and second sample
  and at the end, and each worker also the CPU of everything it started (the fork server, its
  zygote and the children it reaped: the subtree's ``utime + stime + cutime + cstime``);
- :func:`tree_cpu` for a process tree measured from outside (``evaluate(workers=N)``'s pool,
  ``codeeval serve``).

Times are in seconds of CPU, from ``/proc/<pid>/stat`` (clock ticks) and ``getrusage``.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

ENV = "CODEEVAL_CPU_PROBE"
_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, list[str]] | None:
    """``(ppid, fields after the command)`` of ``pid``, or None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rindex(b")") + 2 :].decode().split()
    return int(fields[1]), fields


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None:
                kids.setdefault(stat[0], []).append(int(name))
    return kids


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``."""
    kids = _children()
    found, todo = [], list(kids.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo += kids.get(child, [])
    return found


def own_cpu(pid: int) -> float:
    """User + system CPU of ``pid`` itself (not its children)."""
    stat = _stat(pid)
    return 0.0 if stat is None else (int(stat[1][11]) + int(stat[1][12])) / _TICK


def reaped_cpu(pid: int) -> float:
    """CPU of the children ``pid`` has waited for (and theirs)."""
    stat = _stat(pid)
    return 0.0 if stat is None else (int(stat[1][13]) + int(stat[1][14])) / _TICK


def by_depth(pid: int) -> dict[str, list[float]]:
    """CPU below ``pid`` by depth: ``{"1": [own, reaped], ...}``, summed over the live
    processes at each depth (under bubblewrap: 1 bubblewrap, 2 the fork server, 3 its zygote,
    whose reaped CPU is the samples' children)."""
    kids = _children()
    depths: dict[str, list[float]] = {}
    todo = [(child, 1) for child in kids.get(pid, [])]
    while todo:
        child, depth = todo.pop()
        entry = depths.setdefault(str(depth), [0.0, 0.0])
        entry[0] += own_cpu(child)
        entry[1] += reaped_cpu(child)
        todo += [(grandchild, depth + 1) for grandchild in kids.get(child, [])]
    return depths


def tree_cpu(pid: int) -> float:
    """CPU of everything below ``pid``: live descendants and all they and ``pid`` reaped."""
    total = reaped_cpu(pid)
    for child in descendants(pid):
        total += own_cpu(child) + reaped_cpu(child)
    return total


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _started_at() -> float:
    """This process's start, as a ``time.time()`` value, to a clock tick: its start in ticks
    since boot, against the clock since boot now (``/proc/stat``'s boot time is in whole
    seconds: up to a second early)."""
    since_boot = int(_stat(os.getpid())[1][19]) / _TICK  # type: ignore[index]
    return time.time() - (time.clock_gettime(time.CLOCK_BOOTTIME) - since_boot)


class Probe:
    """Snapshots of this process (and what it started) at the points a run passes."""

    def __init__(self, folder: Path, role: str) -> None:
        self.folder = folder
        self.role = role
        self.items = 0
        self.data: dict[str, Any] = {"role": role, "pid": os.getpid(), "started": _started_at()}
        self.mark("configure")

    def mark(self, name: str) -> None:
        self.data[name] = {
            "wall": time.time(),
            "cpu": _self_cpu(),
            "below": tree_cpu(os.getpid()),
            "depths": by_depth(os.getpid()),
        }

    def write(self) -> None:
        self.data["items"] = self.items
        path = self.folder / f"{self.role}-{os.getpid()}.json"
        path.write_text(json.dumps(self.data))


_probe: Probe | None = None


def pytest_configure(config: Any) -> None:
    global _probe
    folder = os.environ.get(ENV)
    if folder:
        role = "worker" if hasattr(config, "workerinput") else "controller"
        _probe = Probe(Path(folder), role)


def pytest_sessionstart(session: Any) -> None:
    if _probe is not None:
        _probe.mark("sessionstart")


def pytest_collection_finish(session: Any) -> None:
    if _probe is not None:
        _probe.mark("collected")


def _count() -> None:
    assert _probe is not None
    _probe.items += 1
    if _probe.items == 1:
        _probe.mark("first")
    elif _probe.items == 2:
        _probe.mark("second")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session: Any) -> Generator[None, Any, Any]:
    # The controller's run: from here to its session's end. (No per-item hook here: the
    # plugin gives reports alone only to plugins it knows, and this one is not one of them.)
    if _probe is not None and _probe.role == "controller":
        _probe.mark("first")
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Generator[None, Any, Any]:
    if _probe is not None and _probe.role == "worker":
        _count()
    return (yield)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: Any) -> Generator[None, Any, Any]:
    if _probe is not None:
        # A worker's end comes before its fork server stops; the controller's run loop ends
        # here, before results.jsonl, summary.json and the report are written.
        _probe.mark("end" if _probe.role == "worker" else "loop_end")
    return (yield)


def pytest_unconfigure(config: Any) -> None:
    if _probe is not None:
        if _probe.role == "controller":
            _probe.mark("end")  # after results.jsonl, summary.json and the report are written
        _probe.write()


def summarize_probe(folder: Path, samples: int) -> dict[str, Any]:
    """Per-sample CPU (ms) of the controller, the workers and their fork servers, and the
    start-up of each (seconds), from the files a probed run wrote in ``folder``."""
    runs = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    controller = [r for r in runs if r["role"] == "controller"]
    workers = [r for r in runs if r["role"] == "worker"]
    out: dict[str, Any] = {"samples": samples}
    if controller:
        c = controller[0]
        start = c.get("first", c["end"])
        # Without workers (-n 0) the controller runs the samples: its fork server is below it.
        out["fork_server_ms"] = 1000 * (c["end"]["below"] - start["below"]) / max(1, samples)
        out["controller_ms"] = 1000 * (c["end"]["cpu"] - start["cpu"]) / max(1, samples)
        if "loop_end" in c:
            loop = c["loop_end"]["cpu"] - start["cpu"]
            out["controller_loop_ms"] = 1000 * loop / max(1, samples)
            out["controller_results_ms"] = (
                1000 * (c["end"]["cpu"] - c["loop_end"]["cpu"]) / max(1, samples)
            )
        out["controller_startup_cpu_s"] = start["cpu"]
        out["controller_total_cpu_s"] = c["end"]["cpu"]
    if workers:
        # From each worker's second sample: its start-up and its fork server's are left out.
        done = sum(max(0, w["items"] - 1) for w in workers if "second" in w)
        worker_cpu = sum(w["end"]["cpu"] - w["second"]["cpu"] for w in workers if "second" in w)
        below = sum(w["end"]["below"] - w["second"]["below"] for w in workers if "second" in w)
        out["worker_ms"] = 1000 * worker_cpu / max(1, done)
        out["fork_server_ms"] = 1000 * below / max(1, done)
        out["fork_server_by_depth_ms"] = _depth_deltas(workers, done)
        out["worker_items"] = [w["items"] for w in workers]
        # Start-up: from the process's start to its first sample (wall, and its own CPU).
        out["worker_startup_s"] = max(w["first"]["wall"] - w["started"] for w in workers)
        out["worker_startup_cpu_s"] = max(w["first"]["cpu"] for w in workers)
        # ... and to its first sample judged (its second begins; its end when it had one):
        # the fork server's start and the first sample's own run count here.
        judged = [w.get("second", w["end"])["wall"] for w in workers]
        out["worker_first_judged_s"] = max(
            j - w["started"] for j, w in zip(judged, workers, strict=True)
        )
        if controller:
            c = controller[0]
            out["first_sample_after_s"] = max(w["first"]["wall"] for w in workers) - c["started"]
            out["first_judged_after_s"] = max(judged) - c["started"]
            # Every worker busy until the end: how long before the last one each one ended.
            ends = [w["end"]["wall"] for w in workers]
            out["worker_idle_at_end_s"] = max(ends) - min(ends)
            out.update(_startup_parts(c, workers))
    return out


def _startup_parts(controller: dict[str, Any], workers: list[dict[str, Any]]) -> dict[str, float]:
    """What a whole run's start and end are made of, for :func:`predicted_run_s` (seconds):
    the controller's start to its session; from there to the first worker's start, and each
    next worker's start after the one before (xdist alone starts them in turn, each waiting
    for the one before to answer: an interpreter's start); a worker's start to its first
    sample; the controller's end after the last worker ended."""
    session = controller["sessionstart"]["wall"]
    starts = sorted(w["started"] for w in workers)
    boots = sorted(w["first"]["wall"] - w["started"] for w in workers)
    return {
        "controller_ready_s": session - controller["started"],
        "first_worker_after_s": max(0.0, starts[0] - session),
        "next_worker_after_s": (starts[-1] - starts[0]) / max(1, len(starts) - 1),
        "worker_boot_s": boots[len(boots) // 2],
        "end_after_workers_s": controller["end"]["wall"] - max(w["end"]["wall"] for w in workers),
    }


# The parts of a run's start and end that grow with its samples: the controller compiles and
# reads them, each worker collects an item per sample, the controller's end writes their rows.
SIZED_PARTS = ("controller_ready_s", "worker_boot_s", "end_after_workers_s")


def parts_at(
    small: dict[str, Any],
    small_samples: int,
    large: dict[str, Any],
    large_samples: int,
    samples: int,
) -> dict[str, Any]:
    """The start and end parts of a run of ``samples``, from two runs measured at two sizes
    (``small_samples`` < ``large_samples``). Each part of :data:`SIZED_PARTS` lies on the line
    through the two measurements, never below the smaller run's; a part that did not grow is
    taken as fixed, at the larger run's figure. The workers' spawn is the larger run's."""
    parts = dict(large)
    if large_samples <= small_samples:
        return parts
    for key in SIZED_PARTS:
        low, high = float(small[key]), float(large[key])
        if high > low:
            slope = (high - low) / (large_samples - small_samples)
            parts[key] = max(low, low + slope * (samples - small_samples))
    return parts


def predicted_run_s(parts: dict[str, Any], samples: int, workers: int, rate: float) -> float:
    """A whole run's seconds with ``workers`` workers judging ``rate`` samples a second
    together: the k-th worker (from 0) starts ``first + k * next`` after the controller's
    session begins and judges ``rate / workers`` a second from its first sample on, until
    the last sample is done; then the controller's end."""
    each = rate / workers
    joins = [
        parts["controller_ready_s"]
        + parts["first_worker_after_s"]
        + k * parts["next_worker_after_s"]
        + parts["worker_boot_s"]
        for k in range(workers)
    ]
    done, end = 0.0, joins[0]
    for k in range(workers):  # between joins[k] and the next join, k + 1 workers judge
        until = joins[k + 1] if k + 1 < workers else float("inf")
        can = (until - joins[k]) * each * (k + 1)
        if done + can >= samples:
            end = joins[k] + (samples - done) / (each * (k + 1))
            break
        done += can
    return end + parts["end_after_workers_s"]


def _depth_deltas(workers: list[dict[str, Any]], done: int) -> dict[str, list[float]]:
    """Per depth below the workers, [own, reaped] CPU per sample (ms), second to end."""
    total: dict[str, list[float]] = {}
    for w in workers:
        if "second" not in w:
            continue
        start, end = w["second"].get("depths", {}), w["end"].get("depths", {})
        for depth, (own, reaped) in end.items():
            own0, reaped0 = start.get(depth, [0.0, 0.0])
            entry = total.setdefault(depth, [0.0, 0.0])
            entry[0] += 1000 * (own - own0) / max(1, done)
            entry[1] += 1000 * (reaped - reaped0) / max(1, done)
    return dict(sorted(total.items()))
