"""Sample items' reports travel from local xdist workers in batches.

Per item, an xdist worker sends its report and a completion notice, and the controller takes
each message on its own: reads it, decodes it, queues it for its main thread, fires the
reporting hooks and tops the worker up. One controller serves every worker, so that serial
work per sample bounds the whole run (about 0.6 ms of its CPU a sample: about 1,600 samples/s
at most, whatever the cores). Here:

- **a worker** keeps the call reports of its sample items (:mod:`plugin.protocol`'s lean
  ones) and their completions, and sends them as one message: when ``BATCH_SIZE`` are kept,
  when the oldest has waited ``BATCH_AGE_S`` (progress stays live when samples are slow), when
  its queue of items to run runs low (the controller must hear of it to send more: xdist runs
  an item only once it knows the next one), and before any other message (a warning, an item
  run by pytest's own protocol, the end), so the controller sees everything in order;
- **the controller** (:class:`plugin.scheduler.ModuleScheduling`, which receives the batch in
  place of a completion) gives each report to xdist's own handler, as if it had come alone
  (hooks, ``--maxfail``), then marks the items done and tops the worker up once;
- when the controller's reporting plugins are ones whose output does not depend on them
  (:func:`lean_reports`: the terminal without ``-v``, the session, last-failed, step-wise,
  logging without live logs, this plugin's), a sample item's report is given alone: not the
  empty setup and teardown reports and the start and finish notices that
  :class:`plugin.protocol.ReplayReports` otherwise replays around it (JUnit XML and other
  plugins get the whole sequence, as before);
- the worker names the item it is running in a small file shared with the controller (an
  8-byte map): when a worker dies, the scheduler reports that item as the one that crashed it
  and queues the others again, judged or not (their rows died with it), so a crash costs
  what it cost without batches and every sample still gets exactly one row.

Only plain local workers batch (the file is local); remote ones send per item as before.
"""

from __future__ import annotations

import gc
import mmap
import os
import struct
import tempfile
import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from harness.jsonlines import loads
from plugin.lookup import ROW_ATTR
from plugin.protocol import REPLAY
from plugin.reports import PACKED, restore_tuples

SETTINGS_KEY = "codeeval_batch"  # workerinput: {"size", "age_s", "slot"}
BATCH_SIZE = 32  # reports per message at most (a scheduler's share is at most 64 items)
BATCH_AGE_S = 0.25  # the longest a finished sample's report waits in a worker
LOW_QUEUE = 8  # fewer items than this left to run: the worker reports what it has
MARK = "codeeval-batch"  # a completion's item_index: (MARK, reports, rows, worker id, run uid)
_SLOT = struct.Struct("<q")  # the item index a worker runs now, -1 between items
_SLOTS = pytest.StashKey[Path]()


# -- the controller --------------------------------------------------------------------------
def node_settings(config: pytest.Config, node: Any) -> dict[str, Any] | None:
    """What ``node`` is told in its ``workerinput``: batch its sample reports, and where its
    slot is; None for a worker that reports per item (remote, or another scheduler)."""
    from plugin.remote import shares_files

    if config.getvalue("dist") not in ("load", "loadfile"):
        return None  # plugin.scheduler is not the scheduler: it alone reads batches
    if not shares_files(node.gateway.spec):
        return None
    folder = config.stash.get(_SLOTS, None)
    if folder is None:
        folder = config.stash[_SLOTS] = Path(tempfile.mkdtemp(prefix="codeeval-slots-"))
        config.add_cleanup(lambda: _remove(folder))
    slot = folder / f"{node.gateway.id}.slot"
    slot.write_bytes(_SLOT.pack(-1))
    return {"size": BATCH_SIZE, "age_s": BATCH_AGE_S, "slot": str(slot)}


def _remove(folder: Path) -> None:
    for path in folder.glob("*.slot"):
        path.unlink(missing_ok=True)
    folder.rmdir()


def running_item(node: Any) -> int | None:
    """The item ``node`` (a dead worker) was running, from its slot; None when it was between
    items or does not batch."""
    settings = getattr(node, "workerinput", {}).get(SETTINGS_KEY)
    if not settings:
        return None
    try:
        (index,) = _SLOT.unpack(Path(settings["slot"]).read_bytes()[: _SLOT.size])
    except (OSError, struct.error):
        return None
    return None if index < 0 else index


class BatchReceiver:
    """On the controller: the reports of a batch, given to xdist as if each came alone."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._dsession: Any = None
        self._lean: LeanReporting | None = None
        # Reports stay in memory until the end (the terminal keeps them): once a batch is
        # reported they are frozen out of the garbage collector's scans (about 1/5 of this
        # process's work per sample), unless the process froze objects itself.
        self._freeze = gc.isenabled() and gc.get_freeze_count() == 0
        if self._freeze:
            config.add_cleanup(gc.unfreeze)

    def batches(self, node: Any) -> bool:
        """Whether ``node`` was told to send batches."""
        return bool(getattr(node, "workerinput", {}).get(SETTINGS_KEY))

    def deliver(self, node: Any, batch: tuple[Any, ...]) -> list[int]:
        """Report every item of ``batch`` from ``node``; returns their indices."""
        if self._dsession is None:
            self._dsession = self.config.pluginmanager.get_plugin("dsession")
            if lean_reports(self.config):
                self._lean = LeanReporting(self.config, self._dsession)
        _, text, rows, worker_id, testrun_uid = batch
        reports = []
        for (index, data), row in zip(loads(text), rows, strict=True):
            if self._lean is not None:
                data.pop(REPLAY, None)  # given alone: its empty phases change nothing here
            del data["$report_type"]
            data["worker_id"] = worker_id
            data["testrun_uid"] = testrun_uid
            if row is not None:
                data[ROW_ATTR] = row
            restore_tuples(data)
            report = pytest.TestReport._from_json(data)
            report.item_index = index  # type: ignore[attr-defined] # as xdist sets it
            reports.append(report)
        if self._lean is not None:
            self._lean.report(node, reports)
        else:
            for report in reports:
                self._dsession.worker_testreport(node, report)  # hooks, --maxfail
        if self._freeze:
            gc.freeze()
        return [report.item_index for report in reports]  # type: ignore[attr-defined]


class LeanReporting:
    """A batch of sample items' call reports, each given alone: to every plugin through the
    hook but the terminal, and to the terminal as it writes them (its progress letters, once
    flushed); ``--maxfail`` counted as xdist counts it."""

    _KNOWN_STATUS = frozenset({"terminal", "runner", "skipping", "subtests"})

    def __init__(self, config: pytest.Config, dsession: Any) -> None:
        manager = config.pluginmanager
        self.config = config
        self.dsession = dsession
        self.terminal = _plain_terminal(config)
        drop = [self.terminal] if self.terminal is not None else []
        self.hook = manager.subset_hook_caller("pytest_runtest_logreport", remove_plugins=drop)
        impls = config.hook.pytest_report_teststatus.get_hookimpls()
        # The status of a call report depends only on its outcome with pytest's own
        # implementations: asked once per outcome.
        self.statuses: dict[tuple[str, bool], Any] | None = (
            {} if {manager.get_name(i.plugin) for i in impls} <= self._KNOWN_STATUS else None
        )

    def report(self, node: Any, reports: list[pytest.TestReport]) -> None:
        for report in reports:
            report.node = node  # type: ignore[attr-defined] # as xdist sets it
            self.hook(report=report)
            if report.failed:
                self.dsession._handlefailures(report)
        if self.terminal is not None:
            self._write(reports)

    def _write(self, reports: list[pytest.TestReport]) -> None:
        """TerminalReporter.pytest_runtest_logreport for call reports without -v, flushed
        once for the batch.

        Letters of one colour are written a run at a time, and pytest's check for the
        progress column (which measures the whole line again) is asked only where a letter
        may reach it: per letter, both were most of the controller's work for a sample.
        """
        tr = self.terminal
        tw = tr._tw
        tr._tests_ran = True
        screen = getattr(tr, "_screen_width", tw.fullwidth)
        near_edge = screen - 1 - _widest_progress(tr)  # a line this wide may be past it
        width = tw.width_of_current_line
        run, run_markup = "", None
        for report in reports:
            category, letter, word, markup = self._status(report)
            tr._add_stats(category, [report])
            if not letter and not word:
                continue
            tr._progress_nodeids_reported.add(report.nodeid)
            if markup != run_markup and run:
                tw.write(run, **run_markup)
                run = ""
            run, run_markup = run + letter, markup
            # A letter of unknown width (not ASCII): pytest's check measures the line itself.
            width += len(letter) if letter.isascii() else near_edge
            if width >= near_edge and tr._show_progress_info and not tr._is_last_item:
                tw.write(run, **run_markup)
                run = ""
                tr._write_progress_information_if_past_edge()
                width = tw.width_of_current_line
        if run:
            tw.write(run, **run_markup)
        tr.flush()

    def _status(self, report: pytest.TestReport) -> tuple[str, str, str, dict[str, bool]]:
        """The terminal's category, letter, word and colour of ``report``."""
        was_xfail = hasattr(report, "wasxfail")
        key = (report.outcome, was_xfail)
        cached = None if self.statuses is None else self.statuses.get(key)
        if cached is not None:
            return cached
        category, letter, word = self.config.hook.pytest_report_teststatus(
            report=report, config=self.config
        )
        if isinstance(word, tuple):
            word, markup = word
        elif report.passed:
            markup = {"yellow": True} if was_xfail else {"green": True}
        elif report.failed:
            markup = {"red": True}
        else:
            markup = {"yellow": True} if report.skipped else {}
        status = (category, letter, word, markup)
        if self.statuses is not None:
            self.statuses[key] = status
        return status


def _widest_progress(reporter: Any) -> int:
    """The most columns pytest's progress information may take at a line's end (its
    percentage, count or times)."""
    collected = getattr(getattr(reporter, "_session", None), "testscollected", 0) or 0
    return max(len(" [100%]"), len(" 99h 59m"), len(f" [{collected}/{collected}]"))


# What LeanReporting uses of pytest's terminal reporter (pytest 8 and 9).
_TERMINAL_PARTS = (
    "_add_stats",
    "_progress_nodeids_reported",
    "_tw",
    "_show_progress_info",
    "_is_last_item",
    "_write_progress_information_if_past_edge",
    "flush",
)


def _plain_terminal(config: pytest.Config) -> Any:
    """pytest's own terminal reporter, when it is the one registered and has the parts
    :class:`LeanReporting` writes with; else None (it then gets the hook)."""
    from _pytest.terminal import TerminalReporter

    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if type(reporter) is not TerminalReporter:
        return None
    if not all(hasattr(reporter, name) for name in _TERMINAL_PARTS):
        return None
    return reporter


# Controller plugins (by registered name) whose output does not change when a sample item's
# report comes without its empty setup and teardown reports and its start and finish notices.
_LEAN_HOOKS = {
    "pytest_runtest_logstart": frozenset({"terminalreporter", "logging-plugin"}),
    "pytest_runtest_logfinish": frozenset({"logging-plugin"}),
    "pytest_runtest_logreport": frozenset(
        {
            "terminalreporter",
            "terminalprogress-plugin",
            "logging-plugin",
            "session",
            "lfplugin",
            "stepwiseplugin",
            "codeeval-session",
            "codeeval-replay",
        }
    ),
}


def lean_reports(config: pytest.Config) -> bool:
    """Whether a sample item's call report may be given alone on this controller."""
    manager = config.pluginmanager
    for hook, known in _LEAN_HOOKS.items():
        for impl in getattr(manager.hook, hook).get_hookimpls():
            if manager.get_name(impl.plugin) not in known:
                return False  # JUnit XML, a conftest, another plugin: the whole sequence
    reporter = manager.get_plugin("terminalreporter")
    if reporter is not None and (
        config.get_verbosity(pytest.Config.VERBOSITY_TEST_CASES) > 0 or reporter.showfspath
    ):
        return False  # -v writes a line at each start
    logging_plugin = manager.get_plugin("logging-plugin")
    if logging_plugin is not None and logging_plugin._log_cli_enabled():
        return False  # live logs name each phase
    if config.getoption("durations", None) is not None:
        return False  # --durations counts the empty phases among those it hides
    dsession = manager.get_plugin("dsession")
    return hasattr(dsession, "_handlefailures")  # --maxfail counted as xdist counts it


# -- the worker ---------------------------------------------------------------------------------
class WorkerBatcher:
    """In an xdist worker: keeps sample items' reports and sends them in batches."""

    def __init__(self, config: pytest.Config, settings: dict[str, Any]) -> None:
        self.size = int(settings["size"])
        self.age_s = float(settings["age_s"])
        self.interactor = _interactor(config)
        fd = os.open(settings["slot"], os.O_RDWR)
        try:
            self.slot = mmap.mmap(fd, _SLOT.size)
        finally:
            os.close(fd)
        self.kept: list[str] = []  # "[index,<packed report>]"
        self.rows: list[list[str] | None] = []  # their rows: [task id, sample id, JSON text]
        self.lean_row: list[str] | None = None
        self.first_at = 0.0
        self.lean_index: int | None = None  # the item whose call report may be kept
        self.kept_index: int | None = None  # the item whose call report was kept
        self.ids = (self.interactor.workerid, self.interactor.testrunuid)
        self.lock = threading.Lock()  # a plugin may send from a thread of its own (a warning)
        self.send = self.interactor.sendevent
        self.interactor.sendevent = self.sendevent  # every message of the worker passes here

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, Any]:
        _SLOT.pack_into(self.slot, 0, self.interactor.item_index)
        try:
            return (yield)
        finally:
            _SLOT.pack_into(self.slot, 0, -1)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if getattr(report, REPLAY, False):  # a sample item's only report (plugin.protocol)
            self.lean_index = self.interactor.item_index
            # Its row travels beside the report's JSON, as a string of its own (not escaped
            # into the report's text and read back from it on the controller).
            self.lean_row = report.__dict__.pop(ROW_ATTR, None)

    def sendevent(self, name: str, **kwargs: Any) -> None:
        with self.lock:
            self._sendevent(name, **kwargs)

    def _sendevent(self, name: str, **kwargs: Any) -> None:
        if name == "testreport":
            data = kwargs["data"]
            index = data.get("item_index")
            if index is not None and index == self.lean_index and PACKED in data:
                if not self.kept:
                    self.first_at = time.monotonic()
                self.kept.append(f"[{index},{data[PACKED]}]")
                self.rows.append(self.lean_row)
                self.kept_index, self.lean_index = index, None
                return
        elif name == "runtest_protocol_complete" and kwargs.get("item_index") == self.kept_index:
            self.kept_index = None  # its report is kept: the batch says it is done too
            if (
                len(self.kept) >= self.size
                or time.monotonic() - self.first_at >= self.age_s
                or self._left_to_run() < LOW_QUEUE
            ):
                self.flush()
            return
        self.flush()
        self.send(name, **kwargs)

    def flush(self) -> None:
        if not self.kept:
            return
        batch = (MARK, "[" + ",".join(self.kept) + "]", self.rows, *self.ids)
        self.kept, self.rows = [], []
        self.send("runtest_protocol_complete", item_index=batch, duration=0.0)

    def _left_to_run(self) -> int:
        with self.interactor.torun.lock() as queued:
            return len(queued)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        with self.lock:
            self.flush()  # xdist's own "workerfinished" follows, after every report


def _interactor(config: pytest.Config) -> Any:
    for plugin in config.pluginmanager.get_plugins():
        if type(plugin).__name__ == "WorkerInteractor":
            return plugin
    raise RuntimeError("no xdist worker interactor in this worker")


def start_worker(config: pytest.Config) -> None:
    """In an xdist worker told to batch: register the batcher."""
    settings = config.workerinput.get(SETTINGS_KEY)  # type: ignore[attr-defined]
    if settings:
        config.pluginmanager.register(WorkerBatcher(config, settings), "codeeval-batch")
