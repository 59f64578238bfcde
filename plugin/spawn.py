"""On the controller: xdist's local workers start together, not one after another.

xdist starts its workers in turn (pytest-xdist#346): each ``makegateway`` starts an interpreter
and waits for it to answer before the next one starts, 60-90 ms a worker here, so 16 workers
spend more than a second of every run only coming up, while 15 cores wait. Here, when xdist
is about to start them (its ``pytest_xdist_setupnodes`` hook, given the very specs it will
start), every local (``popen``) gateway is made at once, each by a thread of its own; xdist's
own setup then takes them in its order, through this run's gateway group, and does with each
what it always does (its hooks, ``workerinput``, the worker's start). Nothing else changes:
the ids, the order of the nodes, a worker that is restarted later (made as xdist makes it), a
run with remote gateways (``ssh``, ``socket``, ``via``: started in turn, as before). A gateway
that cannot be made here is made again by xdist itself, which reports it as it always did.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest


def start_workers_together(config: pytest.Config) -> None:
    """Have this run's local xdist workers made at once (see the module)."""
    config.pluginmanager.register(_Spawner(), "codeeval-spawn")


def _local(spec: Any) -> bool:
    return bool(getattr(spec, "popen", False)) and not getattr(spec, "via", None)


def _gateway_group(config: pytest.Config) -> Any:
    """The execnet group xdist's node manager makes this run's gateways in, or None."""
    dsession = config.pluginmanager.get_plugin("dsession")
    return getattr(getattr(dsession, "nodemanager", None), "group", None)


class _Spawner:
    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: Sequence[Any]) -> None:
        if len(specs) < 2 or not all(_local(spec) and spec.id for spec in specs):
            return
        group = _gateway_group(config)
        if group is None or "makegateway" in vars(group):
            return  # not the xdist this was written for: its own way, in turn
        made = make_together(group.makegateway, specs)
        group.makegateway = _TakeMade(group, made)

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> Any:
        try:
            return (yield)
        finally:  # xdist has set its nodes up: a later (restarted) worker is made its own way
            group = _gateway_group(session.config)
            if group is not None and isinstance(vars(group).get("makegateway"), _TakeMade):
                del group.makegateway


def make_together(make: Callable[[Any], Any], specs: Sequence[Any]) -> dict[str, Any]:
    """``make(spec)`` for every spec at once, as many at a time as there are cores: the
    gateways made, by spec id (one that failed is left out, for its maker to meet again)."""
    threads = max(1, min(len(specs), os.cpu_count() or 1))

    def attempt(spec: Any) -> tuple[str, Any]:
        try:
            return spec.id, make(spec)
        except Exception:  # noqa: BLE001 - made again, and reported, by xdist's own call
            return spec.id, None

    with ThreadPoolExecutor(threads, thread_name_prefix="codeeval-spawn") as pool:
        return {sid: gw for sid, gw in pool.map(attempt, specs) if gw is not None}


class _TakeMade:
    """Stands for the group's ``makegateway`` while xdist sets its nodes up: a spec made
    already gets its gateway; any other is made as the group makes it."""

    def __init__(self, group: Any, made: dict[str, Any]) -> None:
        self._make = type(group).makegateway.__get__(group)
        self._made = made

    def __call__(self, spec: Any = None) -> Any:
        gateway = self._made.pop(getattr(spec, "id", None), None)
        return gateway if gateway is not None else self._make(spec)
