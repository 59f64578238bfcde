"""A sample item's run protocol (plugin.protocol): other plugins see pytest's own hook sequence.

Real pytest sessions (pytester) on the toy suite of ``test_plugin``: a recording plugin on the
controller logs every run-test hook, with and without xdist, and JUnit XML is compared between
the two. In an xdist worker a sample item sends its call report alone (the controller replays
the rest), which a recorder inside the workers checks.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.test_plugin import run, toy  # noqa: F401 - the toy suite's fixture

RECORDER = """
import json, os

def _log(config, event):
    where = "worker" if hasattr(config, "workerinput") else "controller"
    with open(os.path.join(str(config.rootpath), f"events-{where}-{os.getpid()}.jsonl"), "a") as fh:
        fh.write(json.dumps(event) + "\\n")

def pytest_configure(config):
    global CONFIG
    CONFIG = config

def pytest_runtest_logstart(nodeid, location):
    _log(CONFIG, ["logstart", nodeid])

def pytest_runtest_logreport(report):
    _log(CONFIG, [report.when, report.nodeid, report.outcome])

def pytest_runtest_logfinish(nodeid, location):
    _log(CONFIG, ["logfinish", nodeid])
"""

OUTCOMES = {
    "toy/add sample[right]": "passed",
    "toy/add sample[off-by-one]": "failed",
    "toy/add sample[raises]": "failed",
    "toy/add sample[loops]": "failed",
    "toy/halve sample[0]": "passed",
    "toy/halve sample[1]": "failed",
}


def events(root: Path, where: str) -> list[list[str]]:
    found = []
    for path in sorted(root.glob(f"events-{where}-*.jsonl")):
        found += [json.loads(line) for line in path.read_text().splitlines()]
    return found


def short(nodeid: str) -> str:
    """``out/suite/problems/test_toy_add.py::sample[right]`` -> ``toy/add sample[right]``."""
    path, _, name = nodeid.partition("::")
    return f"toy/{path.rsplit('test_toy_', 1)[1].removesuffix('.py')} {name}"


def junit_cases(path: Path) -> dict[str, str]:
    """The outcome of each test case in a JUnit XML file, by short name."""
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        module = str(case.get("classname")).replace(".", "/") + ".py"
        cases[short(f"{module}::{case.get('name')}")] = "failed" if failed else "passed"
    return cases


@pytest.mark.parametrize("workers", ["0", "2"])
def test_every_sample_item_gives_pytests_hook_sequence(
    pytester: pytest.Pytester,
    toy: dict[str, Path],  # noqa: F811
    workers: str,
) -> None:
    pytester.makeconftest(RECORDER)
    junit = pytester.path / "junit.xml"
    result = run(pytester, toy, "-n", workers, f"--junitxml={junit}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*4 failed, 2 passed*"])
    seen = events(pytester.path, "controller")
    assert len(seen) == 5 * len(OUTCOMES)
    # Each item's five hooks come together, in pytest's order, whatever the worker.
    for start in range(0, len(seen), 5):
        nodeid = seen[start][1]
        expected = [
            ["logstart", nodeid],
            ["setup", nodeid, "passed"],
            ["call", nodeid, OUTCOMES[short(nodeid)]],
            ["teardown", nodeid, "passed"],
            ["logfinish", nodeid],
        ]
        assert seen[start : start + 5] == expected
    assert sorted(short(e[1]) for e in seen if e[0] == "call") == sorted(OUTCOMES)
    assert junit_cases(junit) == OUTCOMES  # the same file with and without workers
    if workers == "2":
        # A worker sends a sample item's call report alone: one message instead of five.
        in_workers = events(pytester.path, "worker")
        assert sorted(e[0] for e in in_workers) == ["call"] * len(OUTCOMES)


def test_maxfail_stops_after_the_first_failed_sample(
    pytester: pytest.Pytester,
    toy: dict[str, Path],  # noqa: F811
) -> None:
    pytester.makeconftest(RECORDER)
    result = run(pytester, toy, "-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    calls = [e for e in events(pytester.path, "controller") if e[0] == "call"]
    assert [e[2] for e in calls][-1] == "failed"
    assert sum(e[2] == "failed" for e in calls) == 1
    assert len(calls) < len(OUTCOMES)


MARKS = """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if "halve" in item.nodeid:
            item.add_marker(pytest.mark.xfail(reason="known defect", strict=False))
        elif item.nodeid.endswith("[raises]"):
            item.add_marker(pytest.mark.skip(reason="not today"))
"""


@pytest.mark.parametrize("workers", ["0", "2"])
def test_skip_and_xfail_marks_are_honoured(
    pytester: pytest.Pytester,
    toy: dict[str, Path],  # noqa: F811
    workers: str,
) -> None:
    # A problem's data defect is an xfail mark on its generated module: its samples are
    # xfailed or xpassed, never failures, and a skip mark skips the sample.
    pytester.makeconftest(MARKS)
    result = run(pytester, toy, "-n", workers, "-rsxX")
    result.assert_outcomes(passed=1, failed=2, skipped=1, xfailed=1, xpassed=1)
    # (Under xdist a skip's location travels as JSON: the summary needs it back as a tuple.)
    result.stdout.fnmatch_lines(["SKIPPED*not today*", "XFAIL*halve*sample?1?*known defect*"])


PHASE_HOOK = """
import os

def pytest_runtest_setup(item):
    with open(os.path.join(str(item.config.rootpath), f"setup-{os.getpid()}.txt"), "a") as fh:
        fh.write(item.nodeid + "\\n")
"""


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_conftests_phase_hooks_fire_for_every_sample(
    pytester: pytest.Pytester,
    toy: dict[str, Path],  # noqa: F811
    workers: str,
) -> None:
    # A hook the lean protocol would leave out (pytest_runtest_setup, here in a conftest):
    # pytest's runner runs the items, so it fires for each.
    pytester.makeconftest(PHASE_HOOK)
    result = run(pytester, toy, "-n", workers)
    result.assert_outcomes(passed=2, failed=4)
    seen = [line for p in pytester.path.glob("setup-*.txt") for line in p.read_text().split()]
    assert sorted(short(nodeid) for nodeid in seen) == sorted(OUTCOMES)


PROPERTY_RECORDER = """
import json, os

def pytest_configure(config):
    global CONFIG
    CONFIG = config

def pytest_runtest_logreport(report):
    if report.when == "call" and not hasattr(CONFIG, "workerinput"):
        names = [name for name, _ in report.user_properties]
        with open(os.path.join(str(CONFIG.rootpath), "properties.jsonl"), "a") as fh:
            fh.write(json.dumps([report.nodeid, names]) + "\\n")
"""


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_judged_samples_verdicts_travel_once_as_its_row(
    pytester: pytest.Pytester,
    toy: dict[str, Path],  # noqa: F811
    workers: str,
) -> None:
    # Its row carries every verdict: the same verdicts kept as report properties too would be
    # encoded in the worker and decoded by the controller twice for each sample.
    pytester.makeconftest(PROPERTY_RECORDER)
    result = run(pytester, toy, "-n", workers)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    lines = (pytester.path / "properties.jsonl").read_text().splitlines()
    seen = {short(nodeid): names for nodeid, names in map(json.loads, lines)}
    assert seen == {name: [] for name in OUTCOMES}
    rows = [json.loads(line) for line in (toy["out"] / "results.jsonl").read_text().splitlines()]
    assert sorted(row["status"] for row in rows) == sorted(
        ["passed", "failed", "failed", "timeout", "passed", "failed"]
    )
    assert all(row["cases"] for row in rows)
