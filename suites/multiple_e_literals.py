"""MultiPL-E's expected literals as Python values, and the equality its test programs use.

MultiPL-E generated every expected value of its tests from a Python literal (HumanEval's own
check), printed in the target language's syntax. :func:`parse_literal` reads such a literal
back (a small recursive-descent parser per language, for exactly the forms MultiPL-E prints)
into the value the trusted process compares with what the candidate's call returned:

- C++, Rust: ``==`` / ``assert_eq!`` on statically typed values, so plain Python values do:
  lists, tuples, dicts, ``None`` for an empty optional, floats rounded to 32 bits where the
  literal says ``f`` or ``(float)`` (C++'s and Java's ``float``).
- Java: the same, except ``Optional`` keeps its wrapper (:class:`Opt`): MultiPL-E prints an
  empty optional inside a pair as ``Optional.of(Optional.empty())``, which ``equals`` no value
  an honest program returns, and the verdict must stay what Java says.
- JavaScript: ``assert.deepEqual`` is the legacy loose comparison (``==`` on primitives), so
  values keep their JavaScript type as tagged lists (``["n", 1]``, ``["s", "a"]``, ``["a",
  [...]]``, ``["o", [[key, value], ...]]``; from a candidate also ``["B", "12"]`` for a BigInt
  and ``["t", tag, kind, data, pairs]`` for a Map, Date, boxed primitive...: see the JS
  driver's encoder) and :func:`suites.js_deep_equal.js_deep_equal` compares them as node
  does.

A form the parser does not know raises :class:`LiteralError`; the suite then runs MultiPL-E's
own test program for that problem instead (:mod:`suites.multiple_e`).
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

from harness.languages.multiple_e import Opt


class LiteralError(ValueError):
    """A literal outside the forms MultiPL-E prints (the problem falls back to its program)."""


def f32(value: float) -> float:
    """``value`` rounded to a 32-bit float, as Java and C++ store a ``float``."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


_TOKEN = re.compile(
    r"""\s*(?:
      (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<chr>'(?:[^'\\]|\\.)*')
    | (?P<num>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?[lLfF]?)
    | (?P<name>[A-Za-z_][\w]*(?:::[A-Za-z_]\w*|::<|\.[A-Za-z_]\w*)*!?)
    | (?P<op>[()\[\]{},<>\-:])
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}
_ESCAPES |= {"b": "\b", "f": "\f", "v": "\v", "/": "/"}


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise LiteralError(f"unexpected text {text[pos : pos + 30]!r}")
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind)))
        pos = match.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


def _unquote(text: str) -> str:
    body, out, i = text[1:-1], [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in "ux" and body[i + 2 : i + 3] != "{":
            width = 4 if nxt == "u" else 2
            out.append(chr(int(body[i + 2 : i + 2 + width], 16)))
            i += 2 + width
        elif nxt == "u":  # Rust \u{...}
            end = body.index("}", i)
            out.append(chr(int(body[i + 3 : end], 16)))
            i = end + 1
        else:
            raise LiteralError(f"unknown escape \\{nxt} in {text[:40]}")
    # JavaScript and Java spell a character beyond U+FFFF as two \u escapes (a surrogate pair)
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16")


class _Parser:
    def __init__(self, text: str, language: str):
        self.tokens = _tokens(text)
        self.pos = 0
        self.language = language

    def parse(self) -> Any:
        value = self.value()
        if self.pos != len(self.tokens):
            raise LiteralError(f"trailing text after a literal: {self.peek()[1]!r}")
        return value

    def peek(self, ahead: int = 0) -> tuple[str, str]:
        index = self.pos + ahead
        return self.tokens[index] if index < len(self.tokens) else ("end", "")

    def take(self, expected: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token[0] == "end" or (expected is not None and token[1] != expected):
            raise LiteralError(f"expected {expected or 'more'}, found {token[1] or 'the end'!r}")
        self.pos += 1
        return token

    def items(self, close: str) -> list[Any]:
        out: list[Any] = []
        while self.peek()[1] != close:
            out.append(self.value())
            if self.peek()[1] == ",":
                self.take(",")
        self.take(close)
        return out

    def generic(self) -> str:
        """A type's ``<...>`` arguments (skipped: the value's own syntax says the rest)."""
        depth, text = 0, ""
        while True:
            kind, tok = self.take()
            text += tok
            depth += tok.count("<") - tok.count(">") if kind == "op" else tok.endswith("::<")
            if depth <= 0:
                return text

    def value(self) -> Any:
        kind, tok = self.peek()
        if tok == "-":
            self.take()
            number = self.value()
            if isinstance(number, bool) or not isinstance(number, int | float):
                raise LiteralError("a minus sign before something that is not a number")
            return -number
        if kind == "num":
            self.take()
            return self.number(tok)
        if kind == "str":
            self.take()
            return _unquote(tok)
        if kind == "chr":
            self.take()
            return _unquote(tok)
        if tok in ("(", "[", "{"):
            return self.bracketed()
        if kind == "name":
            return self.named()
        raise LiteralError(f"unexpected {tok!r}")

    def number(self, tok: str) -> int | float:
        if tok[-1] in "fF" and "." in tok or tok[-1] in "fF" and "e" in tok.lower():
            return f32(float(tok[:-1]))
        if tok[-1] in "lL":
            return int(tok[:-1])
        if "." in tok or "e" in tok.lower():
            return float(tok)
        return int(tok)

    def bracketed(self) -> Any:
        _, open_ = self.take()
        if open_ == "(":
            kind, tok = self.peek()
            if kind == "name":  # a cast: (long)5, (std::string)"a", (ArrayList<Long>)new ...
                start = self.pos
                self.take()
                if self.peek()[1] == "<":
                    self.generic()
                after = self.peek(1)
                if self.peek()[1] == ")" and (
                    after[0] not in ("op", "end") or after[1] in ("(", "[", "{", "-")
                ):
                    self.take(")")
                    return _CASTS.get(tok, lambda v: v)(self.value())
                self.pos = start
            inner = self.items(")")
            if len(inner) == 1 and not self._ended_with_comma():
                return inner[0]
            return tuple(inner)
        if open_ == "[":
            return list(self.items("]"))
        if self.language == "js":
            return _JsObject(self.js_object())
        return _Brace(self.items("}"))  # C++ initializer list: its meaning comes from the type

    def _ended_with_comma(self) -> bool:
        return self.tokens[self.pos - 2][1] == ","

    def named(self) -> Any:
        _, name = self.take()
        if name.endswith("::<"):  # Rust ``Vec::<T>::new()``
            depth = 1
            while depth:
                tok = self.take()[1]
                depth += (tok == "<") - (tok == ">")
            for part in (":", ":", "new", "(", ")"):
                self.take(part)
            return []
        handler = _NAMED.get(self.language, {}).get(name)
        if handler is None:
            raise LiteralError(f"unknown name {name!r} in a {self.language} literal")
        if self.peek()[1] == "<":
            self.generic()
        return handler(self)

    def js_object(self) -> list[Any]:
        pairs = []
        while self.peek()[1] != "}":
            kind, key = self.take()
            if kind not in ("str", "name", "num"):
                raise LiteralError(f"a JavaScript object key {key!r}")
            self.take(":")
            pairs.append([_unquote(key) if kind == "str" else key, js_tagged(self.value())])
            if self.peek()[1] == ",":
                self.take(",")
        self.take("}")
        return ["o", pairs]


class _Brace(list):  # a C++ ``{...}`` list before its type gives it a meaning
    pass


class _JsObject(list):  # an object literal, already tagged
    pass


def _args(p: _Parser) -> list[Any]:
    p.take("(")
    return p.items(")")


def _one(p: _Parser) -> Any:
    items = _args(p)
    if len(items) != 1:
        raise LiteralError(f"expected one argument, got {len(items)}")
    return items[0]


def _cpp_vector(p: _Parser) -> list[Any]:
    items = _args(p)
    if not items:
        return []
    if len(items) != 1 or not isinstance(items[0], _Brace):
        raise LiteralError("std::vector(...) without one {...} list")
    return list(items[0])


def _cpp_map(p: _Parser) -> dict[Any, Any]:
    pairs = _cpp_vector(p)
    if not all(isinstance(x, _Brace) and len(x) == 2 for x in pairs):
        raise LiteralError("std::map entries are not {key, value} pairs")
    return {_key(k): v for k, v in pairs}


def _cpp_optional(p: _Parser) -> Any:
    return _one(p)


def _key(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _java_list(p: _Parser) -> list[Any]:
    items = _args(p)
    if not items:
        return []
    if len(items) != 1 or not isinstance(items[0], list):
        raise LiteralError("new ArrayList(...) of something that is not Arrays.asList(...)")
    return list(items[0])


def _java_map(p: _Parser) -> dict[Any, Any]:
    items = _args(p)
    if not items:
        return {}
    flat = items[0]
    if len(items) != 1 or not isinstance(flat, _MapOf):
        raise LiteralError("new HashMap(...) of something that is not Map.of(...)")
    return dict(flat)


class _MapOf(list):
    pass


def _java_map_of(p: _Parser) -> _MapOf:
    flat = _args(p)
    if len(flat) % 2:
        raise LiteralError("Map.of with an odd number of arguments")
    return _MapOf(zip(map(_key, flat[0::2]), flat[1::2], strict=True))


def _java_new(p: _Parser) -> Any:
    _, name = p.take()
    if p.peek()[1] == "<":
        p.generic()
    if name in ("ArrayList", "List", "LinkedList"):
        return _java_list(p)
    if name in ("HashMap", "Map", "TreeMap"):
        return _java_map(p)
    raise LiteralError(f"unknown Java class new {name}")


def _rust_vec(p: _Parser) -> list[Any]:
    p.take("[")
    return p.items("]")


def _rust_map(p: _Parser) -> dict[Any, Any]:
    pairs = _one(p)
    if not isinstance(pairs, list) or not all(isinstance(x, tuple) and len(x) == 2 for x in pairs):
        raise LiteralError("HashMap::from of something that is not [(key, value), ...]")
    return {_key(k): v for k, v in pairs}


def _constant(value: Any) -> Any:
    return lambda p: value


_CASTS: dict[str, Any] = {
    "long": int,
    "int": int,
    "float": lambda v: f32(float(v)),
    "double": float,
    "String": str,
}

_NAMED: dict[str, dict[str, Any]] = {
    "cpp": {
        "true": _constant(True),
        "false": _constant(False),
        "std::vector": _cpp_vector,
        "std::map": _cpp_map,
        "std::make_tuple": lambda p: tuple(_args(p)),
        "std::tuple": lambda p: tuple(_args(p)),
        "std::optional": _cpp_optional,
        "std::nullopt": _constant(None),
        "std::string": _one,
        "float": lambda p: f32(float(_one(p))),
        "long": lambda p: int(_one(p)),
    },
    "java": {
        "true": _constant(True),
        "false": _constant(False),
        "new": _java_new,
        "Arrays.asList": lambda p: list(_args(p)),
        "List.of": lambda p: list(_args(p)),
        "Map.of": _java_map_of,
        "Optional.of": lambda p: Opt(True, _one(p)),
        "Optional.empty": lambda p: (_args(p), Opt(False))[1],
        "Pair.with": lambda p: tuple(_args(p)),
        "Triplet.with": lambda p: tuple(_args(p)),
    },
    "rs": {
        "true": _constant(True),
        "false": _constant(False),
        "vec!": _rust_vec,
        "String::from": _one,
        "Some": _one,
        "None": _constant(None),
        "HashMap::from": _rust_map,
    },
    "js": {
        "true": _constant(True),
        "false": _constant(False),
        "null": _constant(None),
        "undefined": _constant(_UNDEFINED := object()),
    },
}


def parse_literal(text: str, language: str) -> Any:
    """The Python value of MultiPL-E literal ``text`` in ``language`` (``js`` values come
    back tagged, :func:`js_tagged`)."""
    try:
        value = _Parser(text, language).parse()
    except (IndexError, ValueError, KeyError) as exc:
        if isinstance(exc, LiteralError):
            raise
        raise LiteralError(f"cannot read {text[:60]!r}: {exc}") from None
    if isinstance(value, _Brace | _MapOf):
        raise LiteralError(f"a bare {{...}} list: {text[:60]!r}")
    return js_tagged(value) if language == "js" else value


def js_tagged(value: Any) -> list[Any]:
    """A JavaScript literal read as Python, in the tagged form the JS driver sends."""
    if isinstance(value, _JsObject):
        return list(value)
    if value is _UNDEFINED:
        return ["u"]
    if value is None:
        return ["null"]
    if isinstance(value, bool):
        return ["b", value]
    if isinstance(value, int | float):
        return ["n", value]
    if isinstance(value, str):
        return ["s", value]
    if isinstance(value, list):
        return ["a", [js_tagged(v) for v in value]]
    raise LiteralError(f"no JavaScript value for {value!r}")
