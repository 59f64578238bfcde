"""A candidate's address space holds its own program and inputs, nothing of anyone else's.

Each thief here searches its whole address space (every readable mapping in /proc/self/maps,
read with ctypes: no file, no other process) for what another sample, a hidden check or a
hidden test planted there: a sibling's correct program, which it then copies and runs; the
statement of a check only the judge runs; other tests' inputs; expected outputs; a special
judge's answer. Every candidate is forked from the zygote, which never holds a request
(docs/security.md, "What a candidate's memory holds"), so each finds nothing, in both sandbox
modes, through the sandbox, ``evaluate()``, ``pytest --llm-eval`` and ``codeeval serve``.
Before the zygote, every one of these found what it looked for.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from harness.evaluate import evaluate
from harness.records import Sample
from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings
from harness.stdio.problem import Checker, StdioTest, stdio_problem
from suites.registry import load_suite

# Every readable mapping of this process, searched with a regular expression whose own text
# never matches itself (a character class follows each marker's name).
SCANNER = r"""
def _memory_matches(pattern):
    import ctypes, re
    found = []
    for line in open("/proc/self/maps").read().splitlines():
        fields = line.split()
        if not fields[1].startswith("r") or "[v" in line:  # [vvar], [vsyscall]: not memory
            continue
        low, high = (int(x, 16) for x in fields[0].split("-"))
        if high - low > 1 << 30:
            continue
        found += re.findall(pattern, ctypes.string_at(low, high - low))
    return found
"""
# A sibling's right answer carries this tag; the thief finds the line, compiles it, runs it.
TAG = "SIBLING" + secrets.token_hex(4)
HONEST = f"    return x + y  # {TAG}\n"
THIEF = (
    "    global _stolen\n"
    "    if '_stolen' not in globals():\n"
    "        _stolen = None\n"
    + "".join("        " + line + "\n" for line in SCANNER.strip().splitlines())
    + "        lines = _memory_matches(rb'    return [^\\n]{1,80}  # SIB' rb'LING[0-9a-f]{8}')\n"
    "        for line in lines:\n"
    "            scope = {}\n"
    "            exec('def _copy(x, y):\\n' + line.decode(), scope)\n"
    "            _stolen = scope['_copy']\n"
    "    return _stolen(x, y) if _stolen else None\n"
)


def test_the_thief_copies_a_sibling_that_shares_its_memory() -> None:
    """The thief is real: in a process that also holds a sibling's program it passes."""
    script = (
        f"sibling = {('def add(x, y):' + chr(10) + HONEST)!r}\n"
        f"exec({('def add(x, y):' + chr(10) + THIEF)!r})\n"
        "print(add(2, 3))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.strip() == "5", done.stderr


@pytest.fixture(scope="module")
def sandbox(use_bwrap: bool):
    with Sandbox(SandboxSettings(use_bwrap=use_bwrap)) as box:
        yield box


def test_a_child_holds_no_earlier_program_and_no_check_it_does_not_run(sandbox: Sandbox) -> None:
    mark = secrets.token_hex(6)
    planter = SampleRequest(
        f"def f(x):\n    return 'PLANTED{mark}program'\n",
        "f",
        (
            CaseRequest("c1", "compare", calls=("candidate(1)",)),
            CaseRequest("c2", "sandbox", statement=f"assert candidate(0) == 'PLANTED{mark}check'"),
        ),
    )
    assert sandbox.run(planter).cases["c1"].status == "ok"
    thief = SampleRequest(
        SCANNER
        + f"\ndef f(x):\n    return sorted(set(_memory_matches(rb'PLANTED{mark}' rb'[a-z]+')))\n",
        "f",
        (
            CaseRequest("c1", "compare", calls=("candidate(1)",), timeout_s=30),
            # Its own hidden check: the judge runs it, the child never gets its text.
            CaseRequest(
                "c2",
                "sandbox",
                statement=f"assert candidate(0) == ['PLANTED{mark}hidden']",
                timeout_s=30,
            ),
        ),
        budget_s=60,
    )
    result = sandbox.run(thief)
    assert result.cases["c1"].status == "ok", result.cases["c1"]
    assert result.cases["c1"].values == [[]]
    assert result.cases["c2"].status == "assertion"  # it found nothing to answer with


# A stdio program that prints "clean" when its memory holds no other test's input and no
# expected output or special judge's answer; else what it found.
STDIO_THIEF = (
    SCANNER
    + r"""
import sys
own = sys.stdin.read().strip().encode()
found = set(_memory_matches(rb"QUE" rb"RY[0-9a-f]{16}")) - {own}
found |= set(_memory_matches(rb"SEC" rb"RET[0-9a-f]{16}"))
print("clean" if not found else b" ".join(sorted(found)).decode())
"""
)


def test_stdio_tests_and_a_special_judges_answer_stay_out_of_the_program(
    sandbox_mode: str, tmp_path: Path
) -> None:
    judge = "import sys\nsys.exit(0 if open(sys.argv[2]).read().split() == ['clean'] else 1)"
    # The expected outputs are never "clean": the judge alone decides, and its answer file
    # holds a secret too.
    tests = [
        StdioTest(f"QUERY{secrets.token_hex(8)}\n", f"SECRET{secrets.token_hex(8)}\n", hidden=i > 0)
        for i in range(4)
    ]
    problem = stdio_problem(
        "attack",
        "attack/memory",
        "x",
        tests,
        checker=Checker("special", judge_source=judge),
        time_limit_s=20,
    )
    sample = Sample(problem.task_id, f"```python\n{STDIO_THIEF}\n```", "thief")
    (row,) = evaluate([problem], [sample], reward="binary", out_dir=tmp_path, every_case=True)
    assert [c["status"] for c in row["cases"]] == ["passed"] * 4, row["cases"]


def _samples(n: int) -> list[tuple[str, str]]:
    """Honest siblings first, then thieves (the order a worker runs them in)."""
    return [(f"honest{i}", HONEST) for i in range(n)] + [(f"thief{i}", THIEF) for i in range(n)]


def test_evaluate_gives_a_thief_nothing_to_copy(sandbox_mode: str, tmp_path: Path) -> None:
    problems = load_suite("humaneval", split="test[53:54]")
    samples = [Sample("HumanEval/53", code, name) for name, code in _samples(3)]
    rows = evaluate(problems, samples, out_dir=tmp_path, timeout_s=30)
    passed = {row["sample_id"]: row["passed"] for row in rows}
    assert passed == {name: name.startswith("honest") for name, _ in _samples(3)}


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_pytest_session_gives_a_thief_nothing_to_copy(
    sandbox_mode: str, workers: str, pytester: pytest.Pytester
) -> None:
    samples = pytester.path / "samples.jsonl"
    samples.write_text(
        "".join(
            json.dumps({"task_id": "HumanEval/53", "sample_id": name, "completion": code}) + "\n"
            for name, code in _samples(4)
        )
    )
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess(
        "--llm-eval", "humaneval", "--llm-split", "test[53:54]", "--llm-samples", str(samples),
        "--llm-out", str(out), "--llm-timeout", "30", "-n", workers,
        "-p", "no:codeeval_gate", "-p", "no:cacheprovider",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {r["sample_id"]: r["passed"] for r in rows} == {
        name: name.startswith("honest") for name, _ in _samples(4)
    }


def test_codeeval_serve_gives_a_thief_nothing_from_an_earlier_request(sandbox_mode: str) -> None:
    from harness.service.client import RewardClient
    from harness.service.server import ServeSettings, serve_in_thread

    honest = {"task_id": "HumanEval/53", "completion": HONEST}
    thief = {"task_id": "HumanEval/53", "completion": THIEF}
    with serve_in_thread(ServeSettings(workers=1)) as (url, _), RewardClient(url) as client:
        assert [r["passed"] for r in client.score([honest, honest])] == [True, True]
        rows = client.score([thief])
    assert rows[0]["passed"] is False, rows[0]["cases"]
