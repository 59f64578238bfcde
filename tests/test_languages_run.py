"""Compiled languages end to end: drivers, the sandboxed runner, the plugin, adversarial samples.

The fast tests use JavaScript (no compile step) and one C++ compile; the slow ones compile C++,
Java and Rust and run the whole fixture set through pytest with two workers.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.completions import assemble_program
from harness.languages import compile_cache
from harness.languages.registry import get_language
from harness.languages.runner import execute
from harness.languages.types import parse_type
from harness.records import CheckCase, Problem
from harness.sandbox import bwrap_available

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "languages"
sys.path.insert(0, str(FIXTURES))
import adversarial  # noqa: E402
import make_samples  # noqa: E402

TOOLS = {"js": "node", "cpp": "g++", "java": "javac", "rs": "rustc"}


def _needs(language: str) -> None:
    from shutil import which

    if which(TOOLS[language]) is None and not (
        language == "rs" and Path("~/.cargo/bin/rustc").expanduser().exists()
    ):
        pytest.skip(f"{TOOLS[language]} is not installed")


@pytest.fixture(scope="module")
def humaneval_js() -> dict[str, Problem]:
    from suites.registry import load_suite

    return {p.task_id: p for p in load_suite("humaneval-js")}


def _run(problem: Problem, completion: str, **kwargs: Any) -> Any:
    return execute(problem, assemble_program(problem, completion).program, **kwargs)


def test_js_fixture_values_come_back_decoded(humaneval_js: dict[str, Problem]) -> None:
    _needs("js")
    completion, _ = make_samples.solutions("js")["HumanEval/136"]
    execution = _run(humaneval_js["js/HumanEval/136"], completion)
    assert execution.infra_error is None
    assert all(c.status == "ok" for c in execution.cases.values())
    # tuple[Optional[int], Optional[int]]: a JS array with a null, decoded to a Python tuple.
    assert execution.cases["case_0"].values == [(None, 1)]


def test_js_one_crash_or_timeout_loses_no_other_case(humaneval_js: dict[str, Problem]) -> None:
    _needs("js")
    problem = humaneval_js["js/HumanEval/53"]  # add(x, y): cases (0,1) (1,0) (2,3) (5,7) (7,5)
    completion = (
        "  if (x === 1) process.exit(0);\n"
        "  if (x === 2) while (true) {}\n"
        "  if (x === 5) throw new RangeError('five');\n"
        "  return x + y;\n}\n"
    )
    execution = _run(problem, completion, timeout_override_s=0.5)
    statuses = {k: c.status for k, c in execution.cases.items()}
    assert statuses == {
        "case_0": "ok",
        "case_1": "crashed",
        "case_2": "timeout",
        "case_3": "raised",
        "case_4": "ok",
    }
    assert execution.cases["case_4"].values == [12]
    assert "exited with status 0" in execution.cases["case_1"].message
    assert execution.cases["case_3"].exception == {"type": "RangeError", "message": "five"}


def test_js_forged_frames_and_wrong_types_never_count(humaneval_js: dict[str, Problem]) -> None:
    _needs("js")
    problem = humaneval_js["js/HumanEval/53"]
    forged = adversarial.ADVERSARIAL["js"]["fake-frames"]
    execution = _run(problem, forged)
    assert all(c.status != "ok" or c.values == [0] for c in execution.cases.values())
    wrong_type = _run(problem, "  return String(x + y);\n}\n")
    case = wrong_type.cases["case_0"]
    assert case.status == "crashed" and "expected an int, got '1'" in case.message


def test_js_parse_errors_are_compile_errors(humaneval_js: dict[str, Problem]) -> None:
    """No separate ``node --check``: a run that never starts and shows node's own parse error
    is a compile error (the syntax part of a reward); anything thrown while running is not."""
    _needs("js")
    problem = humaneval_js["js/HumanEval/53"]
    broken = _run(problem, "  return (;\n}\n")
    assert {c.status for c in broken.cases.values()} == {"crashed"}
    message = broken.cases["case_0"].message
    assert (
        message.startswith("compile error: SyntaxError: Unexpected token") and "(line " in message
    )
    assert "compile failed" in broken.notes
    for runtime in (
        "  return x + y;\n}\nJSON.parse('{');\n",
        "  return x + y;\n}\nthrow new SyntaxError('thrown');\n",
        "  return x + y;\n}\nprocess.stderr.write('SyntaxError: forged\\n'); process.exit(1);\n",
    ):
        execution = _run(problem, runtime)
        assert all("compile error" not in c.message for c in execution.cases.values()), runtime
        assert "compile failed" not in execution.notes


def test_js_syntax_reward_comes_from_the_run(
    humaneval_js: dict[str, Problem], tmp_path: Path
) -> None:
    _needs("js")
    from harness.evaluate import evaluate
    from harness.records import Sample

    problem = humaneval_js["js/HumanEval/53"]
    bodies = {
        "ok": "  return x + y;\n}\n",
        "parse": "  return (;\n}\n",
        "thrown": "  return x + y;\n}\nJSON.parse('{');\n",
    }
    samples = [Sample(problem.task_id, body, name) for name, body in bodies.items()]
    rows = {
        r["sample_id"]: r for r in evaluate([problem], samples, reward="weighted", out_dir=tmp_path)
    }
    syntax = {name: row["analyzers"]["syntax"]["ok"] for name, row in rows.items()}
    assert syntax == {"ok": True, "parse": False, "thrown": True}
    assert rows["parse"]["reward_parts"]["syntax"] == 0.0 < rows["thrown"]["reward_parts"]["syntax"]
    assert rows["ok"]["status"] == "passed" and rows["thrown"]["status"] == "failed"


def test_compile_results_are_cached_by_source() -> None:
    _needs("cpp")
    from suites.registry import load_suite

    problem = {p.task_id: p for p in load_suite("humaneval-cpp")}["cpp/HumanEval/53"]
    completion = f"  return x + y; // {os.getpid()} {time.time()}\n}}\n"
    first = _run(problem, completion)
    second = _run(problem, completion)
    assert any(n.startswith("compile ") and "cached" not in n for n in first.notes)
    assert first.resources["compile_cpu_user_s"] > 0
    assert "compile cached" in second.notes and second.resources["compile_cpu_user_s"] == 0
    assert all(c.status == "ok" for c in second.cases.values())
    broken = _run(problem, "  return (;\n}\n")
    assert {c.status for c in broken.cases.values()} == {"crashed"}
    assert "compile error" in broken.cases["case_0"].message


def test_completions_become_programs(humaneval_js: dict[str, Problem]) -> None:
    problem = humaneval_js["js/HumanEval/53"]
    markdown = "Sure:\n```javascript\nfunction add(x, y) {\n  return x + y;\n}\n```\n"
    assembled = assemble_program(problem, markdown)
    assert assembled.kind == "markdown" and assembled.program.startswith("function add")
    cut = assemble_program(problem, "  if (x) {\n    return x + y;\n")  # cut off: closed
    assert cut.kind == "continuation" and cut.program.endswith("}\n}\n")
    assert cut.program.startswith(problem.prompt)


def test_plugin_judges_a_js_fixture_and_its_wrong_variant(pytester: pytest.Pytester) -> None:
    _needs("js")
    rows = [r for r in make_samples.sample_rows(("js",)) if r["task_id"] == "js/HumanEval/8"]
    samples = pytester.path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows if "adv" not in r["sample_id"]))
    result = pytester.runpytest_subprocess(
        "--llm-eval", "humaneval-js", "--llm-samples", str(samples), "--llm-out", "out", "-p",
        "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=1, failed=1)
    by_sample = {
        r["sample_id"]: r for r in map(json.loads, (pytester.path / "out/results.jsonl").open())
    }
    assert by_sample["fixture"]["status"] == "passed"
    wrong = by_sample["wrong"]
    assert wrong["status"] == "failed" and wrong["suite"] == "humaneval-js"
    messages = [c["message"] for c in wrong["cases"] if c["status"] == "failed"]
    assert messages[0].startswith("assert (1, 0) == (0, 1)")


# -- slow: every language ------------------------------------------------------------------

# One value of every translated type, nested (Java's tuples hold at most 4 items). Integers
# stay within 2**53: JavaScript's numbers are doubles.
IDENTITY_TYPE = (
    "tuple[tuple[int, float, str, bool], tuple[list[list[int]], dict[str, list[float]], "
    "Optional[str], dict[int, str]], tuple[list[tuple[int, str]], Optional[list[int]]], "
    "tuple[str, ...]]"
)
IDENTITY_VALUES = [
    (
        (-(2**53) + 1, -0.1, 'quote " back\\ new\nline tab\t é € 😀', True),
        ([[1, -2], []], {"a": [1.5, 1e-300], "": []}, None, {3: "x", -4: ""}),
        ([(1, "a"), (2**52, "b")], [7]),
        ("x", "y", "z"),
    ),
    (
        (0, 1e300, "", False),
        ([], {}, "some", {}),
        ([], None),
        (),
    ),
]
IDENTITY = {
    "js": "  return x;\n}\n",
    "cpp": "  return x;\n}\n",
    "java": "        return x;\n    }\n}\n",
    "rs": "    x\n}\n",
}


def _identity_problem(language: str) -> Problem:
    t = parse_type(IDENTITY_TYPE)
    cases = tuple(
        CheckCase(f"case_{i}", "", "compare", calls=("candidate(x)",), check="assert v[0] == x")
        for i in range(len(IDENTITY_VALUES))
    )
    metadata = {
        "language": language,
        "signature": {
            "name": "identity",
            "params": [["x", IDENTITY_TYPE]],
            "returns": IDENTITY_TYPE,
        },
        "call_args": {f"case_{i}": [[repr(v)]] for i, v in enumerate(IDENTITY_VALUES)},
    }
    from harness.languages.translate import Signature

    prompt = get_language(language).stub(Signature("identity", (("x", t),), t), "Returns x.")
    return Problem(
        "identity", f"{language}/identity", prompt, "identity", cases, "", metadata=metadata
    )


@pytest.mark.slow
@pytest.mark.parametrize("language", ["js", "cpp", "java", "rs"])
def test_every_type_round_trips_through_literal_driver_and_decoder(language: str) -> None:
    _needs(language)
    problem = _identity_problem(language)
    execution = _run(problem, IDENTITY[language])
    assert execution.infra_error is None, execution.stderr
    for i, expected in enumerate(IDENTITY_VALUES):
        case = execution.cases[f"case_{i}"]
        assert case.status == "ok", (case.message, execution.stderr[-2000:])
        assert case.values == [expected]


@pytest.mark.slow
def test_a_compile_time_bomb_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs("cpp")
    from suites.registry import load_suite

    problem = {p.task_id: p for p in load_suite("humaneval-cpp")}["cpp/HumanEval/53"]
    monkeypatch.setattr(type(get_language("cpp")), "compile_timeout_s", 3.0)
    # 2**30 terms after preprocessing: far more time and memory than the limits allow.
    macros = "#define A0 + 1\n" + "".join(f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, 31))
    bomb = macros + "long add(long x, long y) {\n  return x + y A30;\n}\n"
    started = time.monotonic()
    execution = _run(problem, bomb)
    statuses = {c.status for c in execution.cases.values()}
    assert statuses <= {"timeout", "crashed"} and execution.infra_error is None
    message = execution.cases["case_0"].message
    # Stopped by the compile time limit or by the memory limit, whichever comes first.
    stops = ("compilation timed out", "compiler was killed", "memory exhausted")
    assert any(stop in message for stop in stops), message
    assert time.monotonic() - started < 30


@pytest.mark.slow
def test_fixtures_pass_wrong_variants_fail_adversarial_samples_never_pass(
    pytester: pytest.Pytester,
) -> None:
    """The issue's acceptance run: every language's fixtures, -n 2."""
    for language in TOOLS:
        _needs(language)
    for language in TOOLS:
        Path(adversarial.ESCAPE_FILE.format(lang=language)).unlink(missing_ok=True)
    result = pytester.runpytest_subprocess(
        "--llm-eval", "humaneval-js,humaneval-cpp,humaneval-java,humaneval-rs",
        "--llm-samples", str(FIXTURES / "samples.jsonl"), "--llm-out", "out",
        "--llm-timeout", "2", "-n", "2", "-p", "no:cacheprovider",
    )  # fmt: skip
    rows = [json.loads(line) for line in (pytester.path / "out/results.jsonl").open()]
    assert len(rows) == len(make_samples.sample_rows())
    for row in rows:
        where = f"{row['task_id']} {row['sample_id']}: {row['cases']}"
        if row["sample_id"] == "fixture":
            assert row["status"] == "passed", where
        elif row["sample_id"] == "wrong":
            failed = [c for c in row["cases"] if c["status"] == "failed"]
            assert row["status"] == "failed" and failed, where
            assert all(c["message"].startswith(("assert", "AssertionError")) for c in failed), where
        else:  # adversarial: failed or timed out, never passed, never a harness error
            assert row["status"] in ("failed", "timeout"), where
    for language in TOOLS:
        assert not Path(adversarial.ESCAPE_FILE.format(lang=language)).exists()
    left = _orphaned_run_processes()
    assert not left, left  # every run's processes died with its sandbox's spawner
    fixtures = sum(r["sample_id"] == "fixture" for r in rows)
    result.assert_outcomes(passed=fixtures, failed=len(rows) - fixtures)


def _orphaned_run_processes() -> list[str]:
    """Processes of a candidate's uid that no live harness process holds any more.

    Other sessions on this machine (the other xdist worker's tests included) may be running
    samples right now, Python ones below a fork server's zygote, compiled ones below a
    spawner: theirs hang below a live parent. A run's process left behind by its spawner is
    reparented to PID 1 (nothing else on this machine is a subreaper), or its parent is gone."""
    from harness.languages.sandboxed import UID_BASE

    ps = subprocess.run(["ps", "-eo", "pid=,ppid=,uid=,args="], capture_output=True, text=True)
    procs = {}
    for line in ps.stdout.splitlines():
        pid, ppid, uid, *args = line.split(None, 3)
        procs[pid] = (ppid, int(uid), " ".join(args))
    left = []
    for ppid, uid, args in procs.values():
        if uid < UID_BASE:
            continue
        while ppid in procs and procs[ppid][1] >= UID_BASE:  # up to the run's first process
            ppid = procs[ppid][0]
        if ppid in ("0", "1") or ppid not in procs:
            left.append(args)
    return left


def test_samples_file_is_up_to_date() -> None:
    """``samples.jsonl`` is what make_samples.py writes from the solution modules."""
    expected = "".join(json.dumps(r) + "\n" for r in make_samples.sample_rows())
    assert (FIXTURES / "samples.jsonl").read_text() == expected


def test_compile_cache_key_covers_the_source() -> None:
    language = get_language("js")
    assert compile_cache.source_key(language, "a") != compile_cache.source_key(language, "b")
    assert dataclasses.is_dataclass(compile_cache.Compiled)


def test_compile_cache_key_covers_the_sandbox_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """A toolchain sees another machine without bubblewrap: its results are kept apart."""
    language = get_language("js")
    monkeypatch.setenv("CODEEVAL_SANDBOX", "nobwrap")
    without = compile_cache.source_key(language, "a")
    monkeypatch.delenv("CODEEVAL_SANDBOX")
    if not bwrap_available():
        pytest.skip("bubblewrap is not usable here: one mode only")
    assert compile_cache.source_key(language, "a") != without


def test_a_link_error_names_the_linker_s_own_error_not_its_command_line() -> None:
    log = (
        "error: linking with `cc` failed: exit status: 1\n  |\n"
        + '  = note:  "cc" '
        + '"-lc" ' * 200
        + "\n  = note: some arguments are omitted. use `--verbose` to show all linker arguments\n"
        + "  = note: collect2: fatal error: cannot find 'ld'\n"
    )
    assert "cannot find 'ld'" in compile_cache._first_error(log)
