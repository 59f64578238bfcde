"""The code taken from a model's completion of a translated problem → the program the compiler
sees.

The core (:func:`harness.completions.assemble_program`) reads the markdown as for Python: the
first fenced block that defines the entry point, else the first block tagged with the
language (its ``fence_tags``), else the longest block. The code it takes comes here:

1. Code that defines the entry point itself is a whole solution: it gets the stub's preamble
   (C++ headers, Java imports, Rust ``use`` lines and enums, less what the code defines
   itself); a language may accept more as whole (Java: a method without its
   ``class Problem``, wrapped in one). Otherwise the code continues the prompt (the stub).
2. Braces the code leaves open are closed (a completion cut at the end of the function body,
   as MultiPL-E's stop sequences cut it).
"""

from __future__ import annotations

from harness.completions import normalize_newlines
from harness.languages.base import Language, count_unclosed_braces
from harness.records import Problem


def assemble(language: Language, problem: Problem, code: str) -> tuple[str, bool]:
    """The program for ``code``, and whether ``code`` was a whole solution."""
    whole = language.whole_solution(code, problem.entry_point, preamble(problem))
    program = whole if whole is not None else normalize_newlines(problem.prompt) + code
    program = program.rstrip("\n") + "\n" + "}\n" * count_unclosed_braces(program)
    return program, whole is not None


def preamble(problem: Problem) -> str:
    """The stub's lines before its doc comment and signature (headers, imports, uses, and the
    types a Rust stub defines)."""
    lines = []
    starts = ("/**", "///", "function ", "class ", "fn ")
    for line in normalize_newlines(problem.prompt).split("\n"):
        stripped = line.strip()
        if stripped.startswith(starts) or f"{problem.entry_point}(" in stripped:
            break
        lines.append(line)
    text = "\n".join(lines).strip("\n")
    return text + "\n\n" if text else ""
