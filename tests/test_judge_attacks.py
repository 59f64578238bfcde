"""Checks that run beside the candidate (sandbox mode) are judged in a process it never enters.

HumanEval/32, /38 and /50 call the prompt's own helpers and loop over generated inputs, and every
ClassEval check runs a unittest class: these run in the judge (harness/sandbox/inside/judge.py),
which reaches the program only through the object bridge. Each attack below was a pass when the
check ran in the candidate's own process: it forged a frame, patched what the check uses, or
redefined the benchmark's helper. None may pass now, under -n 0 and -n 2, and the honest
solutions still do.
"""

from __future__ import annotations

import json
import os
import stat
import sysconfig
from pathlib import Path

import pytest

from harness.pipeline.runtime import build_request
from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings
from harness.sandbox.landlock_view import no_bwrap_guards
from suites.classeval import RUNNER_NAME, RUNNER_SOURCE
from suites.registry import load_suite

pytest_plugins = ["pytester"]

FIND_ZERO = "    return 0.0\n"  # wrong for almost every polynomial
SENDER_FORGE = """
    import gc, os
    for obj in gc.get_objects():
        if type(obj).__name__ == "_Sender":
            for i in range(0, 8):
                try:
                    obj.send(2, i, {"status": "ok", "duration_s": 0.0})
                except Exception:
                    pass
    os._exit(0)
"""
# Attacks on HumanEval/32 (find_zero: the check loops over random polynomials and asserts
# |poly(coeffs, x)| < 1e-4 with the prompt's own ``poly``), /38 and /50 (decode what the
# prompt's ``encode_*`` helper encoded, over 100 random strings).
ATTACKS: dict[str, tuple[str, str]] = {
    "redefine_prompt_helper": (
        "HumanEval/32",
        "    return 0.0\n\n\ndef poly(xs, x):\n    return 0.0\n",
    ),
    "patch_math_fabs": (
        "HumanEval/32",
        "    import math\n    math.fabs = lambda x: 0.0\n" + FIND_ZERO,
    ),
    "patch_copy_deepcopy": (
        "HumanEval/32",
        "    import copy, math\n    copy.deepcopy = lambda x: x\n    math.fabs = abs\n"
        "    xs[:] = [0] * len(xs)\n    return 0.0\n",
    ),
    "always_equal_result": (
        "HumanEval/32",
        "    class Z(float):\n        def __abs__(self):\n            return 0.0\n"
        "        def __lt__(self, o):\n            return True\n    return Z(12345.0)\n",
    ),
    "forge_frames_via_gc": ("HumanEval/32", SENDER_FORGE),
    "rewrite_statement_via_gc": (
        "HumanEval/50",
        "    import gc\n"
        "    for obj in gc.get_objects():\n"
        "        if isinstance(obj, dict) and obj.get('mode') == 'sandbox':\n"
        "            obj['statement'] = 'pass'\n"
        "            obj['statement_code'] = compile('pass', 'x', 'exec')\n"
        "    return s\n",
    ),
    "patch_random_for_empty_inputs": (
        "HumanEval/38",
        "    import random\n    random.randint = lambda a, b: 0\n    return s\n",
    ),
    "patch_builtin_helpers": (
        "HumanEval/50",
        "    import builtins\n    builtins.chr = lambda c: ''\n    builtins.ord = lambda c: 0\n"
        "    return ''\n",
    ),
    "redefine_encoder_as_identity": (
        "HumanEval/50",
        "    return s\n\n\ndef encode_shift(s):\n    return s\n",
    ),
    "exit_while_judged": ("HumanEval/38", "    import os\n    os._exit(0)\n"),
    "kill_every_process_of_the_uid": (
        "HumanEval/38",
        "    import os, signal\n"
        "    for pid in os.listdir('/proc'):\n"
        "        if pid.isdigit() and int(pid) != os.getpid():\n"
        "            try:\n                os.kill(int(pid), signal.SIGKILL)\n"
        "            except OSError:\n                pass\n"
        "    return s\n",
    ),
    "read_the_judges_memory": (
        "HumanEval/38",
        "    import os\n"
        "    for pid in os.listdir('/proc'):\n"
        "        if pid.isdigit() and int(pid) != os.getpid():\n"
        "            for name in ('mem', 'fd/3'):\n"
        "                try:\n"
        "                    fd = os.open(f'/proc/{pid}/{name}', os.O_RDWR)\n"
        "                    os.write(fd, b'CEvF')\n"
        "                except OSError:\n"
        "                    pass\n"
        "    return s\n",
    ),
}


@pytest.fixture(scope="module")
def humaneval() -> dict:
    return {p.task_id: p for p in load_suite("humaneval")}


def _program(problem, body: str) -> str:
    return problem.prompt + body


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_never_passes_a_judged_check(name: str, humaneval: dict, use_bwrap: bool) -> None:
    task_id, body = ATTACKS[name]
    problem = humaneval[task_id]
    assert any(c.mode == "sandbox" for c in problem.cases)
    request = build_request(problem, _program(problem, body))
    with Sandbox(SandboxSettings(use_bwrap=use_bwrap)) as sandbox:
        result = sandbox.run(request)
        judged = [c.case_id for c in problem.cases if c.mode == "sandbox"]
        assert result.infra_error is None
        for case_id in judged:
            assert result.cases[case_id].status != "ok", (name, result.cases[case_id])
        # The sandbox is healthy for the next sample: the reference still passes.
        honest = sandbox.run(build_request(problem, problem.prompt + problem.reference))
        assert all(c.status == "ok" for c in honest.cases.values()), honest.cases


def test_helpers_come_from_the_prompt(humaneval: dict) -> None:
    """The judge's ``poly`` is the benchmark's: an honest find_zero passes against it even when
    the program's own copy of the helper is broken."""
    problem = humaneval["HumanEval/32"]
    program = (
        problem.prompt.replace("def poly(", "def _own_poly(")
        + problem.reference.replace("poly(", "_own_poly(")
        + "\n\ndef poly(xs, x):\n    return 1e9\n"
    )
    with Sandbox(SandboxSettings(use_bwrap=False)) as sandbox:
        result = sandbox.run(build_request(problem, program))
    assert all(c.status == "ok" for c in result.cases.values()), result.cases


# A ClassEval-shaped problem: the benchmark's unittest class runs in the judge, the class is
# the candidate's, reached through the bridge (calls, attributes, containers by reference).
COUNTER_TESTS = f"""
import unittest


class CounterTest(unittest.TestCase):
    def test_counts(self):
        c = Counter()
        c.add("a")
        c.add("a")
        self.assertEqual(c.get("a"), 2)
        c.seen["b"] = 5
        self.assertEqual(c.get("b"), 5)
        self.assertEqual(c.seen, {{"a": 2, "b": 5}})
        self.assertIsInstance(c.seen, dict)
        self.assertEqual(len(c), 2)
        self.assertEqual(str(c), "Counter(2)")
        self.assertEqual(type(c.items()), list)


CounterTest.__test__ = False
{RUNNER_SOURCE.strip()}
"""
COUNTER = """
class Counter:
    def __init__(self):
        self.seen = {}

    def add(self, key):
        self.seen[key] = self.seen.get(key, 0) + 1

    def get(self, key):
        return self.seen.get(key, 0)

    def items(self):
        return sorted(self.seen.items())

    def __len__(self):
        return len(self.seen)

    def __str__(self):
        return f"Counter({len(self.seen)})"
"""
CLASS_ATTACKS = {
    "always_equal_get": COUNTER.replace(
        "return self.seen.get(key, 0)",
        "class E:\n            def __eq__(self, o):\n                return True\n"
        "        return E()",
    ),
    "patch_unittest_result": (
        "import unittest\nunittest.TestResult.failures = property(lambda s: [], lambda s, v: None)\n"
        "unittest.TestResult.errors = property(lambda s: [], lambda s, v: None)\n"
        + COUNTER.replace("+ 1", "+ 7")
    ),
    "patch_assert_equal": (
        "import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\n"
        + COUNTER.replace("+ 1", "+ 7")
    ),
    "dict_subclass_equal": COUNTER.replace(
        "self.seen = {}",
        "class D(dict):\n            def __eq__(self, o):\n                return True\n"
        "        self.seen = D()",
    ).replace("+ 1", "+ 7"),
}


def _class_request(program: str) -> SampleRequest:
    case = CaseRequest(
        "case_0", "sandbox", statement=f"{RUNNER_NAME}(CounterTest, candidate, 'Counter')"
    )
    return SampleRequest(program, "Counter", (case,), test_setup=COUNTER_TESTS)


def _stdlib_closed_to_nobody() -> bool:
    """Without bubblewrap and without Landlock, a root harness's child cannot import from a
    standard library under a 0700 folder (a pyenv in /root): such a machine tests the bwrap
    mode only. With Landlock the child reads it through the view."""
    if os.getuid() != 0 or no_bwrap_guards().view:
        return False
    path = Path(sysconfig.get_path("stdlib"))
    return any(not os.stat(p).st_mode & stat.S_IXOTH for p in [path, *path.parents])


def test_class_checks_run_in_the_judge(use_bwrap: bool) -> None:
    if not use_bwrap and _stdlib_closed_to_nobody():
        pytest.skip("the standard library is not readable without bubblewrap or Landlock here")
    with Sandbox(SandboxSettings(use_bwrap=use_bwrap)) as sandbox:
        honest = sandbox.run(_class_request(COUNTER))
        assert honest.cases["case_0"].status == "ok", honest.cases
        for name, program in CLASS_ATTACKS.items():
            result = sandbox.run(_class_request(program))
            assert result.cases["case_0"].status == "assertion", (name, result.cases)


def test_judged_checks_in_real_sessions(pytester: pytest.Pytester, humaneval: dict) -> None:
    """The attacks through the plugin, under -n 0 and -n 2: every one fails, references pass."""
    rows = []
    for name, (task_id, body) in sorted(ATTACKS.items()):
        rows.append({"task_id": task_id, "completion": body, "sample_id": name})
    for task_id in ("HumanEval/32", "HumanEval/38", "HumanEval/50"):
        rows.append(
            {"task_id": task_id, "completion": humaneval[task_id].reference, "sample_id": "ref"}
        )
    samples = pytester.path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for workers in ("0", "2"):
        out = pytester.path / f"out{workers}"
        pytester.runpytest_subprocess(
            "--llm-eval", "humaneval", "--llm-samples", str(samples), "--llm-out", str(out),
            "-n", workers, "-p", "no:cacheprovider",
        )  # fmt: skip
        results = [
            json.loads(line) for line in Path(out / "results.jsonl").read_text().splitlines()
        ]
        by_sample = {(r["task_id"], r["sample_id"]): r["status"] for r in results}
        assert len(results) == len(rows)
        for (task_id, sample_id), status in by_sample.items():
            if sample_id == "ref":
                assert status == "passed", (task_id, workers)
            else:
                assert status != "passed", (sample_id, workers)


def test_a_check_that_swallows_errors_does_not_pass_when_the_candidate_dies(
    use_bwrap: bool,
) -> None:
    """A benchmark's bare ``except:`` around a call would swallow the bridge's error when the
    candidate's process ends in the middle of it; the judge then reports nothing at all."""
    swallowing = "for x in range(3):\n    try:\n        candidate(x)\n    except:\n        pass\n"
    cases = (CaseRequest("c", "sandbox", statement=swallowing, timeout_s=2.0),)
    dying = "def f(x):\n    import os\n    os._exit(0)\n"
    with Sandbox(SandboxSettings(use_bwrap=use_bwrap)) as sandbox:
        result = sandbox.run(SampleRequest(dying, "f", cases))
        assert result.cases["c"].status != "ok", result.cases
        honest = sandbox.run(SampleRequest("def f(x):\n    return x\n", "f", cases))
        assert honest.cases["c"].status == "ok", honest.cases


def test_a_forked_copy_never_answers_the_judge(humaneval: dict) -> None:
    """Only the child answers the judge's calls: a copy it forked, back in the bridge's loop,
    exits instead (as it never sends a frame). Here the copies would answer every call right
    while the child itself never returns: the case is the child's, a time-out, every run (a
    fork bomb's copies answered in a race, and 3 of 2283 judged cases came out otherwise)."""
    problem = humaneval["HumanEval/50"]  # decode_shift, checked in the judge over 100 strings
    body = (
        "    import os, time\n"
        "    if os.fork() == 0:\n"
        '        return "".join(chr(((ord(c) - 5 - ord("a")) % 26) + ord("a")) for c in s)\n'
        "    time.sleep(60)\n"
    )
    request = build_request(problem, _program(problem, body))
    request = SampleRequest(
        **{
            **request.__dict__,
            "cases": tuple(CaseRequest(**{**c.__dict__, "timeout_s": 1.0}) for c in request.cases),
            "budget_s": 10.0,
        }
    )
    with Sandbox(SandboxSettings()) as sandbox:
        result = sandbox.run(request)
    judged = [c.case_id for c in problem.cases if c.mode == "sandbox"]
    assert judged and all(result.cases[c].status == "timeout" for c in judged), result.cases
