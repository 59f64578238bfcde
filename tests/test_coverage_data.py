"""Coverage from the sandbox's arc tracer equals coverage.py's own report on the same run."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings

PROGRAMS = {
    "branches": """
        def f(x):
            if x > 0:
                return 1
            elif x < -10:
                return 2
            return 3
        """,
    "loops": """
        def f(x):
            total = 0
            for i in range(x):
                if i % 2:
                    total += i
            while total > 100:
                total -= 100
            return total
        """,
    "exceptions_and_generators": """
        def gen(n):
            for i in range(n):
                yield i * 2

        def f(x):
            try:
                values = list(gen(x))
                return values[5]
            except IndexError:
                return -1
            finally:
                pass
        """,
    "comprehension_and_lambda": """
        import math

        def f(x):
            key = lambda v: -v
            squares = sorted((i * i for i in range(x) if i != 3), key=key)
            return [math.isqrt(s) for s in squares][:2] or None
        """,
}
CALLS = ("candidate(3)", "candidate(-1)")


def coverage_py(program: str, tmp_path: Path) -> dict:
    """What coverage.py itself reports for the program run on the same calls."""
    path = tmp_path / "solution.py"
    path.write_text(program)
    driver = textwrap.dedent(
        f"""
        import coverage, json, runpy
        cov = coverage.Coverage(data_file=None, branch=True, include=[{str(path)!r}])
        cov.start()
        ns = runpy.run_path({str(path)!r})
        candidate = ns["f"]
        {"; ".join(CALLS)}
        cov.stop()
        a = cov._analyze({str(path)!r})
        n = a.numbers
        print(json.dumps({{"statements": sorted(a.statements), "executed": sorted(a.executed),
                          "branches": n.n_branches, "partial": n.n_partial_branches,
                          "missing_branches": n.n_missing_branches}}))
        """
    )
    out = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(SandboxSettings()) as box:
        yield box


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_tracer_coverage_matches_coverage_py(name: str, sandbox: Sandbox, tmp_path: Path) -> None:
    program = textwrap.dedent(PROGRAMS[name]).lstrip()
    request = SampleRequest(
        program=program,
        entry_point="f",
        cases=tuple(
            CaseRequest(f"case_{i}", "compare", calls=(call,), timeout_s=5.0)
            for i, call in enumerate(CALLS)
        ),
        coverage=True,
    )
    ours = sandbox.run(request).coverage
    theirs = coverage_py(program, tmp_path)
    assert ours is not None
    assert ours["statements"] == theirs["statements"]
    assert ours["executed"] == theirs["executed"]
    assert ours["branches"] == theirs["branches"]
    assert ours["partial_branches"] == theirs["partial"]
    expected_rate = (
        (theirs["branches"] - theirs["missing_branches"]) / theirs["branches"]
        if theirs["branches"]
        else 1.0
    )
    assert ours["branch_rate"] == pytest.approx(expected_rate)
