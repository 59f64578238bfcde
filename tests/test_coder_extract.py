"""The completion in a model's reply: code blocks, and code the model repeats from its input."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.coder.extract import completion_from_reply

CODE = 'from typing import List\n\n\ndef f(xs: List[int]) -> int:\n    """Doc.\n\n    More.\n    """\n    for x in xs:\n'


def test_the_code_block_is_the_completion():
    assert (
        completion_from_reply("Sure:\n```python\n        print(x)\n```\nDone.", CODE)
        == "        print(x)\n"
    )
    assert completion_from_reply("        print(x)", CODE) == "        print(x)\n"  # no fence


def test_repeated_input_lines_are_dropped():
    reply = "```python\n    for x in xs:\n        print(x)\n```"
    assert completion_from_reply(reply, CODE) == "        print(x)\n"


def test_a_loose_copy_of_the_whole_input_is_dropped():
    # blank lines and a docstring line left out, as small models do
    copy = 'from typing import List\n\ndef f(xs: List[int]) -> int:\n    """Doc.\n    """\n    for x in xs:\n'
    reply = f"```python\n{copy}        print(x)\n    return 0\n```"
    assert completion_from_reply(reply, CODE) == "        print(x)\n    return 0\n"


def test_the_unfinished_last_line_is_not_repeated():
    assert (
        completion_from_reply("```python\nvalue = compute(1, 2)\n```", "value = compute(")
        == "1, 2)\n"
    )


lines = st.lists(
    st.sampled_from(["x = 1", "    y = x", "def g():", "    return 2", "", "# note", "z = [x]"]),
    max_size=6,
)


nonblank = lines.filter(lambda ls: any(line.strip() for line in ls))


@settings(max_examples=80, deadline=None)
@given(nonblank, nonblank)
def test_a_reply_that_repeats_the_input_gives_the_continuation(code_lines, new_lines):
    code = "".join(f"{line}\n" for line in code_lines)
    continuation = "".join(f"{line}\n" for line in new_lines)
    assert completion_from_reply(f"```python\n{code}{continuation}```", code) == continuation
