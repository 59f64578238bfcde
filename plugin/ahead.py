"""In an xdist worker of a run with ``--llm-reward``: a reward's per-program analyzers, made
where the samples were judged.

The controller scores every row at the end of the session (:mod:`plugin.session`), one row
after another. The reward's ``syntax`` and ``structure`` analyzers, and the feedback text that
reads them, parse and walk every program there: about half a millisecond a sample of serial
work. Each worker instead makes those reports for the samples it judged, a few dozen at a
time between samples (after an item's protocol, outside its pytest-timeout guard, while the
fork server already runs the next ones) and the rest before its session ends, into the shared
analyzers' cache: the controller's scoring finds them there
(:func:`harness.analyzers.analyze_ahead`, which ``evaluate(workers=N)``'s workers use too).
Only local workers do it: a worker sent the suite (:mod:`plugin.remote`) has a cache of its
own, which the controller never reads.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

AHEAD_EVERY = 64  # judged samples a worker keeps before analyzing them
_AHEAD = pytest.StashKey["AnalyzeAhead | None"]()


class AnalyzeAhead:
    """A worker's judged samples waiting for their per-program reports."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.kept: list[tuple[dict[str, Any], Any]] = []  # (row, problem)

    def add(self, row: dict[str, Any], problem: Any) -> None:
        self.kept.append((row, problem))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self) -> Generator[None, Any, Any]:
        # After the item's protocol, outside pytest-timeout's guard of it: analyzing 64 long
        # programs can take longer than a sample's own limit, and is no part of its verdict.
        try:
            return (yield)
        finally:
            if len(self.kept) >= AHEAD_EVERY:
                self.flush()

    def flush(self) -> None:
        from harness.analyzers import analyze_ahead

        kept, self.kept = self.kept, []
        analyze_ahead(kept, self.names)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        self.flush()  # before xdist's "workerfinished": the controller scores after it


def analyze_later(config: pytest.Config, reward: str, row: dict[str, Any], problem: Any) -> None:
    """Keep a sample judged in this worker for :class:`AnalyzeAhead`. A no-op outside a
    worker (the one process scores it itself) and in a worker sent the suite (a remote one,
    whose cache the controller does not read)."""
    from plugin.lookup import SHIPPED_SUITE

    if not hasattr(config, "workerinput") or config.stash.get(SHIPPED_SUITE, False):
        return
    if _AHEAD not in config.stash:
        config.stash[_AHEAD] = _register(config, reward)
    ahead = config.stash[_AHEAD]
    if ahead is not None:
        ahead.add(row, problem)


def _register(config: pytest.Config, reward: str) -> AnalyzeAhead | None:
    from harness.reward import analyzers_read, load_reward_config

    try:
        names = analyzers_read(load_reward_config(reward))
    except (OSError, ValueError):  # the controller checked it; its scoring says what is wrong
        return None
    ahead = AnalyzeAhead(names)
    config.pluginmanager.register(ahead, "codeeval-analyze-ahead")
    return ahead
