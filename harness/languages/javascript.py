"""JavaScript (Node.js 18+, CommonJS): numbers for int and float, arrays for lists and tuples,
objects for ``dict[str, V]`` and ``Map`` for other dicts, ``null`` for an empty Optional."""

from __future__ import annotations

import re
import shutil
import subprocess
from functools import lru_cache
from typing import Any

from harness.languages.base import Build, Language, block_comment, float_text, json_string
from harness.languages.translate import Signature
from harness.languages.types import PyType, Untranslatable

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


class JavaScript(Language):
    name = "js"
    title = "JavaScript"
    fence = "javascript"
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
        raise Untranslatable(f"JavaScript has no translation for {t}")

    def literal(self, value: Any, t: PyType) -> str:
        kind = t.kind
        if kind == "optional":
            return "null" if value is None else self.literal(value, t.args[0])
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
            pairs = [
                (self.literal(k, t.args[0]), self.literal(v, t.args[1])) for k, v in value.items()
            ]
            if t.args[0].kind == "str":
                return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
            return "new Map([" + ", ".join(f"[{k}, {v}]" for k, v in pairs) + "])"
        raise Untranslatable(f"JavaScript has no literal for {t}")

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
        branches = []
        for index, calls in enumerate(cases):
            values = ", ".join(
                f"__codeeval_plain({signature.name}("
                + ", ".join(self.literal(a, t) for a, t in zip(args, types, strict=True))
                + "))"
                for args in calls
            )
            branches.append(f"    case {index}: return [{values}];")
        return (
            "\n// ---- codeeval driver (generated) ----\n"
            + _ENCODER
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
        return Build(
            source_name="main.js",
            compile=(node, "--check", "main.js"),
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
