"""JavaScript (Node.js 18+, CommonJS): numbers for int and float, arrays for lists and tuples,
objects for ``dict[str, V]`` and ``Map`` for other dicts, ``null`` for an empty Optional, and
plain dynamic values for a Union (its driver tags each by its runtime type)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from functools import lru_cache
from typing import Any

from harness.languages.base import Build, Language, block_comment, float_text, json_string
from harness.languages.translate import Signature
from harness.languages.types import PyType, Untranslatable, family
from harness.languages.unions import unions_in

_KEYWORDS = """await break case catch class const continue debugger default delete do else enum
export extends false finally for function if implements import in instanceof interface let new
null package private protected public return static super switch this throw true try typeof var
void while with yield arguments eval undefined""".split()

_ENCODER = r"""
function __codeeval_plain(v) {
  if (v === undefined || v === null) return null;
  if (typeof v === "number") return Number.isFinite(v) ? v : (Number.isNaN(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity"));
  if (typeof v === "bigint") return Number(v);
  if (typeof v === "boolean" || typeof v === "string") return v;
  if (Array.isArray(v)) return v.map(__codeeval_plain);
  if (v instanceof Map) return Array.from(v.entries(), ([k, x]) => [__codeeval_plain(k), __codeeval_plain(x)]);
  if (typeof v === "object") return Object.entries(v).map(([k, x]) => [k, __codeeval_plain(x)]);
  return String(v);
}
"""

# Where the result's type holds a Union: the value is walked with its type (the descriptor,
# ``[kind, ...args]``) and each Union's value is sent as ``[family, value]``, the family read
# from its runtime type (an integral number is an int where the Union has one).
_TYPED_ENCODER = r"""
const __codeeval_family = {int: "int", float: "float", bool: "bool", str: "str", list: "list", vartuple: "tuple", tuple: "tuple", dict: "dict"};
function __codeeval_typed(v, t) {
  const k = t[0];
  if (k === "union") {
    const has = (...names) => t.slice(1).find((a) => names.includes(a[0]));
    if (typeof v === "bigint") v = Number(v);
    let alt;
    if (typeof v === "number") alt = (Number.isInteger(v) && has("int")) || !has("float") ? has("int") : has("float");
    else if (typeof v === "boolean") alt = has("bool");
    else if (typeof v === "string") alt = has("str");
    else if (Array.isArray(v)) alt = has("list", "vartuple", "tuple");
    else if (v !== null && typeof v === "object") alt = has("dict");
    if (!alt) return [v === null ? "null" : typeof v, __codeeval_plain(v)];
    return [__codeeval_family[alt[0]], __codeeval_typed(v, alt)];
  }
  if (k === "optional") return v === null || v === undefined ? null : __codeeval_typed(v, t[1]);
  if ((k === "list" || k === "vartuple") && Array.isArray(v)) return v.map((x) => __codeeval_typed(x, t[1]));
  if (k === "tuple" && Array.isArray(v)) return v.map((x, i) => (i + 1 < t.length ? __codeeval_typed(x, t[i + 1]) : __codeeval_plain(x)));
  if (k === "dict" && v !== null && typeof v === "object" && !Array.isArray(v)) {
    const entries = v instanceof Map ? Array.from(v.entries()) : Object.entries(v);
    return entries.map(([key, x]) => [__codeeval_typed(key, t[1]), __codeeval_typed(x, t[2])]);
  }
  return __codeeval_plain(v);
}
"""


def descriptor(t: PyType) -> list[Any]:
    """``t`` as the JSON the typed encoder walks: ``[kind, *args]``."""
    return [t.kind, *(descriptor(a) for a in t.args)]


class JavaScript(Language):
    name = "js"
    title = "JavaScript"
    fence = "javascript"
    fence_tags = frozenset({"js", "javascript", "node", "nodejs"})
    keywords = frozenset(_KEYWORDS)
    case_timeout_s = 5.0
    startup_s = 5.0
    completion_stops = ("\n}", "\nfunction ", "\n/*", "\n//", "\nconsole.log")

    def type_name(self, t: PyType) -> str:
        kind = t.kind
        if kind in ("int", "float"):
            return "number"
        if kind == "bool":
            return "boolean"
        if kind == "str":
            return "string"
        if kind in ("list", "vartuple"):
            return f"{self.type_name(t.args[0])}[]"
        if kind == "tuple":
            return "[" + ", ".join(self.type_name(a) for a in t.args) + "]"
        if kind == "optional":
            return f"{self.type_name(t.args[0])}|null"
        if kind == "dict":
            key, value = (self.type_name(a) for a in t.args)
            if t.args[0].kind == "str":
                return f"Object<string, {value}>"
            return f"Map<{key}, {value}>"
        if kind == "union":
            # Arrays are all one runtime type: a Union cannot hold a list and a tuple here.
            if {"list", "tuple"} <= {family(a) for a in t.args}:
                raise Untranslatable(f"JavaScript arrays cannot tell a list from a tuple in {t}")
            names = dict.fromkeys(self.type_name(a) for a in t.args)
            return "(" + "|".join(names) + ")"
        raise Untranslatable(f"JavaScript has no translation for {t}")

    def literal(self, value: Any, t: PyType) -> str:
        kind = t.kind
        if kind == "optional":
            return "null" if value is None else self.literal(value, t.args[0])
        if kind == "union":
            return self.literal(value, self._distinct_alternative(value, t))
        if kind == "int":
            return str(value)
        if kind == "float":
            return float_text(value)
        if kind == "bool":
            return "true" if value else "false"
        if kind == "str":
            return json_string(value)
        if kind in ("list", "vartuple"):
            return "[" + ", ".join(self.literal(v, t.args[0]) for v in value) + "]"
        if kind == "tuple":
            return (
                "["
                + ", ".join(self.literal(v, a) for v, a in zip(value, t.args, strict=True))
                + "]"
            )
        if kind == "dict":
            return self._dict_literal(value, t)
        raise Untranslatable(f"JavaScript has no literal for {t}")

    def _distinct_alternative(self, value: Any, t: PyType) -> PyType:
        """The Union's alternative for ``value``, where JavaScript can tell it from the others."""
        alt = self.alternative(value, t)
        if alt.kind == "float" and "int" in (a.kind for a in t.args):
            if float(value).is_integer():  # 2.0 would reach the candidate as the int 2
                raise Untranslatable(f"JavaScript cannot tell the float {value!r} from an int")
        return alt

    def _dict_literal(self, value: dict[Any, Any], t: PyType) -> str:
        """An object literal for string keys, else a ``Map``."""
        pairs = [(self.literal(k, t.args[0]), self.literal(v, t.args[1])) for k, v in value.items()]
        if t.args[0].kind == "str":
            return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
        return "new Map([" + ", ".join(f"[{k}, {v}]" for k, v in pairs) + "])"

    def stub(self, signature: Signature, doc: str) -> str:
        params = ", ".join(self.ident(n) for n, _ in signature.params)
        tags = "".join(
            f" * @param {{{self.type_name(t)}}} {self.ident(n)}\n" for n, t in signature.params
        )
        tags += f" * @returns {{{self.type_name(signature.returns)}}}\n"
        comment = block_comment(doc)
        comment = comment[: -len(" */\n")] + tags + " */\n" if comment else f"/**\n{tags} */\n"
        return f"{comment}function {signature.name}({params}) {{\n"

    def driver(self, signature: Signature, cases: list[list[tuple[Any, ...]]]) -> str:
        types = [t for _, t in signature.params]
        typed = bool(unions_in(signature.returns))
        encode, close = "__codeeval_plain(", ")"
        if typed:  # tagged Union values: the encoder walks the declared type
            encode, close = "__codeeval_typed(", ", __codeeval_returns)"
        branches = []
        for index, calls in enumerate(cases):
            values = ", ".join(
                f"{encode}{signature.name}("
                + ", ".join(self.literal(a, t) for a, t in zip(args, types, strict=True))
                + f"){close}"
                for args in calls
            )
            branches.append(f"    case {index}: return [{values}];")
        return (
            "\n// ---- codeeval driver (generated) ----\n"
            + _ENCODER
            + (_typed_prelude(signature.returns) if typed else "")
            + "function __codeeval_case(i) {\n  switch (i) {\n"
            + "\n".join(branches)
            + "\n  }\n  throw new Error('no such case');\n}\n"
            + "(function () {\n"
            + "  const fs = require('fs');\n"
            + "  const nonce = fs.readFileSync(0, 'utf8').split('\\n')[0];\n"
            + "  const start = parseInt(process.argv[2], 10), fd = parseInt(process.argv[3], 10);\n"
            + "  fs.writeSync(fd, JSON.stringify({n: nonce, ready: true}) + '\\n');\n"
            + f"  for (let i = start; i < {len(cases)}; i++) {{\n"
            + "    let line;\n"
            + "    try { line = JSON.stringify({n: nonce, c: i, v: __codeeval_case(i)}); }\n"
            + "    catch (e) { line = JSON.stringify({n: nonce, c: i, e: String(e && e.name ? e.name + ': ' + e.message : e)}); }\n"
            + "    fs.writeSync(fd, line + '\\n');\n"
            + "  }\n"
            + "  fs.writeSync(fd, JSON.stringify({n: nonce, done: true}) + '\\n');\n"
            + "})();\n"
        )

    def build(self) -> Build:
        node = _node()
        # No compile step: node parses the whole file before it runs any of it, so a run that
        # never starts says whether it parsed (parse_error), without a second node start.
        return Build(
            source_name="main.js",
            compile=None,
            run=(
                node,
                "--max-old-space-size=512",
                "--stack-size=4000",
                "{build}/main.js",
                "{start}",
                "{fd}",
            ),
        )

    def version(self) -> str:
        return _node_version()

    def entry_defined(self, code: str, name: str) -> bool:
        pattern = rf"(?m)^\s*(?:async\s+)?function\s*\*?\s*{re.escape(name)}\s*\(|^\s*(?:const|let|var)\s+{re.escape(name)}\s*="
        return re.search(pattern, code) is not None

    def parse_error(self, log: str) -> str | None:
        # node prints a parse error as "SyntaxError: ..." with a stack of its own loader only
        # (node:internal/...); a SyntaxError thrown while the program runs (JSON.parse, eval,
        # a throw) has a frame in the program. Only the program itself could fake one, and
        # only to its own loss: it never ran a case.
        lines = log.splitlines()
        for i, line in enumerate(lines):
            if not line.startswith("SyntaxError: "):
                continue
            frames = [x.strip() for x in lines[i + 1 :] if x.strip().startswith("at ")]
            if not frames or any("(node:" not in f and " node:" not in f for f in frames):
                return None
            where = [m.group(1) for x in lines[:i] if (m := re.search(r"main\.js:(\d+)\s*$", x))]
            at = f" (line {where[0]})" if where else ""
            return f"compile error: {line}{at}"
        return None


def _typed_prelude(returns: PyType) -> str:
    return _TYPED_ENCODER + f"const __codeeval_returns = {json.dumps(descriptor(returns))};\n"


@lru_cache(maxsize=1)
def _node() -> str:
    found = shutil.which("node") or shutil.which("nodejs")
    if not found:
        raise FileNotFoundError("node (Node.js) is not installed")
    return found


@lru_cache(maxsize=1)
def _node_version() -> str:
    done = subprocess.run([_node(), "--version"], capture_output=True, text=True, check=False)
    return "node " + done.stdout.strip()
