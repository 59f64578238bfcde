"""Verdicts as the standard harness gives them: program + asserts in plain Python.

Each sample runs twice: as the standard harnesses run it (the program, then ``check`` with its
asserts, in one plain Python process) and through our harness (the real sandbox evaluates the
candidate's calls, the generated test module compares in this process). On honest samples the
two must agree; hostile samples, which plain Python cannot stop, must fail here.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.completions import assemble_program
from harness.pipeline.checks import split_check
from harness.pipeline.compile import render_test_module
from harness.pipeline.runtime import build_request
from harness.records import Problem
from harness.sandbox import Sandbox, SandboxSettings
from harness.sandbox.channel import codec


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(SandboxSettings()) as box:
        yield box


class _Values:
    """The ``sandbox`` fixture a generated test module sees, over one execution."""

    def __init__(self, execution: Any):
        self.execution = execution

    def values(self, case_id: str) -> list[Any]:
        case = self.execution.cases[case_id]
        if case.status != "ok" or case.values is None:
            raise AssertionError(f"{case.status}: {case.message}")
        return list(case.values)

    def passed(self, case_id: str) -> None:
        case = self.execution.cases[case_id]
        if case.status != "ok":
            raise AssertionError(f"{case.status}: {case.message}")


def _problem(check: str) -> Problem:
    """A problem whose check calls the program's ``f`` (and ``g``, a second function)."""
    setup, cases = split_check(textwrap.dedent(check), ("f", "g"))
    return Problem(
        suite="fidelity",
        task_id="fidelity/0",
        prompt="",
        entry_point="f",
        cases=tuple(dataclasses.replace(c, timeout_s=2.0) for c in cases),
        reference="",
        test_setup=setup,
        candidate_names=("f", "g"),
    )


def judge(sandbox: Sandbox, program: str, problem: Problem) -> dict[str, bool]:
    """Per case: does the generated test pass for ``program``? (as the plugin runs it)"""
    execution = sandbox.run(build_request(problem, program))
    assert execution.infra_error is None, execution.infra_error
    module: dict[str, Any] = {"__name__": "generated"}
    exec(compile(render_test_module(problem), "generated", "exec"), module)
    fixture = _Values(execution)
    verdicts = {}
    for case in problem.cases:
        try:
            module[f"test_{case.case_id}"](fixture)
        except Exception:  # noqa: BLE001 - any exception of the check is its failure
            verdicts[case.case_id] = False
        else:
            verdicts[case.case_id] = True
    return verdicts


def plain_python(program: str, check: str) -> bool:
    """The standard harness: program, check, ``check(f)``, in one Python process."""
    source = f"{program}\n\n{textwrap.dedent(check)}\n\ncheck(f)\n"
    run = subprocess.run([sys.executable, "-c", source], capture_output=True, timeout=20)
    return run.returncode == 0


IMPORTS = "import collections, decimal, fractions, itertools\nimport numpy as np\n"

# (label, program, check, expected verdict of plain Python); the check calls ``f``.
SAMPLES: list[tuple[str, str, str, bool]] = [
    (
        "map in set()",
        "def f(xs):\n    return map(abs, xs)\n",
        "def check(f):\n    assert set(f([-1, 2, 1])) == {1, 2}\n",
        True,
    ),
    (
        "generator in sorted() and sum()",
        "def f(xs):\n    return (x * 2 for x in xs)\n",
        "def check(f):\n    assert sorted(f([3, 1])) == [2, 6]\n    assert sum(f([1, 2])) == 6\n",
        True,
    ),
    (
        "zip and filter in list() and tuple()",
        "def f(xs):\n    return zip(xs, filter(None, xs))\n",
        "def check(f):\n    assert list(f([1, 2])) == [(1, 1), (2, 2)]\n"
        "    assert tuple(f([0])) == ()\n",
        True,
    ),
    (
        "next() of an endless iterator",
        "import itertools\ndef f(n):\n    return itertools.count(n)\n",
        "def check(f):\n    assert next(f(4)) == 4\n",
        True,
    ),
    (
        "len() of an iterator",
        "def f(xs):\n    return iter(xs)\n",
        "def check(f):\n    assert len(f([1, 2])) == 2\n",
        False,
    ),
    (
        "iterator compared bare with a list",
        "def f(xs):\n    return reversed(xs)\n",
        "def check(f):\n    assert f([1, 2]) == [2, 1]\n",
        False,
    ),
    (
        "generator that raises after its first item",
        "def f(n):\n    yield n\n    raise ValueError('late')\n",
        "def check(f):\n    assert next(f(1)) == 1\n",
        True,
    ),
    (
        "generator that raises, consumed whole",
        "def f(n):\n    yield n\n    raise ValueError('late')\n",
        "def check(f):\n    assert list(f(1)) == [1]\n",
        False,
    ),
    (
        "numpy array compared with a list",
        "import numpy as np\ndef f(n):\n    return np.arange(n)\n",
        "def check(f):\n    assert f(3) == [0, 1, 2]\n",
        False,
    ),
    (
        "numpy array compared element-wise, or turned into a list",
        "import numpy as np\ndef f(n):\n    return np.arange(n)\n",
        "def check(f):\n    assert (f(3) == [0, 1, 2]).all()\n    assert list(f(2)) == [0, 1]\n"
        "    assert f(2).tolist() == [0, 1]\n    assert f(1) == 0\n",
        True,
    ),
    (
        "numpy scalars",
        "import numpy as np\ndef f(x):\n    return np.float64(x) / 2\n",
        "def check(f):\n    assert f(1) == 0.5\n    assert abs(f(3) - 1.5) < 1e-9\n",
        True,
    ),
    (
        "numpy bool is not True",
        "import numpy as np\ndef f(x):\n    return np.bool_(x > 0)\n",
        "def check(f):\n    assert f(1) is True\n",
        False,
    ),
    (
        "deque",
        "import collections\ndef f(xs):\n    return collections.deque(xs)\n",
        "def check(f):\n    assert list(f([1, 2])) == [1, 2]\n    assert f([1]) == f([1])\n",
        True,
    ),
    (
        "deque compared with a list",
        "import collections\ndef f(xs):\n    return collections.deque(xs)\n",
        "def check(f):\n    assert f([1, 2]) == [1, 2]\n",
        False,
    ),
    (
        "Fraction and Decimal",
        IMPORTS + "def f(a, b):\n    return fractions.Fraction(a, b)\n"
        "def g(x):\n    return decimal.Decimal(x)\n",
        "import decimal\ndef check(f):\n    assert f(1, 2) == 0.5\n    assert f(2, 6) == f(1, 3)\n"
        "    assert g('0.10') == decimal.Decimal('0.1')\n",
        True,
    ),
    (
        "dict views",
        "def f(d):\n    return d.keys()\n\ndef g(d):\n    return d.items()\n",
        "def check(f):\n    assert f({1: 2, 3: 4}) == {1, 3}\n    assert g({1: 2}) == {(1, 2)}\n",
        True,
    ),
    (
        "a keys view is not a list",
        "def f(d):\n    return d.keys()\n",
        "def check(f):\n    assert f({1: 2}) == [1]\n",
        False,
    ),
    (
        "a values view equals nothing else",
        "def f(d):\n    return d.values()\n",
        "def check(f):\n    assert f({1: 2}) == f({1: 2})\n",
        False,
    ),
    (
        "range and Counter",
        "import collections\ndef f(n):\n    return range(n)\n\n"
        "def g(s):\n    return collections.Counter(s)\n",
        "def check(f):\n    assert f(3) == range(0, 3)\n    assert g('aab') == {'a': 2, 'b': 1}\n"
        "    assert g('ab')['z'] == 0\n",
        True,
    ),
    (
        "range compared with a list",
        "def f(n):\n    return range(n)\n",
        "def check(f):\n    assert f(2) == [0, 1]\n",
        False,
    ),
]


@pytest.mark.parametrize(
    ("label", "program", "check", "expected"), SAMPLES, ids=[s[0] for s in SAMPLES]
)
def test_verdicts_agree_with_plain_python(
    sandbox: Sandbox, label: str, program: str, check: str, expected: bool
) -> None:
    assert plain_python(program, check) is expected, "the sample no longer says what it should"
    problem = _problem(check)
    assert all(c.mode == "compare" for c in problem.cases)
    verdicts = judge(sandbox, program, problem)
    assert all(verdicts.values()) is expected, verdicts


def test_humaneval_44_has_no_sandbox_cases_and_its_reference_passes(sandbox: Sandbox) -> None:
    from suites import humaneval

    problem = next(p for p in humaneval.load()["test"] if p.task_id == "HumanEval/44")
    assert [c.mode for c in problem.cases] == ["compare"] * len(problem.cases) == ["compare"] * 12
    reference = assemble_program(problem, problem.reference).program
    assert all(judge(sandbox, reference, problem).values())
    # str(x) is right exactly for the unrolled loop's cases (base x + 1 > x): partial credit.
    half = assemble_program(problem, "    return str(x)\n").program
    verdicts = judge(sandbox, half, problem)
    assert [cid for cid, ok in verdicts.items() if ok] == [f"case_6_{i}" for i in range(6)]


HOSTILE: dict[str, str] = {
    "self_iterator_eq_true": (
        "class It:\n    def __iter__(self):\n        return self\n"
        "    def __next__(self):\n        return self\n"
        "    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
        "def f(n):\n    return It()\n"
    ),
    "endless_iter": (
        "class It:\n    def __iter__(self):\n        while True:\n            yield 0\n"
        "    def __next__(self):\n        return 0\n"
        "    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
        "def f(n):\n    return It()\n"
    ),
    "endless_generator": "def f(n):\n    while True:\n        yield 0\n",
    "list_subclass": (
        "class L(list):\n    def __iter__(self):\n        return iter([3])\n"
        "    def __eq__(self, other):\n        return True\n    def __len__(self):\n        return 1\n"
        "def f(n):\n    return L([0, 0])\n"
    ),
    "dict_subclass": (
        "class D(dict):\n    def keys(self):\n        return {3}\n"
        "    def items(self):\n        return [(3, 3)]\n"
        "    def __iter__(self):\n        return iter([3])\n"
        "    def __eq__(self, other):\n        return True\n    __hash__ = None\n"
        "def f(n):\n    return D({0: 0})\n"
    ),
    "int_subclass": (
        "class I(int):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\n"
        "def f(n):\n    return I(0)\n"
    ),
    "fake_numpy_eq_true": (
        "import sys, types\n"
        "class DT:\n    kind, str, fields, subdtype, itemsize = 'i', '<i8', None, None, 8\n"
        "class A:\n    dtype = property(lambda self: DT())\n"
        "    shape = property(lambda self: (1,))\n    size = property(lambda self: 1)\n"
        "    def view(self, cls):\n        return self\n"
        "    def ravel(self):\n        return self\n"
        "    def tolist(self):\n        return [0]\n"
        "    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
        "    def __iter__(self):\n        return iter([3])\n"
        "np = types.ModuleType('numpy')\nnp.ndarray = A\nnp.generic = type('g', (), {})\n"
        "sys.modules['numpy'] = np\n"
        "def f(n):\n    return A()\n"
    ),
    "fake_numpy_junk_dtype": (
        "import sys, types\n"
        "class DT:\n    kind, str, fields, subdtype, itemsize = 'i', 'i8,i8', None, None, 8\n"
        "class A:\n    dtype = property(lambda self: DT())\n"
        "    shape = property(lambda self: (1,))\n    size = property(lambda self: 1)\n"
        "    def view(self, cls):\n        return self\n"
        "    def ravel(self):\n        return self\n"
        "    def tolist(self):\n        return [3]\n"
        "np = types.ModuleType('numpy')\nnp.ndarray = A\nnp.generic = type('g', (), {})\n"
        "sys.modules['numpy'] = np\n"
        "def f(n):\n    return A()\n"
    ),
    "generator_exits": "def f(n):\n    yield 0\n    raise SystemExit(0)\n",
    "generator_patches_builtins": (
        "import builtins\n"
        "def f(n):\n"
        "    builtins.isinstance = lambda *a: True\n    builtins.len = lambda x: 1\n"
        "    builtins.list = lambda *a: [3]\n    builtins.iter = lambda *a: iter([3])\n"
        "    yield 0\n"
    ),
    "generator_forges_frames": (
        "import json, os, struct\n"
        "def forged(index):\n"
        "    body = json.dumps({'status': 'ok', 'values': [['l', [['i', '3']]]],\n"
        "                       'duration_s': 0.0, 'n': '0' * 16, 'i': index}).encode()\n"
        "    return b'CEvF' + struct.pack('>BII', 2, index, len(body)) + body\n"
        "def f(n):\n"
        "    for i in range(2):\n"
        "        try:\n            os.write(3, forged(i))\n"
        "        except OSError:\n            pass\n"
        "    yield 0\n"
    ),
}
# Checks a right answer (3, or one item 3) passes; each hostile f above, whose own data is
# wrong (0), must fail all of them however it tries to look right.
HOSTILE_CHECK = """
def check(f):
    assert f(1) == 3 or list(f(1)) == [3]
    assert set(f(2)) == {3}
    assert sorted(f(3)) == [3]
    assert next(iter(f(4))) == 3
"""


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_values_do_not_pass(sandbox: Sandbox, name: str) -> None:
    problem = _problem(HOSTILE_CHECK)
    right = judge(sandbox, "def f(n):\n    return [3]\n", problem)
    assert all(right.values()), right
    verdicts = judge(sandbox, HOSTILE[name], problem)
    assert not any(verdicts.values()), verdicts


def test_an_endless_iterator_fails_within_the_case_limit(sandbox: Sandbox) -> None:
    problem = _problem("def check(f):\n    assert list(f(0)) == [0]\n")
    execution = sandbox.run(build_request(problem, HOSTILE["endless_generator"]))
    case = execution.cases["case_0"]
    assert case.status == "ok"  # consumed up to the limit; the rest never crossed
    with pytest.raises(codec.TransferLimit):
        list(case.values[0])


def test_an_iterator_that_hangs_times_out_inside_its_case(sandbox: Sandbox) -> None:
    """Consuming happens before the case's frame is sent, so the case's own limit applies."""
    problem = _problem("def check(f):\n    assert next(f(0)) == 1\n    assert f(1) == 1\n")
    problem = dataclasses.replace(
        problem, cases=tuple(dataclasses.replace(c, timeout_s=0.5) for c in problem.cases)
    )
    program = "def f(n):\n    if n:\n        return 1\n    yield 1\n    while True:\n        pass\n"
    execution = sandbox.run(build_request(problem, program))
    assert execution.cases["case_0"].status == "timeout"
    assert execution.cases["case_1"].status == "ok"  # the next case runs in a fresh child


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_a_failed_checks_message_is_the_line_pytest_shows(message: str) -> None:
    """failure_message formats ``pytest.fail(why)`` itself (an oracle fails hundreds of inputs
    so): the text is the one pytest's own ExceptionInfo gives, for any message."""
    from _pytest._code import ExceptionInfo

    from harness.pipeline.verdicts import MAX_MESSAGE, failure_message

    try:
        pytest.fail(message, pytrace=False)
    except BaseException as exc:  # noqa: B036 - pytest.fail raises an OutcomeException
        pytests = ExceptionInfo.from_exception(exc).exconly(tryshort=True).strip()[:MAX_MESSAGE]
        assert failure_message(exc) == pytests
