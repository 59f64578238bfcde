"""The processes below one, found in /proc, with their CPU time (stdlib only).

Loaded by path beside the modules that use it (the fork server's segment and clean-up, and the
trusted side's copy of the clean-up), which get it as the global ``processes``.
"""

from __future__ import annotations

import os

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # /proc's CPU unit


def stat(pid: int) -> tuple[int, int] | None:
    """``(ppid, utime + stime + cutime + cstime)`` of ``pid`` in clock ticks; None when gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read()
        fields = text[text.rindex(b")") + 2 :].split()
        return int(fields[1]), sum(int(f) for f in fields[11:15])
    except (OSError, ValueError, IndexError):
        return None


def below(root: int) -> dict[int, int]:
    """``{pid: CPU ticks}`` of every process below ``root`` (children, theirs, and so on)."""
    children: dict[int, list[tuple[int, int]]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            found = stat(int(name))
            if found is not None:
                children.setdefault(found[0], []).append((int(name), found[1]))
    result: dict[int, int] = {}
    todo = [root]
    while todo:
        for pid, ticks in children.get(todo.pop(), ()):
            if pid not in result:  # a pid reused mid-scan must not loop
                result[pid] = ticks
                todo.append(pid)
    return result
