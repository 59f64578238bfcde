"""The sandbox probe runs beside a suite's preparation, and nothing runs in the sandbox before
it passed (harness.sandbox.probe's start_probe and ProbedFirst, used by prepare_suite).

Real fork servers: the probe fails for real when a standard-library module it imports is
hidden from the candidate.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from harness.pipeline.prepare import RunSettings, RunSetupError, prepare_suite
from harness.records import Sample
from harness.sandbox import CaseRequest, SampleRequest, SandboxSettings
from harness.sandbox import probe as probe_module
from harness.sandbox.probe import ProbedFirst, SandboxUnusable, check_sandbox, start_probe
from harness.sandbox.shared import shared_sandbox
from suites import load_suite

CSV_HIDDEN = (os.path.realpath(csv.__file__),)  # the probe imports csv: it fails


def _begins_counted(monkeypatch: pytest.MonkeyPatch) -> list[SandboxSettings]:
    """The settings of every probe begun from now on."""
    begun: list[SandboxSettings] = []
    real = probe_module._begin

    def counted(settings: SandboxSettings):  # type: ignore[no-untyped-def]
        begun.append(settings)
        return real(settings)

    monkeypatch.setattr(probe_module, "_begin", counted)
    return begun


def test_a_begun_probe_is_waited_for_not_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    begun = _begins_counted(monkeypatch)
    settings = SandboxSettings(hide_paths=(str(tmp_path),))  # settings no other test probed
    start_probe(settings)
    start_probe(settings)  # already running: not begun twice
    result = check_sandbox(settings)
    assert begun == [settings]
    assert {"csv", "sqlite3", "unittest"} <= set(result.modules)
    assert check_sandbox(settings) is result
    start_probe(settings)  # already known: nothing begins
    assert begun == [settings]


def test_a_begun_probe_that_fails_is_reported_by_check_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    begun = _begins_counted(monkeypatch)
    settings = SandboxSettings(hide_paths=(*CSV_HIDDEN, str(tmp_path)))
    start_probe(settings)
    with pytest.raises(SandboxUnusable, match="csv"):
        check_sandbox(settings)
    with pytest.raises(SandboxUnusable, match="csv"):  # the failure is kept, not probed again
        check_sandbox(settings)
    assert len(begun) == 1


def test_probed_first_runs_nothing_when_the_probe_failed(tmp_path: Path) -> None:
    settings = SandboxSettings(hide_paths=(*CSV_HIDDEN, str(tmp_path)))
    start_probe(settings)
    sandbox = ProbedFirst(shared_sandbox(settings), settings)
    case = CaseRequest("c", "compare", calls=("candidate()",), timeout_s=30.0)
    request = SampleRequest("def candidate():\n    return 1\n", "candidate", (case,), budget_s=30)
    with pytest.raises(SandboxUnusable, match="csv"):
        sandbox.run(request)
    with pytest.raises(SandboxUnusable, match="csv"):
        sandbox.submit(request)
    assert sandbox.settings == settings  # the rest is the sandbox's own


def test_prepare_suite_calibrates_nothing_in_a_sandbox_that_failed_its_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe runs while the suite is prepared, but a reference is timed (and its time
    cached) only in a sandbox seen to work."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("CODEEVAL_CACHE", str(cache))
    problem = next(p for p in load_suite("humaneval") if p.task_id == "HumanEval/53")
    sample = Sample("HumanEval/53", "    return x + y\n", "right")
    settings = RunSettings(hide_paths=CSV_HIDDEN)
    with pytest.raises(RunSetupError, match="csv") as info:
        prepare_suite([problem], [sample], tmp_path / "suite", settings)
    assert info.value.setting == "sandbox"
    assert not list(cache.rglob("*.json*")), "a reference was calibrated in a broken sandbox"
    # The same problem in a working sandbox is calibrated, and cached, in that cache.
    prepared = prepare_suite([problem], [sample], tmp_path / "suite", RunSettings())
    assert prepared.problems[0].task_id == "HumanEval/53"
    assert list(cache.rglob("*")), "the working sandbox's calibration was not cached"
