"""The judge trusts nothing the candidate hands it (harness/sandbox/inside/remote.py).

Judged checks (ClassEval's unittest classes, HumanEval's un-splittable asserts) run in the
judge, a process of their own; the candidate's objects reach them only through the bridge.
These attacks passed when the judge resolved a candidate's class or function to its own copy
and called it, counted a skip raised while a test ran as no failure, and let a candidate's
``__sub__``/``__rsub__`` decide what ``assertAlmostEqual`` concluded. Each runs in the real
sandbox, in both modes; the honest class passes every time. A hypothesis strategy builds
hostile objects (dunders that lie, raise, recurse, change between calls, or are trusted
callables) and no comparison of one with a trusted value ever passes.
"""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings
from suites.classeval import RUNNER_NAME, RUNNER_SOURCE


@pytest.fixture(scope="module")
def sandbox(use_bwrap: bool):
    with Sandbox(SandboxSettings(use_bwrap=use_bwrap)) as box:
        yield box


# A ClassEval-shaped task: the benchmark's unittest class, the candidate's Shape class.
SHAPE_TESTS = f"""
import os
import unittest


class ShapeTest(unittest.TestCase):
    def test_area(self):
        self.assertAlmostEqual(Shape(2.0).area(), 12.566370614359172)

    def test_where(self):
        # The candidate's code runs in its own process, never in the judge's.
        self.assertNotEqual(Shape(1.0).owner(), os.getpid())

    def test_checked(self):
        shape = Shape(3.0)
        if not shape.ready():
            self.skipTest("the benchmark's own runtime skip")  # decided by the candidate
        self.assertEqual(shape.radius, 3.0)

    def test_scaled(self):
        self.assertEqual(Shape(1.0).scaled(2, 0.5), 2.5)


ShapeTest.__test__ = False
{RUNNER_SOURCE.strip()}
"""
HONEST = """
import math, os


class Shape:
    def __init__(self, radius):
        self.radius = radius

    def area(self):
        return math.pi * self.radius ** 2

    def owner(self):
        return os.getpid()

    def ready(self):
        return True

    def scaled(self, k, offset):
        return self.radius * k + offset
"""
# A method that *is* a trusted callable: the judge used to resolve it by name and call its
# own copy (the pid was the judge's, so this honest test failed); now the child calls it.
BY_NAME = HONEST.replace(
    "    def owner(self):\n        return os.getpid()\n",
    "    owner = staticmethod(os.getpid)\n",
)
# Each passed ShapeTest with the bridge as it was; none knows the answers.
ATTACKS = {
    # A skip raised while the test runs (the candidate said "not ready") counted as a pass.
    "runtime_skip": HONEST.replace("return True", "return False").replace(
        "self.radius = radius", "self.radius = -1"
    ),
    # assertAlmostEqual's first - second asked the candidate's __rsub__/__sub__.
    "rsub_zero": """
import os


class Near:
    def __sub__(self, other):
        return 0.0

    __rsub__ = __sub__

    def __eq__(self, other):
        return False

    __hash__ = object.__hash__


class Shape:
    def __init__(self, radius):
        self.radius = radius

    def area(self):
        return Near()

    def owner(self):
        return os.getpid()

    def ready(self):
        return True

    def scaled(self, k, offset):
        return self.radius * k + offset
""",
    # The benchmark's helper by name: skipTest of the judge's TestCase, bound to the test.
    "skip_by_name": HONEST.replace(
        "    def scaled(self, k, offset):\n        return self.radius * k + offset\n",
        "    import unittest\n    scaled = staticmethod(unittest.TestCase.skipTest)\n",
    ),
}


def _request(program: str, test: str) -> SampleRequest:
    case = CaseRequest(
        "case", "sandbox", statement=f"{RUNNER_NAME}({test}, candidate, 'Shape')", timeout_s=10
    )
    return SampleRequest(program, "Shape", (case,), test_setup=SHAPE_TESTS, budget_s=20)


def _one_test(name: str) -> str:
    """A TestCase class of ShapeTest's one method ``name`` (each attack is judged alone)."""
    return f"type('Only', (ShapeTest,), {{'__test__': False, **{{k: None for k in dir(ShapeTest) if k.startswith('test_') and k != {name!r}}}}})"


def test_the_honest_class_passes_every_test(sandbox: Sandbox) -> None:
    result = sandbox.run(_request(HONEST, "ShapeTest"))
    assert result.cases["case"].status == "ok", result.cases["case"]


@pytest.mark.parametrize(
    ("attack", "test"),
    [
        ("runtime_skip", "test_checked"),
        ("rsub_zero", "test_area"),
        ("skip_by_name", "test_scaled"),
    ],
)
def test_an_attack_on_the_judge_fails_its_test(sandbox: Sandbox, attack: str, test: str) -> None:
    result = sandbox.run(_request(ATTACKS[attack], _one_test(test)))
    case = result.cases["case"]
    assert case.status == "assertion", (attack, case)
    assert test in case.message or "1 of 1" in case.message, case.message


def test_a_trusted_callable_of_the_candidates_runs_in_its_process(sandbox: Sandbox) -> None:
    result = sandbox.run(_request(BY_NAME, _one_test("test_where")))
    assert result.cases["case"].status == "ok", result.cases["case"]


def test_a_skip_the_benchmark_wrote_is_still_a_skip(sandbox: Sandbox) -> None:
    skipping = SHAPE_TESTS.replace(
        "    def test_scaled(self):",
        "    @unittest.skip('the benchmark skips it')\n    def test_scaled(self):",
    )
    program = HONEST.replace("return self.radius * k + offset", "return -1")
    case = CaseRequest(
        "case", "sandbox", statement=f"{RUNNER_NAME}(ShapeTest, candidate, 'Shape')", timeout_s=10
    )
    request = SampleRequest(program, "Shape", (case,), test_setup=skipping, budget_s=20)
    assert sandbox.run(request).cases["case"].status == "ok"


# -- hostile objects ---------------------------------------------------------------------------
DUNDERS = ["__eq__", "__ne__", "__sub__", "__rsub__", "__add__", "__radd__", "__abs__",
           "__lt__", "__le__", "__gt__", "__ge__", "__float__", "__hash__", "__bool__",
           "__round__", "__neg__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__"]  # fmt: skip
BEHAVIOURS = {
    "true": "return True",
    "zero": "return 0",
    "five": "return 5",
    "self": "return self",
    "raise": "raise ValueError('no')",
    "recurse": "return getattr(self, {name!r})(*a)",
    "flip": "type(self).n = getattr(type(self), 'n', 0) + 1\n        return type(self).n % 2 == 1",
    "trusted": "import os\n        return os.getpid",
    "exit": "raise SystemExit(0)",
}


@st.composite
def hostile_classes(draw: st.DrawFn) -> str:
    """The source of a class whose dunders lie, raise, recurse, alternate, or hand back a
    trusted callable; ``make()`` returns an instance (or, sometimes, a trusted callable)."""
    chosen = draw(st.dictionaries(st.sampled_from(DUNDERS), st.sampled_from(sorted(BEHAVIOURS))))
    body = "".join(
        f"    def {name}(self, *a):\n        {BEHAVIOURS[kind].format(name=name)}\n"
        for name, kind in chosen.items()
    )
    made = draw(st.sampled_from(["Hostile()", "Hostile", "__import__('os').getpid", "print"]))
    return f"class Hostile:\n{body or '    pass'}\n\ndef make(x):\n    return {made}\n"


# Each looks right only for the value 5 (or the judge's own pid); none may pass.
CHECKS = [
    "assert candidate(1) == 5",
    "assert 5 == candidate(1)",
    "assert abs(candidate(1) - 5) < 1e-6",
    "assert abs(5 - candidate(1)) < 1e-6",
    "assert round(abs(5 - candidate(1)), 7) == 0",  # assertAlmostEqual's own test
    "assert [candidate(1)] == [5]",
    "assert {'v': candidate(1)} == {'v': 5}",
    "assert candidate(1) in [5]",
    "assert not (candidate(1) != 5) and candidate(1) == 5",
    "assert candidate(1) * 1 == 5",
    "assert 0 + candidate(1) == 5",
    "assert -candidate(1) == -5",
    "import os\nassert candidate(1)() == os.getpid()",
    "import math\nassert math.isclose(candidate(1), 5)",
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=hostile_classes())
def test_no_hostile_object_passes_a_comparison_with_a_trusted_value(source: str) -> None:
    cases = tuple(
        CaseRequest(f"c{i}", "sandbox", statement=check, timeout_s=5)
        for i, check in enumerate(CHECKS)
    )
    with _hostile_sandbox() as box:
        result = box.run(SampleRequest(textwrap.dedent(source), "make", cases, budget_s=60))
    passed = [CHECKS[int(k[1:])] for k, c in result.cases.items() if c.status == "ok"]
    assert passed == [], (source, passed)


_BOX: dict[str, Sandbox] = {}


class _hostile_sandbox:  # noqa: N801 - a context manager that keeps one warm sandbox
    def __enter__(self) -> Sandbox:
        if "box" not in _BOX:
            _BOX["box"] = Sandbox(SandboxSettings())
        return _BOX["box"]

    def __exit__(self, *exc: object) -> None:
        pass


def teardown_module() -> None:
    for box in _BOX.values():
        box.close()


def test_an_honest_five_passes_every_check(sandbox: Sandbox) -> None:
    """The checks above are honest: the plain value 5 (and the judge's pid) pass them."""
    program = "import os\ndef make(x):\n    return 5\n"
    cases = tuple(
        CaseRequest(f"c{i}", "sandbox", statement=check, timeout_s=5)
        for i, check in enumerate(CHECKS)
        if "getpid" not in check
    )
    result = sandbox.run(SampleRequest(program, "make", cases, budget_s=60))
    assert all(c.status == "ok" for c in result.cases.values()), result.cases


def test_the_attacks_fail_through_evaluate(sandbox_mode: str, tmp_path) -> None:
    """The same task as a suite problem, through the one pipeline users run (evaluate())."""
    from harness.evaluate import evaluate
    from harness.records import CheckCase, Problem, Sample

    problem = Problem(
        suite="attack",
        task_id="attack/shape",
        prompt="",
        entry_point="Shape",
        cases=(
            CheckCase(
                "case_0",
                "ShapeTest",
                "sandbox",
                statement=f"{RUNNER_NAME}(ShapeTest, candidate, 'Shape')",
            ),
        ),
        reference=HONEST,
        test_setup=SHAPE_TESTS,
        candidate_names=("Shape",),
    )
    samples = [Sample(problem.task_id, HONEST, "honest")]
    samples += [Sample(problem.task_id, code, name) for name, code in ATTACKS.items()]
    rows = evaluate([problem], samples, out_dir=tmp_path)
    assert {r["sample_id"]: r["passed"] for r in rows} == {
        s.sample_id: s.sample_id == "honest" for s in samples
    }
