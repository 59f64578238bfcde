"""harness.mining's parts alone: body splicing, the suite loader's errors, tiers, and the
property that a prompt never shows the target's body (hypothesis)."""

from __future__ import annotations

import json
import string
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.mining.context import build_prompt, read_docs, significant_lines
from harness.mining.inside_check import _mined_body
from harness.mining.model import FORMAT
from harness.mining.snapshot import pack, unpack
from harness.mining.source import find_targets, hole_module, read_modules, reference_body
from harness.mining.tiers import tier
from suites.jsonl_suite import JsonlSuiteError
from suites.mined import load_mined

SPEC = {"name": "area", "class": "Rect", "indent": "        "}


@pytest.mark.parametrize(
    "program",
    [
        # a continuation of the prompt
        'class Rect:\n    def area(self):\n        """Doc."""\n        w = self.w\n        return w * self.h\n',
        # a whole answer that repeats the stub first
        'class Rect:\n    def area(self):\n        """Doc."""\n\nclass Rect:\n    def area(self):\n'
        "        w = self.w\n        return w * self.h\n",
        # a top-level function of the same name, on one line after the colon
        "def area(self): w = self.w; return w * self.h\n",
    ],
)
def test_body_is_taken_from_the_answer_and_reindented(program: str) -> None:
    body = _mined_body(program, SPEC)
    assert body.splitlines()[-1] == "        return w * self.h" or "w = self.w; return" in body
    assert all(line.startswith("        ") for line in body.splitlines() if line)


def test_an_answer_without_the_function_fails_with_a_reason() -> None:
    with pytest.raises(AssertionError, match="defines no function 'area'"):
        _mined_body("x = 1\n", SPEC)
    with pytest.raises(AssertionError, match="not valid Python"):
        _mined_body("def area(:\n", SPEC)


def _line(**fields: object) -> dict:
    good = {
        "format": FORMAT, "task_id": "r/m:f", "prompt": "def f():\n", "entry_point": "f",
        "canonical_solution": "    return 1\n", "path": "m.py", "tier": "tier0",
        "repository_zip": pack({"m.py": b"def f():\n    return 1\n"}), "hole_line": 2,
        "indent": "    ", "tests": ["tests/test_m.py::test_f"],
    }  # fmt: skip
    good.update(fields)
    return good


@pytest.mark.parametrize(
    "fields, field, message",
    [
        ({"tier": "hard"}, "tier", "expected tier0"),
        ({"hole_line": 0}, "hole_line", "line number"),
        ({"tests": []}, "tests", "non-empty list"),
        ({"entry_point": "not a name"}, "entry_point", "not a Python name"),
        ({"indent": "x"}, "indent", "indentation"),
        ({"repository_zip": "%%%"}, "repository_zip", "not base64"),
        ({"prompt": 3}, "prompt", "non-empty string"),
    ],
)
def test_a_malformed_line_names_file_line_and_field(
    tmp_path: Path, fields: dict, field: str, message: str
) -> None:
    path = tmp_path / "suite.jsonl"
    path.write_text(
        json.dumps(_line(task_id="r/m:a")) + "\n\n" + json.dumps(_line(**fields)) + "\n"
    )
    with pytest.raises(JsonlSuiteError, match=message) as info:
        load_mined(path)
    assert (info.value.file, info.value.line, info.value.field) == (str(path), 3, field)
    assert str(info.value).startswith(f"{path}:3: {field}: ")


def test_tiers_are_splits(tmp_path: Path) -> None:
    path = tmp_path / "suite.jsonl"
    lines = [_line(task_id="a", tier="tier0"), _line(task_id="b", tier="tier2"), _line(task_id="c")]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    splits = load_mined(path)
    assert [p.task_id for p in splits["test"]] == ["a", "b", "c"]
    assert [p.task_id for p in splits["tier0"]] == ["a", "c"]
    assert [p.task_id for p in splits["tier2"]] == ["b"]
    assert all(c.weaker for p in splits["test"] for c in p.cases)


def test_tier_thresholds() -> None:
    assert tier({"lines": 2, "complexity": 1, "dependencies": 0, "checks": 1}) == "tier0"
    assert tier({"lines": 2, "complexity": 3, "dependencies": 2, "checks": 2}) == "tier1"
    assert tier({"lines": 15, "complexity": 6, "dependencies": 2, "checks": 3}) == "tier2"


_NAMES = st.text(string.ascii_lowercase, min_size=3, max_size=8)


@st.composite
def repositories(draw: st.DrawFn) -> tuple[dict[str, str], list[str]]:
    """A package whose target body is quoted by its README, its docs and a helper's docstring."""
    words = draw(st.lists(_NAMES, min_size=2, max_size=5, unique=True))
    body = [f"    value_{i}_{w} = len(text) * {i + 3} + {len(w)}" for i, w in enumerate(words)]
    body.append("    return " + " + ".join(f"value_{i}_{w}" for i, w in enumerate(words)))
    quoted = "\n".join(line.strip() for line in body)
    module = (
        '"""A module."""\n\n\n'
        f'def helper(text):\n    """Quotes the target:\n\n    {quoted.splitlines()[0]}\n    """\n    return text\n\n\n'
        f'def target(text):\n    """Compute a value."""\n    helper(text)\n'
        + "\n".join(body)
        + "\n"
    )
    readme = f"# pkg\n\nCall target(text) like this:\n\n    {quoted}\n"
    docs = f"API\n===\n\npkg.mod.target computes:\n\n{quoted}\n"
    files = {"pkg/__init__.py": "", "pkg/mod.py": module, "README.md": readme, "docs/api.md": docs}
    return files, body


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(repositories(), st.integers(min_value=64, max_value=2048))
def test_the_prompt_never_shows_the_reference_body(
    repository: tuple[dict[str, str], list[str]], budget: int
) -> None:
    files, body_lines = repository
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        modules = read_modules(root)
        info = modules["pkg/mod.py"]
        target = next(t for t in find_targets(info)[0] if t.name == "target")
        reference = reference_body(info.text, target)
        prompt = build_prompt(target, info, modules, read_docs(root), reference, "pkg", budget)
        original = info.text
        copy = unpack(pack({}, {target.path: hole_module(info.text, target)}))[target.path].decode()
    assert "\n".join(body_lines) + "\n" == reference.split("    helper(text)\n", 1)[1]
    for line in significant_lines(reference):
        assert line not in prompt
        # The sandbox's copy of the module has the body removed (the helper still quotes it).
        assert copy.count(line) == original.count(line) - 1
    assert prompt.rstrip().endswith('"""Compute a value."""')


def test_tests_most_about_the_function_come_first() -> None:
    from harness.mining.pipeline import _rank_tests

    info = read_modules(Path(__file__).parent / "fixtures" / "mining_repo")["minipkg/mathx.py"]
    gcd = next(t for t in find_targets(info)[0] if t.name == "gcd")
    doctests = {"minipkg/mathx.py::minipkg.mathx.gcd", "minipkg/other.py::minipkg.other.f"}
    tests = [
        "a/test_x.py::test_other",
        "minipkg/other.py::minipkg.other.f",
        "b/test_y.py::test_gcd_big",
    ]
    assert _rank_tests(gcd, [*tests, "minipkg/mathx.py::minipkg.mathx.gcd"], doctests) == [
        "minipkg/mathx.py::minipkg.mathx.gcd",
        "b/test_y.py::test_gcd_big",
        "a/test_x.py::test_other",
        "minipkg/other.py::minipkg.other.f",
    ]
