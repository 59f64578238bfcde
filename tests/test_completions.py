"""Completion → program: kinds on realistic answers, markdown extraction, odd input."""

from __future__ import annotations

import ast
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.completions import (
    _parsed_defines,
    _scanned_blocks,
    assemble_program,
    code_blocks,
    defines_name,
    extract_code,
    prompt_context,
)
from harness.records import Problem

PROMPT = textwrap.dedent(
    '''\
    from typing import List


    def has_close_elements(numbers: List[float], threshold: float) -> bool:
        """ Check if any two numbers are closer than the threshold.
        >>> has_close_elements([1.0, 2.0, 3.0], 0.5)
        False
        """
    '''
)
BODY = (
    "    for i, a in enumerate(numbers):\n"
    "        for b in numbers[i + 1 :]:\n"
    "            if abs(a - b) < threshold:\n"
    "                return True\n"
    "    return False\n"
)
SOLUTION = textwrap.dedent(
    """\
    from typing import List

    def has_close_elements(numbers: List[float], threshold: float) -> bool:
        nums = sorted(numbers)
        return any(b - a < threshold for a, b in zip(nums, nums[1:]))
    """
)


def he_problem(prompt: str = PROMPT, entry_point: str = "has_close_elements", **kw) -> Problem:
    return Problem(
        suite="humaneval",
        task_id="HumanEval/0",
        prompt=prompt,
        entry_point=entry_point,
        cases=(),
        reference=prompt + BODY,
        **kw,
    )


def run_entry(program: str, entry_point: str = "has_close_elements"):
    namespace: dict = {}
    exec(compile(program, "<program>", "exec"), namespace)
    return namespace[entry_point]


def test_continuation_body_is_appended_to_the_prompt() -> None:
    assembled = assemble_program(he_problem(), BODY)
    assert assembled.kind == "continuation"
    assert assembled.program == PROMPT + BODY
    assert assembled.code == BODY
    assert run_entry(assembled.program)([1.0, 1.05], 0.1) is True


def test_whole_function_is_a_solution_and_keeps_the_prompt_imports() -> None:
    without_import = SOLUTION.replace("from typing import List\n", "")
    assembled = assemble_program(he_problem(), without_import)
    assert assembled.kind == "solution"
    assert assembled.program.startswith("from typing import List\n")
    assert "def has_close_elements" in assembled.program
    # The prompt's stub is not repeated: only one definition of the entry point.
    assert assembled.program.count("def has_close_elements") == 1
    assert run_entry(assembled.program)([1.0, 3.0], 0.5) is False


def test_markdown_answer_with_prose_and_two_blocks() -> None:
    answer = (
        "Sure! Here is how to use it:\n\n"
        "```python\nprint(has_close_elements([1.0, 2.0], 0.5))\n```\n\n"
        "And here is the implementation:\n\n"
        f"```python\n{SOLUTION}```\n\n"
        "It runs in O(n log n) time because of the sort."
    )
    assembled = assemble_program(he_problem(), answer)
    assert assembled.kind == "markdown"
    assert assembled.code == SOLUTION
    assert "Sure!" not in assembled.program
    assert run_entry(assembled.program)([1.0, 1.2], 0.5) is True


def test_markdown_continuation_block() -> None:
    assembled = assemble_program(he_problem(), f"```python\n{BODY}```")
    assert assembled.kind == "markdown"
    assert assembled.program == PROMPT + BODY


def test_block_choice_first_python_then_longest() -> None:
    text = "```bash\npip install x\n```\n```py\nx = 1\n```\n```python\ny = 2\n```"
    assert extract_code(text, "f") == "x = 1\n"
    text = "```\nshort\n```\n```text\na much longer block\n```"
    assert extract_code(text, None) == "a much longer block\n"


def test_unclosed_fence_runs_to_the_end() -> None:
    blocks = code_blocks("intro\n```python\ndef f():\n    return 1")
    assert len(blocks) == 1 and not blocks[0].closed
    assert extract_code("```python\ndef f():\n    return 1", "f") == "def f():\n    return 1\n"


def test_program_setup_comes_first() -> None:
    problem = he_problem(program_setup="import math")
    assert assemble_program(problem, BODY).program.startswith("import math\n" + PROMPT)
    assert assemble_program(problem, SOLUTION).program.startswith("import math\n")


def test_text_prompt_is_never_prepended() -> None:
    problem = he_problem(prompt="Write a function to add two numbers.", entry_point="add")
    problem = Problem(**{**problem.__dict__, "metadata": {"prompt_kind": "text"}})
    assert assemble_program(problem, "def add(a, b):\n    return a + b\n").program == (
        "def add(a, b):\n    return a + b\n"
    )
    # A fragment for a prose prompt is run as is; the sandbox reports what happens.
    assert assemble_program(problem, "return 1").program == "return 1"


def test_prompt_helpers_are_kept_for_a_solution() -> None:
    prompt = 'def is_palindrome(s: str) -> bool:\n    return s == s[::-1]\n\n\ndef make_palindrome(s: str) -> str:\n    """doc"""\n'
    solution = "def make_palindrome(s):\n    return s if is_palindrome(s) else s + s[::-1]\n"
    assembled = assemble_program(he_problem(prompt, "make_palindrome"), solution)
    assert assembled.kind == "solution"
    assert run_entry(assembled.program, "make_palindrome")("ab") == "abba"
    assert "is_palindrome" in prompt_context(prompt, "make_palindrome")


def test_empty_completion_is_a_continuation() -> None:
    assembled = assemble_program(he_problem(), "")
    assert assembled.kind == "continuation" and assembled.program == PROMPT


def test_crlf_and_tabs() -> None:
    crlf = BODY.replace("\n", "\r\n")
    assembled = assemble_program(he_problem(), crlf)
    assert "\r" not in assembled.program
    assert run_entry(assembled.program)([1.0, 1.05], 0.1) is True
    tabbed = "\tfor i, a in enumerate(numbers):\n\t\tif a > threshold:\n\t\t\treturn True\n\treturn False\n"
    program = assemble_program(he_problem(), tabbed).program
    assert run_entry(program)([1.0, 2.0], 1.5) is True
    # A whole solution indented with tabs only is valid Python and is left alone.
    tab_solution = "def has_close_elements(numbers, threshold):\n\treturn False\n"
    assert assemble_program(he_problem(), tab_solution).code == tab_solution


def test_invalid_python_still_gives_a_program() -> None:
    assembled = assemble_program(he_problem(), "    return (((\n")
    assert assembled.kind == "continuation"
    with pytest.raises(SyntaxError):
        ast.parse(assembled.program)
    broken_solution = "def has_close_elements(numbers, threshold)\n    return False\n"
    assert assemble_program(he_problem(), broken_solution).kind == "solution"


def test_one_megabyte_completion() -> None:
    big = "    x = 1\n" * 100_000 + "    return False\n"
    assembled = assemble_program(he_problem(), big)
    assert assembled.kind == "continuation" and len(assembled.program) > 1_000_000
    fenced = "```python\n" + "y = 0\n" * 170_000 + "```"
    assert len(assemble_program(he_problem(), fenced).code) > 1_000_000


@pytest.mark.parametrize(
    "code, defines",
    [
        ("def f(x):\n    return x\n", True),
        ("async def f():\n    pass\n", True),
        ("class f:\n    pass\n", True),
        ("f = lambda x: x\n", True),
        ("f: int = 3\n", True),
        ("def g():\n    def f():\n        pass\n", False),
        ("    return f(x)\n", False),
        ("def f(x)\n    return x\n", True),  # does not parse: line-based fallback
        ("f == 3 (\n", False),
    ],
)
def test_defines_name(code: str, defines: bool) -> None:
    assert defines_name(code, "f") is defines


def test_a_name_spelled_with_compatibility_letters_is_still_defined() -> None:
    # Python reads identifiers in NFKC: "\ufb01nd" (with the fi ligature) binds "find", though
    # the text never holds "find"; the quick look for the name must not decide this one.
    code = "\ufb01nd = lambda xs: xs\n"
    assert "find" not in code
    assert defines_name(code, "find") is True
    assert assemble_program(he_problem(entry_point="find"), code).kind == "solution"


# Python-like text: the words a definition is made of, names among them, any layout.
PYTHONISH = st.lists(
    st.sampled_from(
        [
            "def ",
            "async ",
            "class ",
            "f",
            "g",
            "find",
            "\ufb01nd",
            "fx",
            " = ",
            ": int",
            "(",
            ")",
            ":",
            "\n",
            "    ",
            "\t",
            "import ",
            "from m import ",
            " as ",
            ",",
            "lambda x: x",
            "#",
            "return ",
            "'f'",
            "```",
            "~~~",
            "python",
            "\r\n",
            "x",
        ]
    ),
    max_size=40,
).map("".join)
ANY_TEXT = st.one_of(PYTHONISH, st.text(max_size=300))


@settings(max_examples=400, deadline=None)
@given(code=ANY_TEXT, name=st.sampled_from(["f", "find", "fx", "g"]))
def test_the_quick_look_for_a_definition_agrees_with_parsing(code: str, name: str) -> None:
    # Each sample's completion is asked whether it defines the entry point; most never name
    # it, and are answered without a parse. The answer must be the parse's.
    assert defines_name(code, name) is _parsed_defines(code, name)


@settings(max_examples=400, deadline=None)
@given(text=ANY_TEXT)
def test_the_quick_look_for_fences_agrees_with_the_scan(text: str) -> None:
    assert code_blocks(text) == _scanned_blocks(text)


PROSE = st.text(st.characters(blacklist_characters="`", blacklist_categories=("Cs",)), max_size=200)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=PROSE, after=PROSE, tag=st.sampled_from(["python", "py", "", "Python3"]))
def test_solution_in_any_prose_comes_back_unchanged(before: str, after: str, tag: str) -> None:
    text = f"{before}\n```{tag}\n{SOLUTION}```\n{after}"
    assert extract_code(text, "has_close_elements") == SOLUTION
    assembled = assemble_program(he_problem(), text)
    assert assembled.kind == "markdown" and assembled.code == SOLUTION


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=400), entry=st.sampled_from(["f", "has_close_elements", ""]))
def test_arbitrary_text_never_crashes(text: str, entry: str) -> None:
    assembled = assemble_program(he_problem(entry_point=entry or "f"), text)
    assert assembled.kind in ("continuation", "solution", "markdown")
    assert isinstance(assembled.program, str)
    assert isinstance(extract_code(text, entry or None), str)


@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("`~\n pyth\r\tdef f():=")), max_size=300))
def test_fence_heavy_text_never_crashes(text: str) -> None:
    assert isinstance(assemble_program(he_problem(entry_point="f"), text).program, str)
