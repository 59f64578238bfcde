"""Offline completion pairs: splitting references into levels, building and loading a data set."""

from __future__ import annotations

import ast
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.coder.pairs import (
    build_pairs,
    bundled_snippets,
    load_pairs,
    problem_of,
    split_reference,
)

REFERENCE = '''from typing import List


def total(xs: List[int]) -> int:
    """Sum of xs."""
    result = 0
    for x in xs:
        result += x
    return result
'''


def test_levels_of_a_reference_split_its_function_where_the_issue_says():
    levels = split_reference(REFERENCE, "total")
    assert levels[0] == (REFERENCE.rsplit("    return", 1)[0], "    return result\n")
    head, body = levels[2]
    assert head.endswith('"""Sum of xs."""\n') and body.startswith("    result = 0\n")
    head1, rest1 = levels[1]
    assert head1.endswith("    result = 0\n")  # a third of four body lines: the first one
    assert rest1 == "    for x in xs:\n        result += x\n    return result\n"
    for text, truth in levels.values():
        assert text + truth == REFERENCE


def test_a_one_line_body_gives_only_the_whole_body_level():
    program = "def f(x):\n    '''Doc.'''\n    return x + 1\n"
    assert split_reference(program, "f") == {
        2: ("def f(x):\n    '''Doc.'''\n", "    return x + 1\n")
    }
    assert split_reference("x = (", "f") == {} and split_reference("def g(): pass\n", "f") == {}


statements = st.lists(
    st.sampled_from(
        ["y = x + 1", "x = y * 2", "if x:\n        x -= 1", "for i in range(3):\n        x += i"]
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(statements, st.booleans(), st.booleans())
def test_every_level_puts_the_program_back_together(body, docstring, trailing):
    program = "import os\n\n\ndef f(x):\n"
    if docstring:
        program += '    """Doc."""\n'
    program += "".join(f"    {line}\n" for line in body) + "    return x\n"
    if trailing:
        program += "\n\n"
    levels = split_reference(program, "f")
    assert 2 in levels
    for text, truth in levels.values():
        assert program.startswith(text + truth)
        assert truth.strip() and not (program[len(text + truth) :].strip())
    # harder levels leave more out: level 0 ⊂ level 1 ⊂ level 2
    lengths = [len(levels[k][1]) for k in sorted(levels)]
    assert lengths == sorted(lengths)
    ast.parse(levels[2][0] + levels[2][1])


def test_build_writes_pairs_with_their_problems_into_the_given_folder(tmp_path, shared_data):
    counts = build_pairs(
        tmp_path, ["humaneval", "mbpp-sanitized"], limit=2, data_dir=str(shared_data)
    )
    assert counts[3] == len(bundled_snippets()) >= 10
    level2 = load_pairs(tmp_path / "level_2")
    assert len(level2) == counts[2] == 4
    assert [p.name for p in level2] == ["pair0", "pair1", "pair2", "pair3"]
    mbpp = level2[2]
    assert mbpp.meta["suite"] == "mbpp-sanitized"
    assert mbpp.input.startswith("# Write a python function")  # the task, as the reference lacks it
    problem = problem_of(mbpp, data_dir=str(shared_data))
    assert problem is not None and problem.task_id == mbpp.meta["task_id"]
    meta = json.loads((tmp_path / "level_3" / "pairs" / "pair0" / "meta.json").read_text())
    assert meta["level"] == 3 and "suite" not in meta
    assert problem_of(load_pairs(tmp_path / "level_3")[0]) is None


def test_snippets_are_real_code_that_parses():
    for snippet in bundled_snippets():
        ast.parse(snippet["input"] + snippet["output"])
