"""How a sample item runs: pytest's hooks in pytest's order, without the runner's machinery.

pytest's runner (``_pytest.runner.runtestprotocol``) runs three phases per item (setup, call,
teardown), each through hooks wrapped by output capture, log capture and the fixtures'
``SetupState``, and makes three reports; under xdist a worker sends six messages per item
(logstart, three reports, logfinish, completion), each written and flushed on its own. A
sample item (:class:`plugin.items.SampleItem`) has no fixtures and prints nothing, so its setup
and teardown do nothing: on HumanEval x 50 at ``-n 2`` that machinery cost the trusted side
more CPU than judging the samples.

So a sample item runs here:

- its call phase as pytest runs one (``CallInfo``, then the ``pytest_runtest_makereport``
  hook, so other plugins still see and may change the report);
- setup and teardown reports are made passed and empty, as pytest's would be;
- without xdist the usual hooks fire in the usual order: logstart, the setup, call and teardown
  reports, logfinish;
- in an xdist worker only the call report travels, marked ``codeeval_replay``; the controller
  (:class:`ReplayReports`) fires logstart, the setup report, the call report, the teardown
  report and logfinish from it. The terminal, JUnit XML and every other plugin on the
  controller see the sequence pytest's runner gives, from two messages per item instead of six.

Wrappers around ``pytest_runtest_protocol`` (pytest-timeout's outer guard, faulthandler) still
run around it. pytest's own protocol runs a sample item whenever something needs it: ``--pdb``
or ``--trace``; items of another kind whose fixtures are still set up (``SetupState``); or a
``skip``, ``skipif`` or ``xfail`` mark on the item (a problem's data defect is an ``xfail``
mark of its generated module), which pytest's skipping plugin reads in the setup and call
phases this protocol leaves out; or a plugin or conftest this module does not know that
implements ``pytest_runtest_setup``, ``_call`` or ``_teardown`` (its hook must fire).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from plugin.lookup import NEXT_ITEM

REPLAY = "codeeval_replay"  # marks a call report whose other phases the controller replays
# What xdist adds to a report from a worker; the replayed reports carry it too.
_XDIST_FIELDS = ("node", "worker_id", "item_index", "testrun_uid")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """Every item learns what runs after it (the sandbox starts on that sample early); a
    sample item then runs through :func:`run_sample_item` when nothing needs pytest's runner."""
    item.stash[NEXT_ITEM] = nextitem
    from plugin.items import SampleItem

    if not isinstance(item, SampleItem) or not _lean_protocol_allowed(item):
        return None
    run_sample_item(item, in_worker=hasattr(item.config, "workerinput"))
    return True


# Marks pytest's skipping plugin evaluates in the setup and call phases.
_RUNNER_MARKS = ("skip", "skipif", "xfail")
# Plugins whose setup/call/teardown hooks a sample item does without: pytest's own (output and
# log capture, which a sample item never uses; the skipping plugin, see _RUNNER_MARKS), this
# project's (per-case items only), pytest-timeout's (its outer guard wraps the protocol) and
# pytest-benchmark's (its ``benchmark`` fixture only).
_KNOWN_PHASE_PLUGINS = frozenset(
    {
        "runner",
        "skipping",
        "capturemanager",
        "logging-plugin",
        "threadexception",
        "unraisableexception",
        "timeout",
        "benchmark",
        "plugin.fixtures",
    }
)
_PHASE_HOOKS = ("pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown")
_PHASES_KNOWN = pytest.StashKey[dict[object, bool]]()  # by module node


def _lean_protocol_allowed(item: pytest.Item) -> bool:
    config = item.config
    if config.getoption("usepdb", False) or config.getoption("trace", False):
        return False  # the debugger is entered from pytest's runner
    if any(item.get_closest_marker(name) is not None for name in _RUNNER_MARKS):
        return False  # skipped or expected to fail: pytest's runner says so
    if not _only_known_phase_hooks(item):
        return False  # another plugin's or a conftest's phase hook must fire
    setup_state = getattr(item.session, "_setupstate", None)
    # Another item's fixtures are still set up: pytest's runner tears them down in order.
    return setup_state is not None and not getattr(setup_state, "stack", True)


def _only_known_phase_hooks(item: pytest.Item) -> bool:
    """Whether every phase hook that applies to ``item`` (conftests by folder) is known; decided
    once per module (its items share their folder's conftests)."""
    known = item.config.stash.setdefault(_PHASES_KNOWN, {})
    module = item.parent
    if module not in known:
        manager = item.config.pluginmanager
        names = {
            manager.get_name(impl.plugin) or ""
            for hook in _PHASE_HOOKS
            for impl in getattr(item.ihook, hook).get_hookimpls()
        }
        known[module] = names <= _KNOWN_PHASE_PLUGINS
    return known[module]


def run_sample_item(item: pytest.Item, *, in_worker: bool) -> None:
    """The call phase of ``item``; its reports go out as pytest's runner would send them."""
    hook = item.ihook
    if not in_worker:
        hook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    call = pytest.CallInfo.from_call(
        item.runtest, when="call", reraise=(pytest.exit.Exception, KeyboardInterrupt)
    )
    report: pytest.TestReport = hook.pytest_runtest_makereport(item=item, call=call)
    if in_worker:
        setattr(report, REPLAY, True)
        hook.pytest_runtest_logreport(report=report)
        return
    for phase in (phase_report(report, "setup"), report, phase_report(report, "teardown")):
        hook.pytest_runtest_logreport(report=phase)
    hook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def phase_report(call_report: pytest.TestReport, when: str) -> pytest.TestReport:
    """The passed, empty setup or teardown report that goes with ``call_report``."""
    at = call_report.start if when == "setup" else call_report.stop
    report = pytest.TestReport(
        # pytest 9.2 keys reports by their structured id, and an item named "sample[0]" has
        # an id that parsing its nodeid text does not give back: JUnit XML then wrote each
        # sample twice. The call report's own id, where pytest has one, keeps them one item.
        getattr(call_report, "id", call_report.nodeid),
        call_report.location,
        call_report.keywords,
        "passed",
        None,
        when,  # type: ignore[arg-type]
        sections=(),
        duration=0.0,
        start=at,
        stop=at,
        user_properties=(),
    )
    for name in _XDIST_FIELDS:
        if hasattr(call_report, name):
            setattr(report, name, getattr(call_report, name))
    return report


class ReplayReports:
    """On the controller: a worker's marked call report becomes the whole item's hook sequence."""

    def __init__(self, config: pytest.Config) -> None:
        self.hook = config.hook

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, Any, Any]:
        if not report.__dict__.pop(REPLAY, False):
            return (yield)
        hook = self.hook
        hook.pytest_runtest_logstart(nodeid=report.nodeid, location=report.location)
        hook.pytest_runtest_logreport(report=phase_report(report, "setup"))
        result = yield  # the call report itself, through every other implementation
        hook.pytest_runtest_logreport(report=phase_report(report, "teardown"))
        hook.pytest_runtest_logfinish(nodeid=report.nodeid, location=report.location)
        return result
