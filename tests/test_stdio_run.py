"""Stdio programs run for real and judged: every verdict a judge gives, in the five languages.

Python runs as forks of the warm fork server; C++, Java, Rust and JavaScript compile once and
start per test in the warm sandbox (bubblewrap where it works here). Each test builds its
problem with the one constructor and calls :func:`harness.stdio.execute.execute`, which the
core calls for these problems; the last one goes through :func:`harness.evaluate.evaluate`.
"""

from __future__ import annotations

import time
from pathlib import Path
from shutil import which
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.evaluate import evaluate
from harness.records import Sample
from harness.sandbox import SampleExecution
from harness.stdio.checkers import compare
from harness.stdio.execute import execute
from harness.stdio.problem import Checker, StdioTest, stdio_problem, training_view

SUM_TESTS = [StdioTest(f"{i} {i * 7}\n", f"{i * 8}\n", hidden=i > 1) for i in range(1, 6)]
TOOLS = {"cpp": "g++", "java": "javac", "rs": "rustc", "js": "node"}

HONEST = {
    "python": "a, b = map(int, input().split())\nprint(a + b)\n",
    "cpp": (
        "#include <iostream>\nint main() { long long a, b; std::cin >> a >> b;\n"
        '  std::cout << a + b << "\\n"; }\n'
    ),
    "java": (
        "import java.util.*;\npublic class Main { public static void main(String[] x) {\n"
        "  Scanner s = new Scanner(System.in); long a = s.nextLong(), b = s.nextLong();\n"
        "  System.out.println(a + b); } }\n"
    ),
    "rs": (
        "use std::io::Read;\nfn main() { let mut s = String::new();\n"
        "  std::io::stdin().read_to_string(&mut s).unwrap();\n"
        "  let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n"
        '  println!("{}", v[0] + v[1]); }\n'
    ),
    "js": (
        "const v = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
        "console.log(v[0] + v[1]);\n"
    ),
}


def _needs(language: str) -> None:
    tool = TOOLS.get(language)
    if tool and which(tool) is None and not Path(f"~/.cargo/bin/{tool}").expanduser().exists():
        pytest.skip(f"{tool} is not installed")


def _run(source: str, language: str = "python", tests: Any = None, **kwargs: Any) -> Any:
    problem = stdio_problem(
        "t", f"t/{language}", "Print a + b.", tests or SUM_TESTS, language=language, **kwargs
    )
    return problem, execute(problem, source)


def _verdicts(execution: SampleExecution) -> list[str]:
    """Each case's verdict: the judged value, or the verdict a failed run's message names."""
    assert execution.infra_error is None, execution.infra_error
    out = []
    for case in execution.cases.values():
        if case.status == "ok":
            out.append(case.values[0])
        else:
            out.append(case.message.split(":")[0])
    return out


@pytest.mark.parametrize("language", ["python", "cpp", "java", "rs", "js"])
def test_honest_programs_pass_in_all_five_languages(language: str) -> None:
    _needs(language)
    _, execution = _run(HONEST[language], language)
    assert _verdicts(execution) == ["passed"] * 5


@pytest.mark.parametrize(
    ("source", "verdict", "message"),
    [
        ("a, b = map(int, input().split())\nprint(a + b + 1)", "wrong_answer", "expected '8'"),
        ("while True:\n    pass", "time_limit", "time limit exceeded"),
        ("raise ValueError('boom')", "runtime_error", "ValueError: boom"),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)", "runtime_error", "SIGSEGV"),
        ("import sys\nprint(8)\nsys.exit(3)", "runtime_error", "exit status 3"),
        ("x = bytearray(3 << 30)", "memory_limit", "memory limit"),
        ("import sys\nsys.stdout.write('9' * (9 << 20))", "output_limit", "output limit"),
        ("print(", "compile error", "SyntaxError"),
    ],
    ids=[
        "wrong",
        "timeout",
        "raises",
        "segfault",
        "exit-status",
        "memory",
        "long-output",
        "syntax",
    ],
)
def test_python_failures_get_a_judges_verdict(source: str, verdict: str, message: str) -> None:
    _, execution = _run(source, time_limit_s=1.0)
    first = next(iter(execution.cases.values()))
    assert _verdicts(execution)[0] == verdict
    assert message in (first.message or first.values[1])


@pytest.mark.parametrize(
    ("source", "verdict", "message"),
    [
        ('#include <cstdio>\nint main(){ puts("0"); }', "wrong_answer", "got '0'"),
        ("int main(){ for(;;); }", "time_limit", "time limit"),
        ("int main(){ int *p = nullptr; return *(volatile int*)p; }", "runtime_error", "SIGSEGV"),
        ("int main(){ return 4; }", "runtime_error", "exit status 4"),
        (
            '#include <cstdio>\nint main(){ for(;;) fputs("99999999", stdout); }',
            "output_limit",
            "output limit",
        ),
        ("int main( {", "compile error", "compile error"),
        (
            "#include <vector>\nint main(){ std::vector<long> v(2000000000L); return (int)v[5]; }",
            "memory_limit",
            "memory limit",
        ),
    ],
    ids=["wrong", "timeout", "segfault", "exit-status", "long-output", "compile-error", "memory"],
)
def test_cpp_failures_get_a_judges_verdict(source: str, verdict: str, message: str) -> None:
    _needs("cpp")
    _, execution = _run(source, "cpp", time_limit_s=1.0)
    first = next(iter(execution.cases.values()))
    assert _verdicts(execution)[0] == verdict
    assert message in (first.message or first.values[1])


def test_presentation_differences_follow_the_checker() -> None:
    spaced = "a, b = map(int, input().split())\nprint(' ', a + b, ' ')\nprint()\n"
    _, execution = _run(spaced)
    assert _verdicts(execution) == ["passed"] * 5  # tokens: whitespace does not matter
    _, execution = _run("a, b = map(int, input().split())\nprint(a + b, end='  \\n')\n")
    assert _verdicts(execution) == ["passed"] * 5
    exact = Checker("exact")
    _, execution = _run("print(' ' + str(sum(map(int, input().split()))))", checker=exact)
    assert _verdicts(execution)[0] == "presentation_error"


def test_float_and_case_insensitive_checkers() -> None:
    tests = [StdioTest("3\n", "0.333333333\nYES\n")]
    source = "n = int(input())\nprint(f'{1 / n:.7f}')\nprint('yes')"
    _, execution = _run(source, tests=tests, checker=Checker("float", case_insensitive=True))
    assert _verdicts(execution) == ["passed"]
    _, execution = _run(source, tests=tests, checker=Checker("float"))
    assert _verdicts(execution) == ["wrong_answer"]
    _, execution = _run(source, tests=tests)
    assert _verdicts(execution) == ["wrong_answer"]


# Accepts any divisor of n between 2 and n - 1 (many right answers), rejects others.
DIVISOR_JUDGE = """
import sys
n = int(open(sys.argv[1]).read())
out = open(sys.argv[2]).read().split()
if len(out) == 1 and out[0].isdigit() and 1 < int(out[0]) < n and n % int(out[0]) == 0:
    sys.exit(0)
print("not a proper divisor:", out[:1])
sys.exit(1)
"""
DIVISOR_TESTS = [StdioTest("12\n", "2\n"), StdioTest("35\n", "5\n", hidden=True)]


LARGEST_DIVISOR = {
    "python": "n = int(input())\nprint(max(d for d in range(2, n) if n % d == 0))",
    "cpp": (
        '#include <cstdio>\nint main(){ int n; scanf("%d", &n);\n'
        '  for (int d = n - 1; d > 1; d--) if (n % d == 0) { printf("%d\\n", d); return 0; } }'
    ),
}


@pytest.mark.parametrize("language", sorted(LARGEST_DIVISOR))
def test_a_special_judge_decides_sandboxed(language: str) -> None:
    _needs(language)
    judge = Checker("special", judge_source=DIVISOR_JUDGE)
    source = LARGEST_DIVISOR[language]
    _, execution = _run(source, language, tests=DIVISOR_TESTS, checker=judge)
    assert _verdicts(execution) == ["passed", "passed"]  # not the data's answer, still right
    _, execution = _run("print(1)", tests=DIVISOR_TESTS, checker=judge)
    case = next(iter(execution.cases.values()))
    assert case.values[0] == "wrong_answer" and "not a proper divisor" in case.values[1]


def test_a_broken_special_judge_never_passes_a_program() -> None:
    broken = Checker("special", judge_source="raise RuntimeError('judge bug')")
    _, execution = _run("print(2)", tests=DIVISOR_TESTS, checker=broken)
    case = next(iter(execution.cases.values()))
    assert case.values[0] == "judge_error" and "judge bug" in case.values[1]
    strange = Checker("special", judge_source="import sys\nsys.exit(7)")
    _, execution = _run("print(2)", tests=DIVISOR_TESTS, checker=strange)
    assert _verdicts(execution)[0] == "judge_error"


def test_only_the_verdict_stops_at_the_first_failure_partial_credit_runs_all() -> None:
    source = "a, b = map(int, input().split())\nprint(a + b if a != 2 else 0)"
    problem, execution = _run(source)
    assert _verdicts(execution) == ["passed", "wrong_answer"] + ["not_run"] * 3
    assert "stopped at the first failed test" in execution.notes
    every = execute(training_view(problem), source)
    assert _verdicts(every) == ["passed", "wrong_answer", "passed", "passed", "passed"]


def test_evaluate_rows_carry_per_test_outcomes(tmp_path: Path) -> None:
    problem = stdio_problem("t", "t/sum", "Print a + b.", SUM_TESTS)
    samples = [
        Sample("t/sum", "```python\n" + HONEST["python"] + "```", "right"),
        Sample("t/sum", "```python\nwhile True: pass\n```", "slow"),
    ]
    rows = evaluate([problem], samples, reward="binary", out_dir=tmp_path, timeout_s=0.5)
    right, slow = rows
    assert right["passed"] and right["reward"] == 1.0
    assert [c["status"] for c in right["cases"]] == ["passed"] * 5
    assert right["execution"]["max_rss_kib"] > 0  # the runs' accounting, from the kernel
    assert not slow["passed"] and slow["reward"] == 0.0
    first = slow["cases"][0]
    assert first["status"] == "timeout" and "time limit exceeded" in first["message"]


def test_the_generated_module_is_one_function_per_test_with_large_texts_beside(
    tmp_path: Path,
) -> None:
    big = " ".join(str(i) for i in range(400)) + "\n"
    tests = [StdioTest("1 2\n", "3\n"), StdioTest(big, f"{sum(range(400))}\n", hidden=True)]
    problem = stdio_problem("readable", "readable/sum", "Sum them.", tests)
    source = "print(sum(map(int, open(0).read().split())))"
    (row,) = evaluate([problem], [Sample(problem.task_id, source, "s")], out_dir=tmp_path)
    assert row["passed"]
    (module,) = tmp_path.rglob("test_readable_sum.py")
    text = module.read_text()
    assert "def test_public_1(sandbox):" in text and "def test_hidden_1(sandbox):" in text
    assert "stdin:\n    1 2\n    expected stdout:\n    3" in text
    assert "hidden_1.in and hidden_1.out" in text
    beside = module.with_suffix("")
    assert (beside / "hidden_1.in").read_text() == big
    assert (beside / "hidden_1.out").read_text() == f"{sum(range(400))}\n"
    assert not (beside / "public_1.in").exists()  # small texts stay in the docstring


@settings(max_examples=8, deadline=None)
@given(
    printed=st.text(st.characters(blacklist_categories=["Cs"]), max_size=60),
    expected=st.sampled_from(["", "0\n", "a b\n", "é ü\n"]),
)
def test_the_verdict_is_the_trusted_comparison_of_what_reached_stdout(
    printed: str, expected: str
) -> None:
    """Any text a program writes (any characters, whitespace, NULs) reaches the checker as
    written, and the verdict is exactly the trusted comparison's."""
    problem = stdio_problem("prop", "prop/echo", "x", [StdioTest("\n", expected)])
    source = f"import sys\nsys.stdout.write({printed!r})"
    (case,) = execute(problem, source).cases.values()
    want = compare(printed, expected, Checker()).passed
    assert case.status == "ok" and (case.values[0] == "passed") == want, case


@pytest.mark.parametrize("language", ["python", "cpp"])
def test_a_starved_time_out_is_run_once_more_before_it_counts(language: str) -> None:
    """A run that timed out with less than half its limit on a CPU (a busy machine, or a
    program that sleeps) gets a second run; a program that sleeps still times out."""
    _needs(language)
    source = {
        "python": "import time\ntime.sleep(30)",
        "cpp": "#include <unistd.h>\nint main(){ sleep(30); }",
    }[language]
    tests = [StdioTest("1 1\n", "2\n")]
    started = time.monotonic()
    _, execution = _run(source, language, tests=tests, time_limit_s=0.5)
    assert _verdicts(execution) == ["time_limit"]
    assert time.monotonic() - started >= 1.0  # two runs of 0.5 s


USUAL_WAYS = {
    "java": (
        "import java.util.*;\nclass Solution {\n  static class Pair { long a, b; }\n"
        "  public static void main(String[] x) { Scanner s = new Scanner(System.in);\n"
        "    Pair p = new Pair(); p.a = s.nextLong(); p.b = s.nextLong();\n"
        "    System.out.println(p.a + p.b); } }\n"
    ),
    "js": (
        "const rl = require('readline').createInterface({ input: process.stdin });\n"
        "rl.on('line', (l) => { const [a, b] = l.split(' ').map(Number); console.log(a + b); });\n"
    ),
    "python": "import sys\nfor line in sys.stdin:\n    print(sum(map(int, line.split())))\nexit()\n",
}


@pytest.mark.parametrize("language", sorted(USUAL_WAYS))
def test_programs_written_the_usual_ways_pass(language: str) -> None:
    """A Java main class that is not public (with a nested class), node's readline, Python's
    line loop and site's exit()."""
    _needs(language)
    _, execution = _run(USUAL_WAYS[language], language)
    assert _verdicts(execution) == ["passed"] * 5


# -- compiled programs: one message each way per test, queued a few ahead -------------------
def _messages(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every request the trusted side sends a warm sandbox: (op, runs queued before it)."""
    from harness.languages import launch

    sent: list[tuple[str, int]] = []
    send = launch.WarmSandbox._send

    def counted(self: launch.WarmSandbox, message: dict[str, Any], fds: Any) -> None:
        sent.append((message["op"], self.queued))
        send(self, message, fds)

    monkeypatch.setattr(launch.WarmSandbox, "_send", counted)
    return sent


def test_a_compiled_test_is_one_message_each_way_and_tests_queue_ahead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A start, a wait and a finish per test were three round trips, each a wake-up of both
    processes; now one, and the next tests are already queued while this side judges."""
    _needs("cpp")
    tests = [StdioTest(f"{i} {i}\n", f"{2 * i}\n") for i in range(12)]
    problem = training_view(stdio_problem("t", "t/queue", "a + b", tests, language="cpp"))
    execute(problem, HONEST["cpp"])  # compiled (start, wait, finish), sandbox warm
    sent = _messages(monkeypatch)
    execution = execute(problem, HONEST["cpp"])
    assert _verdicts(execution) == ["passed"] * 12
    assert [op for op, _ in sent] == ["run"] * 12
    assert max(queued for _, queued in sent) >= 2  # sent before the runs ahead were answered


def test_a_program_that_loops_costs_one_time_limit_not_one_per_test_queued(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The window grows only while tests end normally: a time-out at the first test has no
    test queued behind it; the tests queued behind a later wrong answer are cancelled."""
    _needs("cpp")
    loops = "int main() { volatile unsigned long i = 0; for (;;) i++; }"
    tests = [StdioTest("1 1\n", "2\n")] * 6
    sent = _messages(monkeypatch)
    _, execution = _run(loops, "cpp", tests=tests, time_limit_s=0.3)
    assert _verdicts(execution) == ["time_limit"] + ["not_run"] * 5
    runs = [queued for op, queued in sent if op == "run"]  # (the compile: spawn, wait, finish)
    assert runs in ([0], [0, 0])  # nothing queued behind it (twice: the machine was busy)
    sent.clear()
    wrong_at_4 = [StdioTest(f"{i} {i}\n", f"{2 * i + (i == 4)}\n") for i in range(10)]
    _, execution = _run(HONEST["cpp"], "cpp", tests=wrong_at_4)
    assert _verdicts(execution) == ["passed"] * 4 + ["wrong_answer"] + ["not_run"] * 5
    runs = [op for op, _ in sent if op == "run"]
    assert 5 < len(runs) < 10 and sent[-1][0] == "cancel"  # those queued behind: cancelled


def test_tests_queued_behind_a_time_out_are_cancelled_not_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A program that loops from its fifth test on: the four tests queued behind the fifth
    would each loop to the time limit; they are cancelled (the running one killed)."""
    _needs("cpp")
    program = (
        '#include <cstdio>\nint main() { long a, b; scanf("%ld %ld", &a, &b);\n'
        "  if (a >= 4) { volatile unsigned long i = 0; for (;;) i++; }\n"
        '  printf("%ld\\n", a + b); }\n'
    )
    tests = [StdioTest(f"{i} {i}\n", f"{2 * i}\n") for i in range(10)]
    _run(program, "cpp", tests=tests[:1])  # compiled
    sent = _messages(monkeypatch)
    answers = _answers(monkeypatch)
    started = time.monotonic()
    _, execution = _run(program, "cpp", tests=tests, time_limit_s=1.0)
    elapsed = time.monotonic() - started
    assert _verdicts(execution) == ["passed"] * 4 + ["time_limit"] + ["not_run"] * 5
    assert "cancel" in [op for op, _ in sent]
    assert elapsed < 3.5, elapsed  # one time limit (two if starved), not five
    cancelled = [a for a in answers if a.get("cancelled")]
    assert len(cancelled) == 4  # the running one killed at once, the others never started
    assert all(a["wall_s"] < 0.5 for a in cancelled if "wall_s" in a), cancelled


def _answers(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every answer a warm sandbox gives the trusted side."""
    from harness.languages import launch

    got: list[dict[str, Any]] = []
    answer = launch.WarmSandbox._answer

    def recorded(self: launch.WarmSandbox) -> dict[str, Any]:
        got.append(answer(self))
        return got[-1]

    monkeypatch.setattr(launch.WarmSandbox, "_answer", recorded)
    return got
