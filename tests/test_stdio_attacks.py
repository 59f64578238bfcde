"""Attacks on stdio judging never pass: each program here would get a test right only by
cheating, and each is run as a real run runs it (:func:`harness.evaluate.evaluate`: the suite
folder and the data folder hidden, the fork server or the warm sandbox, the trusted checker).

Where the attack works without the sandbox (reading the suite folder, keeping state between
tests), the test shows that first, by running the same program as ``python prog.py < input``
beside the suite: the attack is real, only the harness stops it.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path
from shutil import which
from typing import Any

import pytest

from harness.evaluate import evaluate
from harness.records import Problem, Sample
from harness.stdio.problem import Checker, StdioTest, stdio_problem, training_view

pytestmark = [
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.usefixtures("sandbox_mode"),  # every attack in both sandbox modes
]

# Finds the suite's files (or any file it can read under ROOTS) that hold this test's input,
# and prints the first secret that follows it there: the expected output, as problems.jsonl
# stores it beside the input.
DISK_THIEF = r"""
import os, re, sys
text = sys.stdin.read()
roots = ROOTS + [os.getcwd(), os.path.expanduser("~"), "/tmp"]
seen = 0
for root in roots:
    for folder, _, files in os.walk(root):
        for name in files:
            seen += 1
            if seen > 3000:
                break
            try:
                data = open(os.path.join(folder, name), errors="ignore").read(4_000_000)
            except OSError:
                continue
            at = data.find(text.strip())
            if at >= 0:
                found = re.search(r"SECRET[0-9a-f]{16}", data[at:])
                if found:
                    print(found.group(0))
                    sys.exit(0)
print("nothing")
"""

# Looks through every process it can see (command lines, environments, readable memory).
PARENT_THIEF = r"""
import os, re
pattern = re.compile(rb"SECRET[0-9a-f]{16}")
found = set()
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    for part in ("cmdline", "environ"):
        try:
            found.update(pattern.findall(open(f"/proc/{pid}/{part}", "rb").read()))
        except OSError:
            pass
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb") as mem:
            for line in maps:
                start, end = (int(x, 16) for x in line.split()[0].split("-"))
                if "r" not in line.split()[1] or end - start > 64 << 20:
                    continue
                try:
                    mem.seek(start)
                    found.update(pattern.findall(mem.read(end - start)))
                except (OSError, ValueError, OverflowError):
                    pass
    except OSError:
        pass
print(sorted(found)[0].decode() if found else "nothing")
"""

COUNTER = r"""
import os
count = 0
for folder in ("/tmp", "/dev/shm", os.path.expanduser("~"), os.getcwd(), "/var/tmp"):
    try:
        path = os.path.join(folder, ".codeeval-counter")
        count = max(count, int(open(path).read() or 0))
    except (OSError, ValueError):
        pass
count += 1
for folder in ("/tmp", "/dev/shm", os.path.expanduser("~"), os.getcwd(), "/var/tmp"):
    try:
        open(os.path.join(folder, ".codeeval-counter"), "w").write(str(count))
    except OSError:
        pass
print(count)
"""


def _secret_tests(n: int = 3) -> list[StdioTest]:
    return [
        StdioTest(f"QUERY{secrets.token_hex(8)}\n", f"SECRET{secrets.token_hex(8)}\n", hidden=i > 0)
        for i in range(n)
    ]


def _rows(problem: Problem, programs: dict[str, str], out: Path, **kwargs: Any) -> list[dict]:
    fence = "python" if problem.metadata["language"] == "stdio-python" else "cpp"
    samples = [
        Sample(problem.task_id, f"```{fence}\n{code}\n```", name) for name, code in programs.items()
    ]
    return evaluate([problem], samples, reward="binary", out_dir=out, **kwargs)


def _assert_all_failed(rows: list[dict]) -> None:
    for row in rows:
        assert not row["passed"], row["sample_id"]
        assert all(c["status"] != "passed" for c in row["cases"]), row["cases"]


@pytest.mark.slow  # the thief walks every folder it can see (~10 s)
def test_expected_outputs_on_disk_stay_out_of_reach(tmp_path: Path, shared_data: Path) -> None:
    problem = training_view(
        stdio_problem("attack", "attack/disk", "Echo.", _secret_tests(2), time_limit_s=20)
    )
    roots = [str(tmp_path), str(shared_data)]
    thief = DISK_THIEF.replace("ROOTS", repr(roots))
    rows = _rows(problem, {"disk": thief}, tmp_path / "out")
    _assert_all_failed(rows)
    assert "got 'nothing'" in rows[0]["cases"][0]["message"]  # it ran, and found nothing
    # Without the sandbox the same program finds the answer in the suite folder.
    test = problem.metadata["stdio"]["tests"][0]
    (tmp_path / "prog.py").write_text(thief)
    found = subprocess.run(
        [sys.executable, str(tmp_path / "prog.py")], input=test["input"], text=True,
        capture_output=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert found == test["output"]


def test_the_checker_on_disk_stays_out_of_reach(tmp_path: Path) -> None:
    secret = f"SECRET{secrets.token_hex(8)}"
    judge = f"import sys\nsys.exit(0 if open(sys.argv[2]).read().split() == [{secret!r}] else 1)"
    tests = [StdioTest(f"QUERY{secrets.token_hex(8)}\n", "unused\n")]
    problem = stdio_problem(
        "attack",
        "attack/judge",
        "x",
        tests,
        checker=Checker("special", judge_source=judge),
        time_limit_s=20,
    )
    thief = (
        DISK_THIEF.replace('ROOTS + [os.getcwd(), os.path.expanduser("~"), "/tmp"]', "ROOTS")
        .replace("ROOTS", repr([str(tmp_path)]))
        .replace("data[at:]", "data")
    )  # any secret in a file that names the input: the judge's source is beside it
    rows = _rows(problem, {"judge": thief}, tmp_path / "out")
    _assert_all_failed(rows)
    assert "special judge: wrong answer" in rows[0]["cases"][0]["message"]  # ran, was judged


def test_the_parent_and_other_processes_hold_nothing_to_steal(tmp_path: Path) -> None:
    problem = stdio_problem("attack", "attack/parent", "Echo.", _secret_tests(2))
    rows = _rows(problem, {"parent": PARENT_THIEF}, tmp_path / "out")
    _assert_all_failed(rows)
    assert "got 'nothing'" in rows[0]["cases"][0]["message"]


def test_printing_every_plausible_answer_fails(tmp_path: Path) -> None:
    tests = [StdioTest("4\n", "YES\n"), StdioTest("7\n", "NO\n", hidden=True)]
    problem = training_view(stdio_problem("attack", "attack/both", "Even?", tests))
    programs = {
        "both": "print('YES')\nprint('NO')",
        "both-one-line": "print('YES NO')",
        "nothing": "",
        "every-number": "print(*range(-5, 100))",
    }
    _assert_all_failed(_rows(problem, programs, tmp_path / "out"))
    floats = [StdioTest("3\n", "0.333333333\n")]
    problem = stdio_problem("attack", "attack/floats", "1/n", floats, checker=Checker("float"))
    spray = "print(*[i / 1000 for i in range(1000)])"
    _assert_all_failed(_rows(problem, {"spray": spray}, tmp_path / "out2"))


def test_no_state_survives_between_tests_so_the_last_test_cannot_be_told(tmp_path: Path) -> None:
    # Same input every time; test i expects i. Only a program that counts its runs passes more
    # than the first.
    tests = [StdioTest("go\n", f"{i}\n", hidden=i > 1) for i in range(1, 5)]
    problem = training_view(stdio_problem("attack", "attack/count", "Count.", tests))
    (row,) = _rows(problem, {"counter": COUNTER}, tmp_path / "out")
    assert [c["status"] for c in row["cases"]] == ["passed", "failed", "failed", "failed"]
    # Run as plain processes, the same program does tell its runs apart.
    (tmp_path / "prog.py").write_text(COUNTER)
    outputs = [
        subprocess.run(
            [sys.executable, "prog.py"], input="go\n", text=True, capture_output=True,
            cwd=tmp_path, check=True,
        ).stdout.strip()
        for _ in range(3)
    ]  # fmt: skip
    assert outputs[-1] != "1"


# The same in C++, with its own build folder as one more place: its tests are queued ahead in
# one warm sandbox, and without bubblewrap they share one copy of the build.
COUNTER_CPP = r"""
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
int main(int argc, char** argv) {
  std::string self = argv[0], build = self.substr(0, self.rfind('/'));
  const char* home = getenv("HOME");
  char cwd[4096]; if (!getcwd(cwd, sizeof cwd)) cwd[0] = 0;
  std::string folders[] = {"/tmp", "/dev/shm", home ? home : "/", cwd, "/var/tmp", build};
  long count = 0;
  for (auto& f : folders) {
    FILE* in = fopen((f + "/.codeeval-counter").c_str(), "r"); long n = 0;
    if (in) { if (fscanf(in, "%ld", &n) == 1 && n > count) count = n; fclose(in); }
  }
  count++;
  for (auto& f : folders) {
    FILE* out = fopen((f + "/.codeeval-counter").c_str(), "w");
    if (out) { fprintf(out, "%ld", count); fclose(out); }
  }
  printf("%ld\n", count);
}
"""


def test_no_state_survives_between_compiled_tests_queued_ahead(tmp_path: Path) -> None:
    if which("g++") is None:
        pytest.skip("g++ is not installed")
    tests = [StdioTest("go\n", f"{i}\n", hidden=i > 1) for i in range(1, 7)]
    problem = training_view(
        stdio_problem("attack", "attack/count-cpp", "Count.", tests, language="cpp")
    )
    (row,) = _rows(problem, {"counter": COUNTER_CPP}, tmp_path / "out")
    assert [c["status"] for c in row["cases"]] == ["passed"] + ["failed"] * 5


SUM = [StdioTest(f"{i} {i}\n", f"{2 * i}\n{i}\n", hidden=i > 1) for i in range(1, 4)]
EARLY_EXITS = {
    "sys-exit": "a, b = map(int, input().split())\nprint(a + b)\nimport sys\nsys.exit(0)\nprint(a)",
    "os-exit": "import os\na, b = map(int, input().split())\nprint(a + b)\nos._exit(0)\nprint(a)",
    "flushed-os-exit": (
        "import os\na, b = map(int, input().split())\nprint(a + b, flush=True)\nos._exit(0)"
    ),
    "silent": "import sys\nsys.exit(0)",
}


def test_exiting_zero_early_is_a_wrong_answer(tmp_path: Path) -> None:
    problem = training_view(stdio_problem("attack", "attack/exit", "Sum, then a.", SUM))
    _assert_all_failed(_rows(problem, EARLY_EXITS, tmp_path / "out"))


OUT_OF_BAND_PY = {
    # The right answer everywhere but stdout: the result channel, stderr, a fresh fd.
    "result-channel": (
        "import os, json\na, b = map(int, input().split())\nanswer = f'{a + b}\\n{a}\\n'\n"
        "for fd in range(3, 16):\n"
        "    for frame in (json.dumps({'values': ['passed', '']}), answer, 'passed'):\n"
        "        try:\n            os.write(fd, frame.encode() + b'\\n')\n"
        "        except OSError:\n            pass\n"
    ),
    "stderr": "import sys\na, b = map(int, input().split())\nprint(a + b, a, file=sys.stderr)",
    # A grandchild that writes the answer to the inherited stdout after the program ended.
    "late-writer": (
        "import os, time\na, b = map(int, input().split())\n"
        "if os.fork() == 0:\n    os.setsid()\n    time.sleep(0.3)\n"
        "    os.write(1, f'{a + b}\\n{a}\\n'.encode())\n    os._exit(0)\n"
    ),
}
OUT_OF_BAND_CPP = {
    "late-writer": (
        '#include <cstdio>\n#include <unistd.h>\nint main(){ long a, b; scanf("%ld %ld", &a, &b);\n'
        ' if (fork() == 0) { setsid(); usleep(300000); printf("%ld\\n%ld\\n", a + b, a);'
        " fflush(stdout); _exit(0); }\n return 0; }"
    ),
    "stderr": (
        '#include <cstdio>\nint main(){ long a, b; scanf("%ld %ld", &a, &b);\n'
        ' fprintf(stderr, "%ld\\n%ld\\n", a + b, a); }'
    ),
    "early-return": (
        '#include <cstdio>\nint main(){ long a, b; scanf("%ld %ld", &a, &b);\n'
        ' printf("%ld\\n", a + b); return 0; printf("%ld\\n", a); }'
    ),
}


def test_writing_the_answer_out_of_band_never_counts(tmp_path: Path) -> None:
    problem = training_view(stdio_problem("attack", "attack/oob", "Sum, then a.", SUM))
    _assert_all_failed(_rows(problem, OUT_OF_BAND_PY, tmp_path / "out"))


def test_compiled_programs_cannot_answer_out_of_band_or_exit_early(tmp_path: Path) -> None:
    if which("g++") is None:
        pytest.skip("g++ is not installed")
    problem = training_view(
        stdio_problem("attack", "attack/oob-cpp", "Sum, then a.", SUM, language="cpp")
    )
    _assert_all_failed(_rows(problem, OUT_OF_BAND_CPP, tmp_path / "out"))


def test_a_compiler_cannot_read_the_expected_outputs_either(tmp_path: Path) -> None:
    """Rust's include_str! reads any file at compile time: the suite's problems.jsonl would
    give the answer away if the compile could see it (it runs in the warm sandbox's view)."""
    if which("rustc") is None and not Path("~/.cargo/bin/rustc").expanduser().exists():
        pytest.skip("rustc is not installed")
    out = tmp_path / "out"
    problem = stdio_problem("attack", "attack/include", "Echo.", _secret_tests(1), language="rs")
    stolen = out / "suite" / "problems.jsonl"
    program = (
        f"const DATA: &str = include_str!({json.dumps(str(stolen))});\n"
        "fn main() {\n    let mut s = String::new();\n"
        "    std::io::stdin().read_line(&mut s).unwrap();\n"
        "    let at = DATA.find(s.trim()).unwrap_or(0);\n"
        '    let rest = &DATA[at..];\n    let from = rest.find("SECRET").unwrap_or(0);\n'
        '    println!("{}", &rest[from..from + 22]);\n}\n'
    )
    samples = [Sample(problem.task_id, f"```rust\n{program}```", "include")]
    (row,) = evaluate([problem], samples, reward="binary", out_dir=out)
    assert stolen.is_file() and problem.metadata["stdio"]["tests"][0]["output"].strip() in (
        stolen.read_text()
    )  # the file is there, with the answer in it
    assert not row["passed"]
    assert "compile error" in row["cases"][0]["message"]
