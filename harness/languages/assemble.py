"""A model's completion of a translated problem → the program the compiler sees.

The same rules as for Python (:mod:`harness.completions`), in the target language:

1. Markdown: the first fenced block that defines the entry point, else the first block tagged
   with the language (``js``/``javascript``, ``cpp``/``c++``, ``java``, ``rust``/``rs``), else
   the longest block.
2. A block that defines the entry point itself is a whole solution: it gets the stub's
   preamble (C++ headers, Java imports, Rust ``use`` lines and enums, less what the block
   defines itself), and in Java a method without its
   ``class Problem`` is wrapped in one. Otherwise the code continues the prompt (the stub).
3. Braces the code leaves open are closed (a completion cut at the end of the function body,
   as MultiPL-E's stop sequences cut it).
"""

from __future__ import annotations

from harness.completions import AssembledProgram, code_blocks, normalize_newlines
from harness.languages.base import count_unclosed_braces
from harness.languages.registry import language_for
from harness.records import Problem

TAGS = {
    "js": {"js", "javascript", "node", "nodejs"},
    "cpp": {"cpp", "c++", "cc", "cxx"},
    "java": {"java"},
    "rs": {"rust", "rs"},
}


def assemble_native(problem: Problem, completion: str) -> AssembledProgram:
    language = language_for(problem)
    text = normalize_newlines(completion or "")
    blocks = code_blocks(text)
    code = text
    if blocks:
        defining = [b for b in blocks if language.entry_defined(b.code, problem.entry_point)]
        tagged = [b for b in blocks if b.tag in TAGS[language.name]]
        chosen = (defining or tagged or [max(blocks, key=lambda b: len(b.code))])[0]
        code = chosen.code
    prompt = normalize_newlines(problem.prompt)
    if language.entry_defined(code, problem.entry_point):
        kind = "solution"
        program = language.drop_defined(preamble(problem), code) + code
    elif language.name == "java" and _defines_method(code, problem.entry_point):
        kind = "solution"
        program = preamble(problem) + "class Problem {\n" + code + "\n}\n"
    else:
        kind = "continuation"
        program = prompt + code
    program = program.rstrip("\n") + "\n" + "}\n" * count_unclosed_braces(program)
    return AssembledProgram(program=program, kind="markdown" if blocks else kind, code=code)


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


def _defines_method(code: str, name: str) -> bool:
    import re

    return re.search(rf"\b{re.escape(name)}\s*\([^;{{]*\)\s*(?:throws[^{{]*)?\{{", code) is not None
