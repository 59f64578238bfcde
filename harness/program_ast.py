"""A model's program parsed in the trusted process, whatever its text.

``ast.parse`` raises more than ``SyntaxError`` on text a model can write: ``ValueError`` on a
null byte (Python 3.11), ``MemoryError`` on a few thousand nested lambdas or unary minuses (the
parser's own stack) and ``RecursionError`` on a long chain of ``+`` or calls. Every reader of a
candidate's program parses it here, so no program can stop the harness by its shape.

Nor by its depth: a tree Python parses can still be too deep for the tools that walk it by
recursion (bandit, radon). A RecursionError inside bandit's scan left this process unable to
``copy.deepcopy`` an AST afterwards (CPython 3.11's C recursion count), so a candidate's program
could break later work in the trusted process. The packaged suites' programs nest at most 20
levels; past :data:`MAX_ANALYZED_DEPTH` a program is not analyzed.

Nor by its size: parsing and walking a program costs about 15 s of CPU per MB here, and a
reward request can send a program of any length. The largest program of the packaged suites is
under 7 KB (ClassEval's); past :data:`MAX_ANALYZED_CHARS` a program is not parsed on the trusted
side (it still runs in the sandbox and is judged there by its tests).
"""

from __future__ import annotations

import ast

MAX_ANALYZED_CHARS = 256_000
MAX_ANALYZED_DEPTH = 100  # levels of nested syntax nodes
Failure = tuple[int | None, int | None, str]  # line, column, why


def parse_program(text: str) -> ast.Module | None:
    """``text`` parsed, or None when Python cannot parse it or it is too long or too deep to
    analyze."""
    return _parsed(text)[0]


def parse_failure(text: str) -> Failure | None:
    """``(line, column, message)`` of why ``text`` does not parse; None when it parses."""
    return _parsed(text)[1]


def parse_with_failure(text: str) -> tuple[ast.Module | None, Failure | None]:
    """Both at once, for a reader that needs the tree and why there is none: one parse."""
    return _parsed(text)


def _parsed(text: str) -> tuple[ast.Module | None, Failure | None]:
    """The tree, or why there is none: the one place that decides both."""
    if len(text) > MAX_ANALYZED_CHARS:
        return None, (None, None, f"too long to analyze: over {MAX_ANALYZED_CHARS:,} characters")
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return None, (exc.lineno, exc.offset, exc.msg)
    except ValueError as exc:  # a null byte
        return None, (None, None, str(exc))
    except (RecursionError, MemoryError):
        return None, (None, None, "nested too deeply for Python's parser")
    depth = nesting(tree)
    if depth > MAX_ANALYZED_DEPTH:
        why = f"too deep to analyze: {depth} levels (the bound is {MAX_ANALYZED_DEPTH})"
        return None, (None, None, why)
    return tree, None


def nesting(tree: ast.AST) -> int:
    """How many levels of nodes ``tree`` has (counted without recursion)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest
