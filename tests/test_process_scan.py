"""The fork server's scan of the processes below one (inside/processes.py), as its users load it."""

from __future__ import annotations

import os
import signal
import time

from harness.sandbox.inside import processes
from harness.sandbox.server_files import server_module


def _spin_then_wait(seconds: float) -> None:
    """In a forked child: spin ``seconds`` of CPU in a grandchild of its own, then sleep."""
    grandchild = os.fork()
    if grandchild == 0:
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass
        time.sleep(60)
        os._exit(0)
    time.sleep(60)
    os._exit(0)


def _kill_tree(pid: int) -> None:
    """Kill ``pid`` and what is below it (only these: the test's process may have others)."""
    for child in (*processes.below(pid), pid):
        os.kill(child, signal.SIGKILL)
    os.waitpid(pid, 0)


def test_below_finds_children_and_grandchildren_with_their_cpu() -> None:
    pid = os.fork()
    if pid == 0:
        _spin_then_wait(0.3)
    try:
        deadline = time.monotonic() + 10
        found: dict[int, int] = {}
        while time.monotonic() < deadline:
            found = processes.below(os.getpid())
            if sum(found.get(p, 0) for p in (pid, *processes.below(pid))) >= 0.25 * processes.TICK:
                break
            time.sleep(0.05)
        grandchildren = processes.below(pid)
        assert pid in found and len(grandchildren) == 1
        assert grandchildren.keys() <= found.keys()
        assert sum(found[p] for p in (pid, *grandchildren)) / processes.TICK >= 0.25
    finally:
        _kill_tree(pid)


def test_stat_of_a_gone_process_is_none() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    assert processes.stat(pid) is None
    parent, ticks = processes.stat(os.getpid()) or (0, -1)
    assert parent == os.getppid() and ticks >= 0


def test_the_loaded_server_files_share_the_scan() -> None:
    """cleanup and segment, loaded by path as the trusted side loads them, use the scan."""
    cleanup, segment = server_module("cleanup"), server_module("segment")
    assert cleanup.processes is segment.processes is server_module("processes")
    pid = os.fork()
    if pid == 0:
        _spin_then_wait(0.0)
    try:
        deadline = time.monotonic() + 10
        while not processes.below(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        grandchild = next(iter(processes.below(pid)))
        assert {pid, grandchild} <= set(cleanup.descendants())
        assert segment.tree_cpu_seconds(os.getpid()) >= 0.0
    finally:
        _kill_tree(pid)
