"""Reference calibration in the real sandbox: caches that cannot poison later runs, and
references that fail or pass only by chance reported as data defects (never scored).

Every test gets its own ``$CODEEVAL_CACHE``; nothing here is mocked: the references run in the
same sandbox the samples do.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.pipeline.calibration import (
    CACHE_FORMAT,
    SEEDS,
    cache_folder,
    calibrate,
    calibration_key,
    calibration_request,
    entry_path,
    judge_runs,
    read_entries,
    sandbox_key,
    write_entries,
)
from harness.pipeline.timeouts import prepare_problems, reference_durations
from harness.records import CheckCase, Problem, Sample
from harness.sandbox import (
    CaseExecution,
    SampleExecution,
    SampleRequest,
    Sandbox,
    SandboxSettings,
)

SOUND = Problem(
    suite="toy",
    task_id="toy/sound",
    prompt="",
    entry_point="f",
    reference="def f(x):\n    return x + 1\n",
    test_setup="def expected(x):\n    return x + 1\n",
    cases=(
        CheckCase("case_0", "assert f(1) == 2", "compare", calls=("candidate(1)",), check="assert v[0] == 2"),
        # prelude and test setup are trusted: the check runs over them, as the generated test does
        CheckCase(
            "case_1", "n = 4\nassert f(n) == expected(n)", "compare", prelude="n = 4",
            calls=("candidate(n)",), check="assert v[0] == expected(n)",
        ),
        CheckCase("case_2", "assert f(0) > 0", "sandbox", statement="assert candidate(0) > 0"),
    ),
)  # fmt: skip

# The sandbox child seeds ``random`` before the program runs; random.random() after seed(s) is
# 0.844, 0.134, 0.956, 0.238, 0.236 for s = 0..4, so this reference passes with seeds 1, 3, 4
# and fails with 0 and 2 (the seed every sample runs with is 0).
FLAKY = Problem(
    suite="toy",
    task_id="toy/coin",
    prompt="",
    entry_point="coin",
    reference="import random\n\n\ndef coin():\n    return random.random() < 0.5\n",
    cases=(
        CheckCase(
            "case_0", "assert coin() is True", "compare",
            calls=("candidate()",), check="assert v[0] is True",
        ),
    ),
)  # fmt: skip

# The child returns 2 (status "ok"): only the trusted check sees that the reference is wrong.
WRONG = dataclasses.replace(
    SOUND, task_id="toy/wrong", reference="def f(x):\n    return x + 2\n", test_setup=""
)
WRONG = dataclasses.replace(WRONG, cases=WRONG.cases[:1])


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private ``$CODEEVAL_CACHE`` per test."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("CODEEVAL_CACHE", str(folder))
    return folder


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(SandboxSettings()) as box:
        yield box


def stored(cache: Path) -> dict:
    """Every entry in the cache folder, by key."""
    files = sorted(cache_folder().glob("*.json")) if cache_folder().is_dir() else []
    return {data["key"]: data["entry"] for data in (json.loads(f.read_text()) for f in files)}


def store(key: str, entry: dict) -> None:
    entry_path(key).write_text(json.dumps({"format": CACHE_FORMAT, "key": key, "entry": entry}))


# -- (a) what is stored, and what is trusted ---------------------------------------------------
def test_a_sound_reference_is_run_with_every_seed_and_its_median_cached(
    sandbox: Sandbox, cache: Path
) -> None:
    [timed] = prepare_problems([SOUND], sandbox)
    assert timed.defects == ()
    durations = timed.metadata["reference_durations"]
    assert set(durations) == {"case_0", "case_1", "case_2"}
    assert all(d > 0 for d in durations.values())
    [entry] = stored(cache).values()
    assert entry["seeds"] == entry["passed"] == list(SEEDS) and len(SEEDS) >= 5
    assert entry["durations"] == durations

    # A later run takes the stored timings as they are (here made slow, so the limits show it).
    key = sandbox_key(SOUND, sandbox, coverage=False)
    entry["durations"] = {"case_0": 0.25, "case_1": 0.5, "case_2": 0.001}
    store(key, entry)
    [again] = prepare_problems([SOUND], sandbox)
    assert [c.timeout_s for c in again.cases] == [2.5, 5.0, 1.0]


def test_a_poisoned_cache_is_not_trusted(sandbox: Sandbox, cache: Path) -> None:
    """Zeros from a broken run (the old files, an old format under the entry's name, zeros or
    missing cases under the right key, another key's entry) are measured again, never used."""
    zeros = {"case_0": 0.0, "case_1": 0.0, "case_2": 0.0}
    key = sandbox_key(SOUND, sandbox, coverage=False)
    cache.mkdir(parents=True)
    old = {SOUND.fingerprint(): zeros, SOUND.fingerprint() + ":coverage": zeros}
    (cache / "reference_durations.json").write_text(json.dumps(old))
    sound = {"seeds": list(SEEDS), "passed": list(SEEDS), "durations": {"case_0": 0.1}}
    (cache / "reference_calibration.json").write_text(  # format 2: every entry in one file
        json.dumps({"format": 2, "entries": {key: {**sound, "durations": zeros}}})
    )
    cache_folder().mkdir()
    for poisoned in (
        old,  # an old format under the entry's name
        {"format": 2, "entries": {key: {**sound, "durations": zeros}}},
        {"format": CACHE_FORMAT, "key": key, "entry": {**sound, "durations": zeros, "failure": ""}},
        {"format": CACHE_FORMAT, "key": key, "entry": sound},  # not every case
        {"format": CACHE_FORMAT, "key": "another", "entry": {**sound, "durations": zeros}},
        "not json {",
    ):
        text = poisoned if isinstance(poisoned, str) else json.dumps(poisoned)
        entry_path(key).write_text(text)
        durations = reference_durations([SOUND], sandbox)[SOUND.task_id]
        assert set(durations) == set(zeros) and all(d > 0 for d in durations.values())
        assert durations != {"case_0": 0.1}
    assert set(stored(cache)) == {key}


@pytest.mark.timeout(60)
def test_a_run_reads_only_its_own_problems_entries(cache: Path) -> None:
    """One file per key: reading a key opens its file only, and writers of other keys (another
    run storing its problems meanwhile) lose nothing of each other's."""
    entry = {"seeds": list(SEEDS), "passed": list(SEEDS), "durations": {"case_0": 0.1}}
    write_entries({"a": entry})
    write_entries({"b": {**entry, "failure": "b's"}})
    # Another key's file that would block whoever opened it (a FIFO with no writer): never
    # opened, where a reader of the whole folder would hang here.
    os.mkfifo(entry_path("c"))
    assert read_entries(["a"]) == {"a": entry}
    assert read_entries(["b", "missing"]) == {"b": {**entry, "failure": "b's"}}
    assert read_entries([]) == {}
    assert len(list(cache_folder().iterdir())) == 3


def test_a_reference_that_fails_its_checks_is_a_defect_and_stores_nothing(
    sandbox: Sandbox, cache: Path
) -> None:
    [timed] = prepare_problems([WRONG], sandbox)
    assert timed.defects == (
        "reference fails its own checks: case_0: check failed: assert v[0] == 2",
    )
    assert timed.metadata["reference_durations"] == {}
    assert [c.timeout_s for c in timed.cases] == [10.0]  # unknown is not fast: 10 × the floor
    assert stored(cache) == {}
    assert reference_durations([WRONG], sandbox) == {WRONG.task_id: {}}

    raising = dataclasses.replace(WRONG, reference="def f(x):\n    raise ValueError(x)\n")
    [timed] = prepare_problems([raising], sandbox)
    assert timed.defects == ("reference fails its own checks: case_0: raised ValueError: 1",)
    assert stored(cache) == {}


def test_a_sandbox_that_cannot_start_stores_nothing_and_blames_no_reference(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An infrastructure error (here: bubblewrap asked for but not on PATH) proves nothing."""
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no bwrap to start
    with Sandbox(SandboxSettings(use_bwrap=True)) as broken:
        timed = prepare_problems([SOUND, WRONG], broken)
        assert broken.run(dataclasses.replace(_request(SOUND), seed=0)).infra_error
    assert [p.defects for p in timed] == [(), ()]
    assert [p.metadata["reference_durations"] for p in timed] == [{}, {}]
    assert stored(cache) == {}


def _request(problem: Problem) -> SampleRequest:
    return calibration_request(problem, False)


def test_the_store_conditions(sandbox: Sandbox) -> None:
    """Directly: a run with an infrastructure error (or a case the sandbox could not run) is left
    out and makes the verdict uncacheable; a flaky verdict that timed out is not cached."""
    request = _request(SOUND)
    good = [(s, sandbox.run(dataclasses.replace(request, seed=s))) for s in SEEDS]
    assert judge_runs(SOUND, good).cacheable

    infra = SampleExecution(cases={}, infra_error="the sandbox server died")
    error = SampleExecution(
        cases={c.case_id: CaseExecution(c.case_id, "error", message="sandbox failure") for c in SOUND.cases}
    )  # fmt: skip
    for bad in (infra, error):
        judged = judge_runs(SOUND, [*good[:4], (4, bad)])
        assert not judged.cacheable and judged.defect is None
        assert judged.seeds == (0, 1, 2, 3) and all(d > 0 for d in judged.durations.values())

    timeout = SampleExecution(
        cases={
            **good[4][1].cases,
            "case_0": CaseExecution("case_0", "timeout", message="timed out after 20 s"),
        }
    )
    judged = judge_runs(SOUND, [*good[:4], (4, timeout)])
    assert judged.defect and judged.defect.startswith("flaky reference: passed 4 of 5")
    assert not judged.cacheable


# -- (b) flaky references ----------------------------------------------------------------------
def test_a_flaky_reference_is_a_cached_data_defect(sandbox: Sandbox, cache: Path) -> None:
    [timed] = prepare_problems([FLAKY], sandbox)
    message = (
        "flaky reference: passed 3 of 5 runs with seeds 0, 1, 2, 3, 4; failed with seeds 0, 2: "
        "case_0: check failed: assert v[0] is True"
    )
    assert timed.defects == (message,)
    [(key, entry)] = stored(cache).items()
    assert key == sandbox_key(FLAKY, sandbox, coverage=False)
    assert entry["passed"] == [1, 3, 4]

    # A later run knows the verdict from the cache without running the reference again.
    entry["failure"] = "as stored"
    store(key, entry)
    [again] = prepare_problems([FLAKY], sandbox)
    assert again.defects == (message.rsplit(": case_0", 1)[0] + ": as stored",)


def test_a_flaky_reference_is_a_data_error_left_out_of_pass_at_k(
    tmp_path: Path, cache: Path
) -> None:
    from harness.evaluate import evaluate
    from harness.pipeline.results import summarize

    samples = [Sample(FLAKY.task_id, FLAKY.reference, "reference")]
    sound = [Sample(SOUND.task_id, SOUND.reference, "reference")]
    rows = evaluate([FLAKY, SOUND], samples + sound, out_dir=tmp_path / "out")
    flaky_row, sound_row = rows
    assert (flaky_row["status"], flaky_row["error_kind"]) == ("error", "data")
    assert sound_row["status"] == "passed"
    summary = summarize(rows, [1], {})
    assert summary["suites"]["toy"]["data_errors"] == 1
    assert summary["suites"]["toy"]["pass@1"] == 1.0  # the flaky problem is not counted
    [error] = summary["data_errors"]
    assert error["task_id"] == FLAKY.task_id and "flaky reference" in error["reason"]


# -- (c) the key -------------------------------------------------------------------------------
def test_the_key_holds_everything_that_changes_a_timing(sandbox: Sandbox, cache: Path) -> None:
    keys = {
        calibration_key(SOUND, coverage=c, bwrap=b, memory_mb=m)
        for c in (False, True)
        for b in (False, True)
        for m in (512, 1024)
    }
    assert len(keys) == 8
    assert calibration_key(SOUND, coverage=False, bwrap=True, memory_mb=1024) != calibration_key(
        FLAKY, coverage=False, bwrap=True, memory_mb=1024
    )
    with Sandbox(SandboxSettings(use_bwrap=not sandbox.uses_bwrap)) as other:
        assert sandbox_key(SOUND, other, coverage=False) != sandbox_key(
            SOUND, sandbox, coverage=False
        )

    # Measured with and without coverage: two entries, neither used for the other.
    calibrate([SOUND], sandbox, coverage=False)
    calibrate([SOUND], sandbox, coverage=True)
    assert set(stored(cache)) == {
        sandbox_key(SOUND, sandbox, coverage=False),
        sandbox_key(SOUND, sandbox, coverage=True),
    }


# -- (d) ClassEval 58 --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def classeval_58(shared_data: Path) -> Problem:
    from suites.classeval import load

    if not (shared_data / "ClassEval_data.json").is_file():
        pytest.skip("no ClassEval mirror")
    return {p.task_id: p for p in load(data_dir=shared_data)["test"]}["ClassEval_58"]


def test_classeval_58_is_listed_as_a_defect_by_name(classeval_58: Problem) -> None:
    assert any("unseeded randomness" in d for d in classeval_58.defects)


def test_calibration_alone_also_finds_classeval_58(classeval_58: Problem, sandbox: Sandbox) -> None:
    unlisted = dataclasses.replace(classeval_58, defects=())
    defect = calibrate([unlisted], sandbox)[unlisted.task_id].defect
    assert defect and defect.startswith("flaky reference: passed 4 of 5 runs")
