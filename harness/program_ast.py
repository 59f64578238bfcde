"""A model's program parsed in the trusted process, whatever its text.

``ast.parse`` raises more than ``SyntaxError`` on text a model can write: ``ValueError`` on a
null byte (Python 3.11), ``MemoryError`` on a few thousand nested lambdas or unary minuses (the
parser's own stack) and ``RecursionError`` on a long chain of ``+`` or calls. Every reader of a
candidate's program parses it here, so no program can stop the harness by its shape.

Nor by its size: parsing and walking a program costs about 15 s of CPU per MB here, and a
reward request can send a program of any length. The largest program of the packaged suites is
under 7 KB (ClassEval's); past :data:`MAX_ANALYZED_CHARS` a program is not parsed on the trusted
side (it still runs in the sandbox and is judged there by its tests).
"""

from __future__ import annotations

import ast

# What ast.parse raises on a text it cannot take.
NOT_PARSED = (SyntaxError, ValueError, RecursionError, MemoryError)
MAX_ANALYZED_CHARS = 256_000


def parse_program(text: str) -> ast.Module | None:
    """``text`` parsed, or None when Python cannot parse it or it is too long to analyze."""
    if len(text) > MAX_ANALYZED_CHARS:
        return None
    try:
        return ast.parse(text)
    except NOT_PARSED:
        return None


def parse_failure(text: str) -> tuple[int | None, int | None, str] | None:
    """``(line, column, message)`` of why ``text`` does not parse; None when it parses."""
    if len(text) > MAX_ANALYZED_CHARS:
        return None, None, f"too long to analyze: over {MAX_ANALYZED_CHARS:,} characters"
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return exc.lineno, exc.offset, exc.msg
    except ValueError as exc:  # a null byte
        return None, None, str(exc)
    except (RecursionError, MemoryError):
        return None, None, "nested too deeply for Python's parser"
    return None
