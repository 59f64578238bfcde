"""The completion in a model's reply: its code block, less any code it repeats from the input.

Chat models answer in markdown and often start by repeating the end of the code they were
given (or all of it). The completion is the reply's code (:func:`harness.completions.extract_code`:
the first python block, else the longest, else the text) with the longest run of leading lines
that repeats the input's last lines removed, and the input's unfinished last line too.
"""

from __future__ import annotations

from harness.completions import extract_code, normalize_newlines


def completion_from_reply(reply: str, code: str) -> str:
    """What the model adds to ``code``, from its reply."""
    text = extract_code(normalize_newlines(reply), None)
    code = normalize_newlines(code)
    if code and code.strip() and text.startswith(code):
        return _ended(text[len(code) :])
    lines = text.split("\n")
    code_lines = code.split("\n")
    partial = code_lines[-1]  # the unfinished last line ("" when the code ends with a newline)
    whole = [line.rstrip() for line in code_lines[:-1]]
    # The longest k such that the reply's first k lines are the input's last k whole lines.
    for k in range(min(len(whole), len(lines)), 0, -1):
        if [line.rstrip() for line in lines[:k]] == whole[-k:] and any(
            w.strip() for w in whole[-k:]
        ):
            lines = lines[k:]
            break
    else:
        lines = lines[_copied_prefix(lines, whole) :]
    if partial.strip() and lines and lines[0].startswith(partial):
        lines[0] = lines[0][len(partial) :]
    return _ended("\n".join(lines))


def _copied_prefix(lines: list[str], code_lines: list[str]) -> int:
    """How many leading reply lines are the input copied again, loosely: small models repeat the
    code they were given with blank lines and a docstring line or two changed or left out. The
    run must start with the input's first non-blank line and end at its last one (so a
    completion line that merely looks like an input line is kept)."""
    code_set = {line.strip() for line in code_lines if line.strip()}
    filled = [line.strip() for line in code_lines if line.strip()]
    if not filled or not lines or lines[0].strip() != filled[0]:
        return 0
    last_match = 0
    for index, line in enumerate(lines):
        stripped = line.strip()
        if stripped and stripped not in code_set:
            break
        if stripped == filled[-1]:
            last_match = index + 1
    return last_match


def _ended(text: str) -> str:
    """The program ends with a newline, as files do."""
    return text if not text or text.endswith("\n") else text + "\n"
