"""What every target language provides: type names, literals, the stub, the driver, the toolchain.

The driver protocol is the same everywhere. The driver is appended to the candidate's program
and compiled with it. It reads a per-run nonce from stdin (one line) before it calls the
candidate, takes the first case to run (``argv[1]``) and the number of an inherited pipe
(``argv[2]``), and for each case from there on writes one JSON line on that pipe:

    {"n": NONCE, "c": CASE_INDEX, "v": [VALUE, ...]}     the values of the case's calls
    {"n": NONCE, "c": CASE_INDEX, "e": "what was thrown"} the candidate threw

and ``{"n": NONCE, "done": true}`` after the last case, after ``{"n": NONCE, "ready": true}``
before the first. The trusted side accepts that sequence only (:mod:`harness.languages.runner`):
the driver shares its process with the candidate, which can read the nonce as well as the
driver, so a frame proves nothing about its writer; what is checked is the sequence, and any
deviation fails the sample. Values are plain JSON: lists for lists
and tuples, ``[[key, value], ...]`` for dicts, ``null`` for an empty Optional, numbers,
``"NaN"``/``"Infinity"``/``"-Infinity"`` for those floats, and ``[family, value]`` for a
Union's value (``["int", 5]``, ``["list", [...]]``: the family of the alternative it is). The trusted side decodes them by the
declared return type (:func:`harness.languages.types.decode`) and runs the benchmark's Python
check on the result.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from harness.languages.translate import Signature
from harness.languages.types import PyType, Untranslatable, alternative_for


@dataclass(frozen=True)
class Build:
    """How one language compiles and runs a program (paths are inside the sandbox)."""

    source_name: str  # the file the program is written to
    compile: tuple[str, ...] | None  # None: interpreted (no compile step)
    run: tuple[str, ...]  # {build} is the build folder, {start} and {fd} the driver arguments
    env: tuple[tuple[str, str], ...] = ()
    keep_paths: tuple[str, ...] = ()  # toolchain folders to keep visible in the sandbox
    max_processes: int = 64  # threads count (JVM)


class Language:
    """A target language. Subclasses fill in the pieces."""

    name = ""  # suite suffix: humaneval-<name>
    title = ""
    fence = ""  # markdown tag of its code blocks
    fence_tags: frozenset[str] = frozenset()  # every tag that marks its code blocks
    keywords: frozenset[str] = frozenset()
    case_timeout_s = 5.0  # per case, when no reference timing exists
    startup_s = 5.0  # added to the first case of every run (runtime start-up)
    compile_timeout_s = 60.0
    # Stop sequences for continuing the stub (MultiPL-E's): the end of the function body.
    # The assembler closes the braces a continuation leaves open.
    completion_stops: tuple[str, ...] = ("\n}",)

    def instruction(self, prompt: str) -> str:
        """The chat instruction: the stub to complete, in this language's code block."""
        return (
            f"Complete the following {self.title} function. Answer with the whole function, "
            f"including what it needs to compile, in a single ```{self.fence} code block."
            f"\n\n```{self.fence}\n{prompt.rstrip()}\n```"
        )

    def type_name(self, t: PyType) -> str:
        raise NotImplementedError

    def literal(self, value: Any, t: PyType) -> str:
        raise NotImplementedError

    def stub(self, signature: Signature, doc: str) -> str:
        raise NotImplementedError

    def driver(self, signature: Signature, cases: list[list[tuple[Any, ...]]]) -> str:
        raise NotImplementedError

    def build(self) -> Build:
        raise NotImplementedError

    def version(self) -> str:
        """What identifies the toolchain (part of the compile cache key)."""
        raise NotImplementedError

    def entry_defined(self, code: str, name: str) -> bool:
        """Whether ``code`` defines the entry point itself (a whole solution)."""
        raise NotImplementedError

    def parse_error(self, log: str) -> str | None:
        """For a language without a compile step: the parse error in the output of a run that
        never started, as ``compile error: ...`` (None: it parsed and failed otherwise)."""
        return None

    # -- shared helpers --------------------------------------------------------------------
    def ident(self, name: str) -> str:
        """A parameter name that is not a keyword of the language."""
        return name + "_" if name in self.keywords else name

    def drop_defined(self, preamble: str, code: str) -> str:
        """``preamble`` without what a whole solution's ``code`` defines itself."""
        return preamble

    def whole_solution(self, code: str, entry_point: str, preamble: str) -> str | None:
        """The program for ``code`` when it is a whole solution (the stub's ``preamble`` and
        ``code``); None when it continues the stub."""
        if self.entry_defined(code, entry_point):
            return self.drop_defined(preamble, code) + code
        return None

    def alternative(self, value: Any, t: PyType) -> PyType:
        """The alternative of the Union ``t`` that ``value`` is (Untranslatable: none)."""
        alt = alternative_for(value, t)
        if alt is None:
            raise Untranslatable(f"{value!r} is none of {t}"[:200])
        return alt

    def decode_result(self, data: Any, returns: PyType) -> Any:
        """The Python value of one returned value the driver sent (DecodeError: not one of
        type ``returns``)."""
        from harness.languages.types import decode

        return decode(data, returns, "returned value")

    def check_types(self, signature: Signature) -> None:
        """Raise Untranslatable for types this language cannot express."""
        for _, t in signature.params:
            self.type_name(t)
        self.type_name(signature.returns)


def doc_lines(doc: str) -> list[str]:
    """The docstring's lines, dedented, without leading or trailing blank lines."""
    import textwrap

    lines = textwrap.dedent(doc.expandtabs(4)).strip("\n").splitlines()
    return [line.rstrip() for line in lines]


def block_comment(doc: str, indent: str = "") -> str:
    """``/** ... */`` for C-like languages (a ``*/`` inside is broken up)."""
    lines = [line.replace("*/", "* /") for line in doc_lines(doc)]
    if not lines:
        return ""
    body = "".join(f"{indent} * {line}".rstrip() + "\n" for line in lines)
    return f"{indent}/**\n{body}{indent} */\n"


def json_string(text: str) -> str:
    """A double-quoted literal valid in JSON, JavaScript, Java and (mostly) C++ and Rust."""
    return json.dumps(text)


def float_text(value: float) -> str:
    text = repr(float(value))
    if text in ("inf", "-inf", "nan"):
        raise ValueError(text)
    return text


_SPECIAL = re.compile(r"[^\x20-\x7e]|[\"\\]")
_SIMPLE = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def escaped_string(text: str, style: str) -> str:
    """A double-quoted string literal for ``text`` in C++ (``cpp``), Java or Rust.

    C++ gets octal escapes of the UTF-8 bytes (a hex escape would swallow following hex
    digits); Java octal for control characters and ``\\uXXXX`` for the rest (never for a
    quote or a newline, which Java would unescape before lexing); Rust ``\\u{...}``.
    """

    def escape(match: re.Match[str]) -> str:
        ch = match.group(0)
        if ch in _SIMPLE:
            return _SIMPLE[ch]
        if style == "cpp":
            return "".join(f"\\{b:03o}" for b in ch.encode("utf-8"))
        if style == "rust":
            return f"\\u{{{ord(ch):x}}}"
        if ord(ch) < 0x20 or ord(ch) == 0x7F:
            return f"\\{ord(ch):03o}"
        return "".join(
            f"\\u{unit:04x}"
            for unit in (
                [ord(ch)]
                if ord(ch) < 0x10000
                else [0xD800 + ((ord(ch) - 0x10000) >> 10), 0xDC00 + ((ord(ch) - 0x10000) & 0x3FF)]
            )
        )

    return '"' + _SPECIAL.sub(escape, text) + '"'


def count_unclosed_braces(code: str) -> int:
    """``{`` minus ``}`` outside strings, chars and comments (a C-like scan; never negative)."""
    depth, i, n = 0, 0, len(code)
    while i < n:
        ch = code[i]
        if code.startswith("//", i):
            end = code.find("\n", i)
            i = n if end < 0 else end
        elif code.startswith("/*", i):
            end = code.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch in '"`':
            i += 1
            while i < n and code[i] != ch:
                i += 2 if code[i] == "\\" else 1
            i += 1
        elif ch == "'" and i + 2 < n and (code[i + 1] == "\\" or code[i + 2] == "'"):
            end = code.find("'", i + 2)
            i = n if end < 0 else end + 1
        else:
            depth += ch == "{"
            depth -= ch == "}"
            depth = max(depth, 0)
            i += 1
    return depth
