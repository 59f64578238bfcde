"""Java 17: ``long``/``Long`` for int, ``double``/``Double`` for float, ``String``,
``ArrayList``, ``Optional``, ``HashMap``, the records ``Pair``/``Triple``/``Quad`` (defined
with the driver, in the same file) for tuples, and ``Object`` for a Union (the candidate tells
the alternatives apart with ``instanceof``). The candidate's class is ``Problem``."""

from __future__ import annotations

import re
import shutil
import subprocess
from functools import lru_cache
from typing import Any

from harness.languages.base import Build, Language, block_comment, escaped_string, float_text
from harness.languages.translate import Signature
from harness.languages.types import PyType, Untranslatable
from harness.languages.unions import unions_in

IMPORTS = "import java.util.*;\nimport java.util.function.*;\nimport java.util.stream.*;\n"
TUPLES = {2: "Pair", 3: "Triple", 4: "Quad"}
_FIELDS = ("first", "second", "third", "fourth")
_BOXED = {"long": "Long", "double": "Double", "boolean": "Boolean"}

_KEYWORDS = """abstract assert boolean break byte case catch char class const continue default do
double else enum extends final finally float for goto if implements import instanceof int
interface long native new package private protected public return short static strictfp super
switch synchronized this throw throws transient try void volatile while true false null var
record yield""".split()

_ENCODER = r"""
final class CodeevalDriver {
    static void enc(StringBuilder o, Object v) {
        if (v == null) { o.append("null"); }
        else if (v instanceof Boolean) { o.append(v.toString()); }
        else if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) { o.append(v.toString()); }
        else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d)) o.append("\"NaN\"");
            else if (Double.isInfinite(d)) o.append(d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
            else o.append(Double.toString(d));
        }
        else if (v instanceof String) { str(o, (String) v); }
        else if (v instanceof java.util.Optional) { java.util.Optional<?> x = (java.util.Optional<?>) v; if (x.isPresent()) enc(o, x.get()); else o.append("null"); }
        else if (v instanceof java.util.List) { o.append('['); boolean f = true; for (Object x : (java.util.List<?>) v) { if (!f) o.append(','); f = false; enc(o, x); } o.append(']'); }
        else if (v instanceof java.util.Map) { o.append('['); boolean f = true; for (java.util.Map.Entry<?, ?> e : ((java.util.Map<?, ?>) v).entrySet()) { if (!f) o.append(','); f = false; o.append('['); enc(o, e.getKey()); o.append(','); enc(o, e.getValue()); o.append(']'); } o.append(']'); }
        else if (v instanceof Pair) { Pair<?, ?> p = (Pair<?, ?>) v; o.append('['); enc(o, p.first()); o.append(','); enc(o, p.second()); o.append(']'); }
        else if (v instanceof Triple) { Triple<?, ?, ?> p = (Triple<?, ?, ?>) v; o.append('['); enc(o, p.first()); o.append(','); enc(o, p.second()); o.append(','); enc(o, p.third()); o.append(']'); }
        else if (v instanceof Quad) { Quad<?, ?, ?, ?> p = (Quad<?, ?, ?, ?>) v; o.append('['); enc(o, p.first()); o.append(','); enc(o, p.second()); o.append(','); enc(o, p.third()); o.append(','); enc(o, p.fourth()); o.append(']'); }
        else { str(o, "unsupported value of class " + v.getClass().getName()); }
    }
    static void str(StringBuilder o, String s) {
        o.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') o.append('\\').append(c);
            else if (c < 0x20) o.append(String.format("\\u%04x", (int) c));
            else o.append(c);
        }
        o.append('"');
    }
}
record Pair<A, B>(A first, B second) {}
record Triple<A, B, C>(A first, B second, C third) {}
record Quad<A, B, C, D>(A first, B second, C third, D fourth) {}
"""

# Where the result's type holds a Union (an Object): the value is walked with its declared type
# (``T``: a kind and its arguments) and each Union's value is sent as [family, value], the
# alternative picked by the value's runtime class.
_TYPED_ENCODER = r"""
final class CodeevalTyped {
    static final class T { final String k; final T[] a; T(String k, T... a) { this.k = k; this.a = a; } }
    static void enc(StringBuilder o, Object v, T t) {
        switch (t.k) {
            case "union": tagged(o, v, t); return;
            case "optional":
                if (v instanceof java.util.Optional) { java.util.Optional<?> x = (java.util.Optional<?>) v; if (x.isPresent()) enc(o, x.get(), t.a[0]); else o.append("null"); return; }
                if (v != null) { enc(o, v, t.a[0]); return; }
                break;
            case "list": case "vartuple":
                if (v instanceof java.util.List) { o.append('['); boolean f = true; for (Object x : (java.util.List<?>) v) { if (!f) o.append(','); f = false; enc(o, x, t.a[0]); } o.append(']'); return; }
                break;
            case "dict":
                if (v instanceof java.util.Map) { o.append('['); boolean f = true; for (java.util.Map.Entry<?, ?> e : ((java.util.Map<?, ?>) v).entrySet()) { if (!f) o.append(','); f = false; o.append('['); enc(o, e.getKey(), t.a[0]); o.append(','); enc(o, e.getValue(), t.a[1]); o.append(']'); } o.append(']'); return; }
                break;
            case "tuple": {
                Object[] items = items(v);
                if (items != null && items.length == t.a.length) { o.append('['); for (int i = 0; i < items.length; i++) { if (i > 0) o.append(','); enc(o, items[i], t.a[i]); } o.append(']'); return; }
                break;
            }
            default: break;
        }
        CodeevalDriver.enc(o, v);
    }
    static Object[] items(Object v) {
        if (v instanceof Pair) { Pair<?, ?> p = (Pair<?, ?>) v; return new Object[] {p.first(), p.second()}; }
        if (v instanceof Triple) { Triple<?, ?, ?> p = (Triple<?, ?, ?>) v; return new Object[] {p.first(), p.second(), p.third()}; }
        if (v instanceof Quad) { Quad<?, ?, ?, ?> p = (Quad<?, ?, ?, ?>) v; return new Object[] {p.first(), p.second(), p.third(), p.fourth()}; }
        return null;
    }
    static String runtime(Object v) {
        if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) return "int";
        if (v instanceof Double || v instanceof Float) return "float";
        if (v instanceof Boolean) return "bool";
        if (v instanceof String) return "str";
        if (v instanceof java.util.List) return "list";
        if (v instanceof java.util.Map) return "dict";
        if (items(v) != null) return "tuple";
        return v == null ? "null" : "class " + v.getClass().getName();
    }
    static void tagged(StringBuilder o, Object v, T t) {
        String kind = runtime(v);
        for (T alt : t.a) {
            String held = alt.k.equals("vartuple") ? "list" : alt.k;  // an ArrayList
            if (held.equals(kind)) {
                o.append(alt.k.equals("vartuple") ? "[\"tuple\"," : "[\"" + alt.k + "\",");
                enc(o, v, alt); o.append(']'); return;
            }
        }
        o.append('['); CodeevalDriver.str(o, kind); o.append(','); CodeevalDriver.enc(o, v); o.append(']');
    }
}
"""


def descriptor(t: PyType) -> str:
    """``t`` as the Java expression of the typed encoder's ``T``."""
    args = "".join(f", {descriptor(a)}" for a in t.args)
    return f'new CodeevalTyped.T("{t.kind}"{args})'


class Java(Language):
    name = "java"
    title = "Java"
    fence = "java"
    fence_tags = frozenset({"java"})
    keywords = frozenset(_KEYWORDS)
    case_timeout_s = 5.0
    startup_s = 10.0
    completion_stops = ("\n    }\n",)

    def type_name(self, t: PyType, boxed: bool = False) -> str:
        kind = t.kind
        simple = {"int": "long", "float": "double", "bool": "boolean", "str": "String"}
        if kind in simple:
            name = simple[kind]
            return _BOXED.get(name, name) if boxed else name
        if kind in ("list", "vartuple"):
            return f"ArrayList<{self.type_name(t.args[0], True)}>"
        if kind == "tuple":
            if len(t.args) not in TUPLES:
                raise Untranslatable(f"Java has no tuple of {len(t.args)} items")
            return (
                f"{TUPLES[len(t.args)]}<" + ", ".join(self.type_name(a, True) for a in t.args) + ">"
            )
        if kind == "optional":
            return f"Optional<{self.type_name(t.args[0], True)}>"
        if kind == "dict":
            key, value = (self.type_name(a, True) for a in t.args)
            return f"HashMap<{key}, {value}>"
        if kind == "union":
            held = [a.kind.replace("vartuple", "list") for a in t.args]
            if len(set(held)) != len(held):  # one runtime class for two alternatives
                raise Untranslatable(f"Java's ArrayList cannot tell a list from a tuple in {t}")
            for a in t.args:
                self.type_name(a)
            return "Object"
        raise Untranslatable(f"Java has no translation for {t}")

    def literal(self, value: Any, t: PyType) -> str:
        kind = t.kind
        if kind == "optional":
            inner = self.type_name(t.args[0], True)
            if value is None:
                return f"Optional.<{inner}>empty()"
            return f"Optional.<{inner}>of({self.literal(value, t.args[0])})"
        if kind == "union":
            alt = self.alternative(value, t)
            return self.literal(value, alt)  # boxed into the Object the Union is
        if kind == "int":
            return "Long.MIN_VALUE" if value == -(2**63) else f"{value}L"
        if kind == "float":
            return float_text(value)
        if kind == "bool":
            return "true" if value else "false"
        if kind == "str":
            return escaped_string(value, "java")
        if kind in ("list", "vartuple"):
            element = self.type_name(t.args[0], True)
            items = ", ".join(self.literal(v, t.args[0]) for v in value)
            return f"new ArrayList<{element}>(Arrays.<{element}>asList({items}))"
        if kind == "tuple":
            items = ", ".join(self.literal(v, a) for v, a in zip(value, t.args, strict=True))
            return f"new {self.type_name(t)}({items})"
        if kind == "dict":
            puts = "".join(
                f"put({self.literal(k, t.args[0])}, {self.literal(v, t.args[1])}); "
                for k, v in value.items()
            )
            return f"new {self.type_name(t)}() {{{{ {puts}}}}}"
        raise Untranslatable(f"Java has no literal for {t}")

    def stub(self, signature: Signature, doc: str) -> str:
        params = ", ".join(f"{self.type_name(t)} {self.ident(n)}" for n, t in signature.params)
        returns = self.type_name(signature.returns)
        comment = block_comment(doc, "    ")
        return (
            f"{IMPORTS}\nclass Problem {{\n{comment}"
            f"    public static {returns} {signature.name}({params}) {{\n"
        )

    def driver(self, signature: Signature, cases: list[list[tuple[Any, ...]]]) -> str:
        types = [t for _, t in signature.params]
        typed = bool(unions_in(signature.returns))
        encode, close = "CodeevalDriver.enc(o, ", ")"
        if typed:  # tagged Union values: the encoder walks the declared type
            encode, close = "CodeevalTyped.enc(o, ", ", Main.RETURNS)"
        branches = []
        for index, calls in enumerate(cases):
            lines = [f"            case {index}: {{"]
            for number, args in enumerate(calls):
                rendered = ", ".join(self.literal(a, t) for a, t in zip(args, types, strict=True))
                separator = "" if number == 0 else "o.append(','); "
                lines.append(
                    f"                {separator}{encode}"
                    f"(Object) Problem.{signature.name}({rendered}){close};"
                )
            lines.append("                break; }")
            branches.append("\n".join(lines))
        return (
            "\n// ---- codeeval driver (generated) ----\n"
            + _ENCODER
            + (_TYPED_ENCODER if typed else "")
            + "final class Main {\n"
            + (
                f"    static final CodeevalTyped.T RETURNS = {descriptor(signature.returns)};\n"
                if typed
                else ""
            )
            + "    static void run(int i, StringBuilder o) {\n        switch (i) {\n"
            + "\n".join(branches)
            + "\n        }\n    }\n"
            + "    public static void main(String[] args) throws Exception {\n"
            + "        String nonce = new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();\n"
            + "        int start = Integer.parseInt(args[0]);\n"
            + '        java.io.OutputStream out = new java.io.FileOutputStream("/proc/self/fd/" + args[1]);\n'
            + '        out.write(("{\\"n\\":\\"" + nonce + "\\",\\"ready\\":true}\\n").getBytes("UTF-8")); out.flush();\n'
            + f"        for (int i = start; i < {len(cases)}; i++) {{\n"
            + '            String head = "{\\"n\\":\\"" + nonce + "\\",\\"c\\":" + i;\n'
            + "            StringBuilder o = new StringBuilder();\n"
            + "            String line;\n"
            + '            try { run(i, o); line = head + ",\\"v\\":[" + o + "]}\\n"; }\n'
            + "            catch (Throwable t) { StringBuilder e = new StringBuilder(); "
            + 'CodeevalDriver.str(e, t.getClass().getSimpleName() + ": " + t.getMessage()); '
            + 'line = head + ",\\"e\\":" + e + "}\\n"; }\n'
            + '            out.write(line.getBytes("UTF-8")); out.flush();\n'
            + "        }\n"
            + '        out.write(("{\\"n\\":\\"" + nonce + "\\",\\"done\\":true}\\n").getBytes("UTF-8")); out.flush();\n'
            + "    }\n}\n"
        )

    def build(self) -> Build:
        javac, java = _tools()
        return Build(
            source_name="Problem.java",
            compile=(
                javac,
                "-J-Xmx512m",
                "-J-XX:+UseSerialGC",
                "-J-XX:TieredStopAtLevel=1",
                "-J-XX:-UsePerfData",
                "-nowarn",
                "-encoding",
                "UTF-8",
                "-d",
                ".",
                "Problem.java",
            ),
            run=(
                java,
                "-Xmx256m",
                "-Xss16m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-XX:-UsePerfData",
                "-XX:ActiveProcessorCount=1",
                "-XX:ReservedCodeCacheSize=64m",
                "-XX:CompressedClassSpaceSize=64m",
                "-Djava.io.tmpdir=/tmp/w",
                "-cp",
                "{build}",
                "Main",
                "{start}",
                "{fd}",
            ),
            max_processes=256,
        )

    def version(self) -> str:
        return _version()

    def entry_defined(self, code: str, name: str) -> bool:
        return re.search(r"\bclass\s+Problem\b", code) is not None

    def whole_solution(self, code: str, entry_point: str, preamble: str) -> str | None:
        """Also a method without its ``class Problem``: wrapped in one."""
        whole = super().whole_solution(code, entry_point, preamble)
        if whole is None and _defines_method(code, entry_point):
            whole = preamble + "class Problem {\n" + code + "\n}\n"
        return whole


def _defines_method(code: str, name: str) -> bool:
    pattern = rf"\b{re.escape(name)}\s*\([^;{{]*\)\s*(?:throws[^{{]*)?\{{"
    return re.search(pattern, code) is not None


@lru_cache(maxsize=1)
def _tools() -> tuple[str, str]:
    javac, java = shutil.which("javac"), shutil.which("java")
    if not javac or not java:
        raise FileNotFoundError("a JDK (javac and java, 17 or later) is not installed")
    return javac, java


@lru_cache(maxsize=1)
def _version() -> str:
    done = subprocess.run([_tools()[0], "-version"], capture_output=True, text=True, check=False)
    return (done.stdout + done.stderr).strip() or "javac"
