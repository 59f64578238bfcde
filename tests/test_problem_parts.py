"""A problem's compiled parts: built on the trusted side, kept on disk, run by the server as sent."""

from __future__ import annotations

import marshal
from pathlib import Path

import pytest

from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings
from harness.sandbox import sandbox as sandbox_module
from harness.sandbox.problem_parts import cache_file, problem_parts
from harness.sandbox.server_files import server_module


def _definition(calls: list[str], setup: str = "") -> dict:
    return {
        "entry_point": "f",
        "test_setup": setup,
        "helpers": "",
        "deps_path": "",
        "cases": [{"mode": "compare", "prelude": "", "calls": [c], "statement": ""} for c in calls],
    }


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path))
    return tmp_path / "inputs"


def test_a_problems_parts_are_compiled_once_then_read_from_the_cache(cache: Path) -> None:
    built = []

    def definition() -> dict:
        built.append(1)
        return _definition(["candidate(1)", "candidate(2)"])

    first = problem_parts("k" * 32, definition)
    assert built == [1]
    assert [p.name.split("-")[0] for p in cache.iterdir()] == ["k" * 32]
    assert problem_parts("k" * 32, definition) == first
    assert built == [1]  # read back, not built again
    child = marshal.loads(first[0])
    assert [case["calls_code"][0].co_names for case in child["cases"]] == [("candidate",)] * 2
    assert first[1] == b""  # no sandbox-mode case: no judge part


def test_a_broken_cache_file_is_built_again(cache: Path) -> None:
    good = problem_parts("b" * 32, lambda: _definition(["candidate(3)"]))
    (path,) = cache.iterdir()
    for broken in (b"", b"not marshal", marshal.dumps(("one",)), marshal.dumps([b"", b""])):
        path.write_bytes(broken)
        assert problem_parts("b" * 32, lambda: _definition(["candidate(3)"])) == good
        assert marshal.loads(path.read_bytes()) == good


def test_code_that_does_not_compile_is_left_as_source_for_the_child() -> None:
    child, _ = server_module("problem_code").compiled_parts(_definition(["candidate(", "f(1)"]))
    cases = marshal.loads(child)["cases"]
    assert cases[0]["calls"] == ["candidate("] and cases[0]["calls_code"] == [None]
    assert cases[1]["calls"] == [""] and cases[1]["calls_code"][0] is not None


def test_the_server_runs_the_parts_it_is_sent_and_compiles_nothing(cache: Path) -> None:
    """The server holds only a problem's compiled parts: with the cached parts of another
    input put in their place, the sample runs that input (no server compiles the source)."""
    case = CaseRequest("c0", "compare", calls=("candidate(1)",), timeout_s=5.0)
    request = SampleRequest("def f(x):\n    return x * 10\n", "f", (case,))
    key = sandbox_module._problem_key("f", "", request.cases)
    swapped = server_module("problem_code").compiled_parts(_definition(["candidate(7)"]))
    cache.mkdir(parents=True)
    cache_file(key).write_bytes(marshal.dumps(swapped))
    with Sandbox(SandboxSettings()) as sandbox:
        assert sandbox.run(request).cases["c0"].values == [70]
    cache_file(key).unlink()
    with Sandbox(SandboxSettings()) as sandbox:
        assert sandbox.run(request).cases["c0"].values == [10]
    assert cache_file(key).exists()  # built by the trusted side, kept


def test_a_sandbox_mode_problem_sends_the_judge_its_part(cache: Path) -> None:
    """A problem with sandbox-mode checks: its judge part travels after the child's."""
    cases = (
        CaseRequest("c0", "compare", calls=("candidate(2)",), timeout_s=5.0),
        CaseRequest("c1", "sandbox", statement="assert candidate(3) == 30", timeout_s=5.0),
        CaseRequest("c2", "sandbox", statement="assert candidate(3) == 31", timeout_s=5.0),
    )
    request = SampleRequest("def f(x):\n    return x * 10\n", "f", cases)
    with Sandbox(SandboxSettings()) as sandbox:
        result = sandbox.run(request)
    assert result.cases["c0"].values == [20]
    assert result.cases["c1"].status == "ok"
    assert result.cases["c2"].status == "assertion"
