"""Sample reports travel from local xdist workers in batches (plugin.batch), in real sessions.

The controller serves every worker, so what it does per sample bounds a run: a worker sends
its sample items' reports as a few messages, the controller reports them as pytest would, a
worker that dies is blamed for the item it was running (its slot), and workers do without
the plugins a generated suite never uses (plugin.startup).
"""

from __future__ import annotations

import json
import os
import re
import threading
from importlib.metadata import entry_points
from io import StringIO
from types import SimpleNamespace
from typing import Any

import pytest
from _pytest.terminal import TerminalReporter
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin.batch import MARK, LeanReporting, WorkerBatcher

PROBLEM = {
    "task_id": "toy/add",
    "prompt": 'def add(a, b):\n    """Return a + b."""\n',
    "entry_point": "add",
    "canonical_solution": "    return a + b\n",
    "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n",
}
RIGHT = "    return a + b\n"
WRONG = "    return a - b\n"

# Loaded with -p in the controller and the workers: counts the messages the controller takes
# from its workers, by kind, and writes them out at the end.
COUNTER = """
import json, os
from xdist.workermanage import WorkerController

counts = {}
_original = WorkerController.process_from_remote
_notify = WorkerController.notify_inproc


def _counted(self, eventcall):
    if isinstance(eventcall, tuple):
        counts[eventcall[0]] = counts.get(eventcall[0], 0) + 1
    return _original(self, eventcall)


def _formatted(self, eventname, **kwargs):  # xdist's own: it formats its debug line first
    counts["debug lines"] = counts.get("debug lines", 0) + 1
    return _notify(self, eventname, **kwargs)


def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        WorkerController.process_from_remote = _counted
        WorkerController.notify_inproc = _formatted


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        with open(os.environ["MESSAGE_COUNTS"], "w") as fh:
            json.dump(counts, fh)
"""


def evaluate(
    pytester: pytest.Pytester, samples: list[dict], *extra: str, out: str = "out"
) -> tuple[pytest.RunResult, dict[str, dict]]:
    suite = pytester.path / "problems.jsonl"
    suite.write_text(json.dumps(PROBLEM) + "\n")
    path = pytester.path / f"{out}-samples.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    result = pytester.runpytest_subprocess(
        "--llm-eval", f"jsonl:{suite}", "--llm-samples", str(path), "--llm-out", out,
        "-p", "no:codeeval_gate", "-p", "no:cacheprovider", *extra, timeout=240,
    )  # fmt: skip
    results = pytester.path / out / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    return result, {row["sample_id"]: row for row in rows}


def samples(n: int, wrong_every: int = 3) -> list[dict]:
    """``n`` samples; every ``wrong_every``-th is wrong (0: none)."""
    return [
        {
            "task_id": "toy/add",
            "sample_id": str(i),
            "completion": WRONG if wrong_every and i % wrong_every == 0 else RIGHT,
        }
        for i in range(n)
    ]


def timing_free(rows: dict[str, dict]) -> dict[str, dict]:
    kept = {}
    for key, row in rows.items():
        row = {k: v for k, v in row.items() if k not in ("duration_s", "execution")}
        row["cases"] = [{k: v for k, v in c.items() if k != "duration_s"} for c in row["cases"]]
        kept[key] = row
    return kept


def progress(result: pytest.RunResult) -> str:
    """The progress letters pytest wrote (-n 0 puts the module's path before the first)."""
    found = (re.search(r"(?:^|\s)([.FEsx]+)\s*\[\s*\d+%\]$", ln) for ln in result.stdout.lines)
    return "".join(m.group(1) for m in found if m)


@pytest.mark.timeout(300)
def test_sample_reports_come_in_batches_with_the_same_rows_and_output(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One report and one completion per sample made the controller's work per sample
    # (0.6 ms of its CPU on HumanEval) the ceiling of every run, whatever the workers.
    pytester.makepyfile(counter=COUNTER)
    counts_file = pytester.path / "counts.json"
    monkeypatch.setenv("MESSAGE_COUNTS", str(counts_file))
    path = os.pathsep.join(filter(None, [str(pytester.path), os.environ.get("PYTHONPATH")]))
    monkeypatch.setenv("PYTHONPATH", path)
    batch = samples(90)
    alone, one = evaluate(pytester, batch, "-n", "0", out="one")
    spread, two = evaluate(pytester, batch, "-n", "2", "-p", "counter", out="two")
    assert alone.ret == spread.ret == pytest.ExitCode.TESTS_FAILED, spread.stdout.str()[-2000:]
    assert timing_free(one) == timing_free(two)
    counts = json.loads(counts_file.read_text())
    assert counts.get("testreport", 0) == 0, counts  # every sample's report came in a batch
    assert counts.get("logstart", 0) == 0, counts
    assert counts["runtest_protocol_complete"] < 90 / 4, counts
    # plugin.queueing: no message was formatted into xdist's debug line, off without --debug
    assert counts.get("debug lines", 0) == 0, counts
    # The terminal shows what pytest shows for these items: a letter per sample, in the
    # order they were reported (-n 0: the samples' order), and the same counts.
    assert sorted(progress(spread)) == sorted(progress(alone))
    assert len(progress(spread)) == 90
    assert spread.parseoutcomes() == alone.parseoutcomes() == {"failed": 30, "passed": 60}


@pytest.mark.timeout(300)
def test_with_debug_on_xdist_writes_its_own_lines(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--debug`` turns xdist's debug lines on: then each message is queued as xdist queues
    it, its line formatted and written (plugin.queueing leaves them alone)."""
    pytester.makepyfile(counter=COUNTER)
    counts_file = pytester.path / "counts.json"
    monkeypatch.setenv("MESSAGE_COUNTS", str(counts_file))
    path = os.pathsep.join(filter(None, [str(pytester.path), os.environ.get("PYTHONPATH")]))
    monkeypatch.setenv("PYTHONPATH", path)
    result, rows = evaluate(pytester, samples(4), "-n", "2", "-p", "counter", "--debug")
    assert result.ret == pytest.ExitCode.TESTS_FAILED and len(rows) == 4
    counts = json.loads(counts_file.read_text())
    assert counts["debug lines"] >= counts["runtest_protocol_complete"] > 0, counts
    assert "queuing runtest_protocol_complete" in result.stderr.str()


@pytest.mark.timeout(300)
def test_junit_xml_gets_every_phase_of_batched_samples(pytester: pytest.Pytester) -> None:
    # JUnit XML is not one of the plugins a lone call report is enough for: it still gets the
    # setup, call and teardown reports of every sample, as without batches.
    batch = samples(40)
    evaluate(pytester, batch, "-n", "0", "--junitxml=one.xml", out="one")
    evaluate(pytester, batch, "-n", "2", "--junitxml=two.xml", out="two")

    def cases(name: str) -> list[tuple[str, str]]:
        text = (pytester.path / name).read_text()
        found = re.findall(
            r'<testcase classname="[^"]*" name="(sample\[\d+\])"[^>]*?(/>|>\s*<(\w+))', text
        )
        return sorted((case, kind or "passed") for case, _, kind in found)

    assert cases("one.xml") == cases("two.xml")
    assert len(cases("two.xml")) == 40
    assert sum(kind == "failure" for _, kind in cases("two.xml")) == 14


@pytest.mark.timeout(300)
def test_a_sample_that_kills_its_worker_with_reports_waiting_is_blamed_alone(
    pytester: pytest.Pytester,
) -> None:
    # Its worker held the reports of the samples judged before it (a batch not sent yet):
    # the item it was running is blamed, those others are judged again, each keeps one row.
    pytester.makeconftest(
        """
import os


def pytest_runtest_makereport(item, call):
    if item.name == "sample[killer]" and call.when == "call":
        os._exit(3)  # the worker dies while this sample item runs (no phase hook: lean)
"""
    )
    batch = samples(50, wrong_every=0)
    batch.insert(30, {"task_id": "toy/add", "sample_id": "killer", "completion": RIGHT})
    result, rows = evaluate(pytester, batch, "-n", "1")
    assert sorted(rows) == sorted(s["sample_id"] for s in batch)
    assert rows["killer"]["status"] == "failed"
    assert "crashed while running" in rows["killer"]["cases"][0]["message"]
    assert all(row["status"] == "passed" for key, row in rows.items() if key != "killer")
    assert result.stdout.str().count("replacing crashed worker") == 1, result.stdout.str()[-3000:]


@pytest.mark.timeout(300)
def test_workers_do_without_plugins_the_suite_never_uses(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # anyio's plugin imports its asyncio and trio backends: most of a worker's start-up.
    plugins = {ep.name for ep in entry_points(group="pytest11")}
    installed = {name for name in ("anyio", "benchmark") if name in plugins}
    if not installed:
        pytest.skip("neither anyio's nor pytest-benchmark's plugin is installed")
    pytester.makeconftest(
        """
import json, os


def pytest_configure(config):
    where = config.workerinput["workerid"] if hasattr(config, "workerinput") else "controller"
    names = [n for n in ("anyio", "benchmark") if config.pluginmanager.get_plugin(n) is not None]
    with open(os.path.join(os.environ["PLUGIN_LOG"], where + ".json"), "w") as fh:
        json.dump(names, fh)
"""
    )
    log = pytester.mkdir("plugins")
    monkeypatch.setenv("PLUGIN_LOG", str(log))
    result, _ = evaluate(pytester, samples(4, wrong_every=0), "-n", "2")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    loaded = {p.stem: set(json.loads(p.read_text())) for p in log.glob("*.json")}
    assert loaded["controller"] == installed
    assert loaded["gw0"] == loaded["gw1"] == set()
    if "benchmark" in installed:  # a run that sets one of its options keeps it everywhere
        for p in log.glob("*.json"):
            p.unlink()
        extra = ("-n", "2", "--benchmark-disable")
        result, _ = evaluate(pytester, samples(4, wrong_every=0), *extra, out="kept")
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
        assert "benchmark" in set(json.loads((log / "gw0.json").read_text()))


# -- the worker's side, with xdist's interactor simulated --------------------------------------
class Queue:
    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def lock(self) -> Any:
        items = self.items

        class Held:
            def __enter__(self) -> list[Any]:
                return items

            def __exit__(self, *exc: object) -> None:
                return None

        return Held()


class Interactor:
    """xdist's WorkerInteractor as the batcher sees it."""

    def __init__(self, queued: int) -> None:
        self.workerid, self.testrunuid = "gw0", "uid"
        self.torun = Queue(list(range(queued)))
        self.item_index = -1
        self.sent: list[tuple[str, dict]] = []

    def sendevent(self, name: str, **kwargs: Any) -> None:
        self.sent.append((name, kwargs))


class Report:
    def __init__(self) -> None:
        self.codeeval_replay = True
        self.codeeval_row = ["toy/add", "0", "{}"]


def batcher(tmp_path: Any, interactor: Interactor) -> WorkerBatcher:
    slot = tmp_path / "gw0.slot"
    slot.write_bytes(b"\xff" * 8)
    made = WorkerBatcher.__new__(WorkerBatcher)
    made.size, made.age_s = 4, 60.0
    made.interactor = interactor
    made.slot = bytearray(8)
    made.kept, made.rows, made.lean_row = [], [], None
    made.first_at, made.lean_index, made.kept_index = 0.0, None, None
    made.ids = ("gw0", "uid")
    made.lock = threading.Lock()
    made.send = interactor.sendevent
    return made


def run_item(made: WorkerBatcher, interactor: Interactor, index: int, lean: bool = True) -> None:
    interactor.item_index = index
    if interactor.torun.items:
        interactor.torun.items.pop(0)
    if lean:
        made.pytest_runtest_logreport(Report())  # type: ignore[arg-type]
    made.sendevent("testreport", data={"item_index": index, "codeeval_packed_report": "{}"})
    made.sendevent("runtest_protocol_complete", item_index=index, duration=0.1)


def test_a_worker_keeps_reports_until_a_batch_is_full_or_its_queue_runs_low(tmp_path: Any) -> None:
    interactor = Interactor(queued=40)
    made = batcher(tmp_path, interactor)
    for index in range(8):
        run_item(made, interactor, index)
    batches = [kw["item_index"] for name, kw in interactor.sent]
    assert [name for name, _ in interactor.sent] == ["runtest_protocol_complete"] * 2
    assert all(b[0] == MARK for b in batches)
    assert [json.loads(b[1])[0][0] for b in batches] == [0, 4]  # four items each
    assert [len(b[2]) for b in batches] == [4, 4]  # each with its rows
    # Another message sends what is kept first, so the controller sees everything in order.
    run_item(made, interactor, 8)
    made.sendevent("warning_recorded", message="x")
    assert [name for name, _ in interactor.sent[2:]] == [
        "runtest_protocol_complete",
        "warning_recorded",
    ]
    # Few items left to run: each report goes at once (the controller must hear to send more).
    interactor.torun.items[:] = [0, 1]
    run_item(made, interactor, 9)
    assert len(interactor.sent) == 5
    # An item run by pytest's own protocol reports as it always did.
    run_item(made, interactor, 10, lean=False)
    assert [name for name, _ in interactor.sent[5:]] == ["testreport", "runtest_protocol_complete"]


def reporter(config: pytest.Config, width: int, collected: int, prefix: str) -> TerminalReporter:
    """pytest's own terminal reporter, writing to a string, ``prefix`` already on its line."""
    made = TerminalReporter(config, StringIO())
    made._tw.fullwidth = made._screen_width = width
    made._session = SimpleNamespace(testscollected=collected)  # type: ignore[assignment]
    made._tw.write(prefix)
    return made


def call_report(index: int, outcome: str) -> pytest.TestReport:
    longrepr = ("x.py", 1, "Skipped: no") if outcome == "skipped" else None
    if outcome == "failed":
        longrepr = "assert 1 == 2"
    made = pytest.TestReport(
        f"x.py::sample[{index}]", ("x.py", 0, "x"), {}, outcome, longrepr, "call"
    )  # type: ignore[arg-type]
    made.node = "gw0"  # type: ignore[attr-defined] # as xdist sets it
    return made


def test_batched_progress_letters_are_what_pytest_writes_letter_by_letter(
    pytester: pytest.Pytester,
) -> None:
    # A batch's letters are written a run of one colour at a time, and the line's end is
    # checked only near the progress column; the terminal must read as pytest writes it.
    config = pytester.parseconfigure()

    @settings(max_examples=150, deadline=None)
    @given(
        outcomes=st.lists(
            st.sampled_from(["passed", "failed", "skipped"]), min_size=1, max_size=260
        ),
        width=st.integers(12, 140),
        prefix=st.text(alphabet="ab/.py ", max_size=30),
        cuts=st.lists(st.integers(1, 40), max_size=12),
        extra=st.integers(0, 3),
    )
    def check(outcomes: list[str], width: int, prefix: str, cuts: list[int], extra: int) -> None:
        collected = len(outcomes) + extra  # extra: items still to come (not the last one)
        reports = [call_report(i, outcome) for i, outcome in enumerate(outcomes)]
        pytests = reporter(config, width, collected, prefix)
        for report in reports:
            pytests.pytest_runtest_logreport(report)
        ours = reporter(config, width, collected, prefix)
        lean = LeanReporting.__new__(LeanReporting)
        lean.config, lean.terminal, lean.statuses = config, ours, {}
        start = 0
        for size in [*cuts, len(reports)]:
            lean._write(reports[start : start + size])
            start += size
        assert ours._tw._file.getvalue() == pytests._tw._file.getvalue()  # type: ignore[attr-defined]
        assert {k: len(v) for k, v in ours.stats.items()} == {
            k: len(v) for k, v in pytests.stats.items()
        }

    check()
