"""MultiPL-E's programs: the four languages as MultiPL-E writes them (``multiple-js`` ...).

MultiPL-E's prompts fix their own types (C++ ``float`` and ``std::vector<long>``, Java
``ArrayList<Long>``, javatuples' ``Pair``, Rust ``isize``), so the calls cannot be rendered from
Python values by the project's translations. A dialect keeps its language's toolchain and
assembly, and its driver makes MultiPL-E's own call, argument text verbatim (the suite passes
it as the case's only "argument", :mod:`suites.multiple_e`), and sends back the value it
returned, encoded by its runtime type:

- lists as JSON lists, ``{"t": [...]}`` for a tuple (C++ ``std::tuple``, Java ``Pair``/
  ``Triplet``, Rust tuples), ``{"m": [[key, value], ...]}`` for a map, ``null`` for an empty
  C++/Rust optional, ``{"o": []}``/``{"o": [value]}`` for a Java ``Optional`` (kept as
  :class:`Opt`: ``Optional.of(Optional.empty())`` equals no honest value, as in Java),
  ``{"f": "NaN"}`` for a float JSON has no number for;
- JavaScript keeps each value's type (``["n", 1]``, ``["s", "a"]``, ``["a", [...]]``, ``["o",
  [[key, value], ...]]``, ``["null"]``, ``["u"]``) for ``assert.deepEqual``'s loose equality.

:meth:`decode_result` turns that into the Python value the trusted check compares. A case
whose "argument" is ``("program", body)`` runs MultiPL-E's test body itself and sends
``"completed"`` when it ends (the suite's fallback; Java runs with ``-ea`` for its asserts).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from harness.languages.base import Build
from harness.languages.cpp import Cpp
from harness.languages.java import Java
from harness.languages.javascript import JavaScript
from harness.languages.rust import Rust
from harness.languages.translate import Signature
from harness.languages.types import DecodeError, PyType

JAVATUPLES_JAR = "/usr/share/java/javatuples.jar"
COMPLETED = "completed"


@dataclass(frozen=True)
class Opt:
    """A Java ``Optional``: ``Opt(False)`` is ``Optional.empty()``."""

    present: bool
    value: Any = None


def decode_tagged(data: Any, depth: int = 0) -> Any:
    """The Python value of a dialect driver's JSON (see the module doc)."""
    if depth > 200:
        raise DecodeError("returned value: nested too deeply")
    if isinstance(data, list):
        return [decode_tagged(x, depth + 1) for x in data]
    if not isinstance(data, dict):
        return data
    if len(data) != 1:
        raise DecodeError(f"returned value: an unknown tagged value {str(data)[:80]}")
    ((tag, body),) = data.items()
    if tag == "t" and isinstance(body, list):
        return tuple(decode_tagged(x, depth + 1) for x in body)
    if tag == "m" and isinstance(body, list) and all(_pair(p) for p in body):
        return {
            _hashable(decode_tagged(k, depth + 1)): decode_tagged(v, depth + 1) for k, v in body
        }
    if tag == "o" and isinstance(body, list) and len(body) <= 1:
        return Opt(True, decode_tagged(body[0], depth + 1)) if body else Opt(False)
    if tag == "f" and body in ("NaN", "Infinity", "-Infinity"):
        return float(body.replace("Infinity", "inf"))
    if tag == "x":
        raise DecodeError(f"returned value: a {str(body)[:60]} the driver cannot send back")
    raise DecodeError(f"returned value: an unknown tagged value {str(data)[:80]}")


def _pair(item: Any) -> bool:
    return isinstance(item, list) and len(item) == 2


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


def _call(case: tuple[Any, ...]) -> tuple[str, str]:
    """``("call", argument text)`` or ``("program", test body)`` for one case's only call."""
    (argument,) = case
    if isinstance(argument, tuple) and argument[:1] == ("program",):
        return "program", argument[1]
    return "call", argument


class _Dialect:
    """What the four dialects share: the name, the decoding, and the checks left out."""

    base_name = ""

    def decode_result(self, data: Any, returns: PyType) -> Any:
        return decode_tagged(data)

    def check_types(self, signature: Signature) -> None:  # MultiPL-E's own types
        return None


_JS_ENCODER = r"""
function __codeeval_enc(v, depth) {
  if (depth > 200) throw new RangeError('nested too deeply');
  if (v === null) return ['null'];
  switch (typeof v) {
    case 'undefined': return ['u'];
    case 'number': return ['n', Number.isFinite(v) ? v : String(v)];
    case 'string': return ['s', v];
    case 'boolean': return ['b', v];
    case 'object':
      if (Array.isArray(v)) return ['a', Array.from(v, (x) => __codeeval_enc(x, depth + 1))];
      return ['o', Object.keys(v).map((k) => [k, __codeeval_enc(v[k], depth + 1)])];
    default: return ['x', typeof v];
  }
}
"""


class MultiplEJs(_Dialect, JavaScript):
    name = "multiple-js"
    completion_stops = ("\nfunction ", "\n/*", "\n//", "\nconsole.log")  # MultiPL-E's

    def driver(self, signature: Signature, cases: list[list[tuple[Any, ...]]]) -> str:
        branches = []
        for index, calls in enumerate(cases):
            kind, text = _call(calls[0])
            if kind == "program":
                branches.append(f"    case {index}: {{\n{text}\n      return ['{COMPLETED}']; }}")
            else:
                call = f"__codeeval_enc({signature.name}({text}), 0)"
                branches.append(f"    case {index}: return [{call}];")
        return _JS_DRIVER.format(
            encoder=_JS_ENCODER, branches="\n".join(branches), count=len(cases)
        )

    def decode_result(self, data: Any, returns: PyType) -> Any:
        if data == COMPLETED:
            return data
        return data  # tagged JavaScript values: suites.multiple_e_literals.js_deep_equal


_JS_DRIVER = """
// ---- codeeval driver (generated) ----
{encoder}
function __codeeval_case(i) {{
  switch (i) {{
{branches}
  }}
  throw new Error('no such case');
}}
(function () {{
  const fs = require('fs');
  const nonce = fs.readFileSync(0, 'utf8').split('\\n')[0];
  const start = parseInt(process.argv[2], 10), fd = parseInt(process.argv[3], 10);
  fs.writeSync(fd, JSON.stringify({{n: nonce, ready: true}}) + '\\n');
  for (let i = start; i < {count}; i++) {{
    let line;
    try {{ line = JSON.stringify({{n: nonce, c: i, v: __codeeval_case(i)}}); }}
    catch (e) {{ line = JSON.stringify({{n: nonce, c: i, e: String(e && e.name ? e.name + ': ' + e.message : e)}}); }}
    fs.writeSync(fd, line + '\\n');
  }}
  fs.writeSync(fd, JSON.stringify({{n: nonce, done: true}}) + '\\n');
}})();
"""


_CPP_ENCODER = r"""
#include <unistd.h>
#include <cstdio>
#include <iostream>
namespace codeeval_driver {
void enc(std::string& o, bool v);
void enc(std::string& o, long v);
void enc(std::string& o, long long v);
void enc(std::string& o, int v);
void enc(std::string& o, unsigned long v);
void enc(std::string& o, double v);
void enc(std::string& o, float v);
void enc(std::string& o, char v);
void enc(std::string& o, const char* v);
void enc(std::string& o, const std::string& v);
template <class T> void enc(std::string& o, const std::vector<T>& v);
template <class T> void enc(std::string& o, const std::optional<T>& v);
template <class K, class V> void enc(std::string& o, const std::map<K, V>& v);
template <class A, class B> void enc(std::string& o, const std::pair<A, B>& v);
template <class... T> void enc(std::string& o, const std::tuple<T...>& v);
void enc(std::string& o, bool v) { o += v ? "true" : "false"; }
void enc(std::string& o, long v) { o += std::to_string(v); }
void enc(std::string& o, long long v) { o += std::to_string(v); }
void enc(std::string& o, int v) { o += std::to_string(v); }
void enc(std::string& o, unsigned long v) { o += std::to_string(v); }
void enc(std::string& o, double v) {
  if (std::isnan(v)) { o += "{\"f\":\"NaN\"}"; return; }
  if (std::isinf(v)) { o += v > 0 ? "{\"f\":\"Infinity\"}" : "{\"f\":\"-Infinity\"}"; return; }
  char buf[40]; std::snprintf(buf, sizeof buf, "%.17g", v); o += buf;
}
void enc(std::string& o, float v) { enc(o, (double)v); }
void enc(std::string& o, const std::string& v) {
  o += '"';
  for (unsigned char c : v) {
    if (c == '"' || c == '\\') { o += '\\'; o += (char)c; }
    else if (c < 0x20) { char buf[8]; std::snprintf(buf, sizeof buf, "\\u%04x", c); o += buf; }
    else o += (char)c;
  }
  o += '"';
}
void enc(std::string& o, char v) { enc(o, std::string(1, v)); }
void enc(std::string& o, const char* v) { enc(o, std::string(v)); }
template <class T> void enc(std::string& o, const std::vector<T>& v) {
  o += '[';
  for (size_t i = 0; i < v.size(); i++) { if (i) o += ','; enc(o, (T)v[i]); }
  o += ']';
}
template <class T> void enc(std::string& o, const std::optional<T>& v) {
  if (v.has_value()) enc(o, *v); else o += "null";
}
template <class K, class V> void enc(std::string& o, const std::map<K, V>& v) {
  o += "{\"m\":["; bool first = true;
  for (const auto& kv : v) { if (!first) o += ','; first = false; o += '['; enc(o, kv.first); o += ','; enc(o, kv.second); o += ']'; }
  o += "]}";
}
template <class A, class B> void enc(std::string& o, const std::pair<A, B>& v) {
  o += "{\"t\":["; enc(o, v.first); o += ','; enc(o, v.second); o += "]}";
}
template <class... T> void enc(std::string& o, const std::tuple<T...>& v) {
  o += "{\"t\":["; bool first = true;
  std::apply([&](const auto&... x) { ((o += first ? "" : ",", first = false, enc(o, x)), ...); }, v);
  o += "]}";
}
void put(int fd, const std::string& line) {
  size_t done = 0;
  while (done < line.size()) { ssize_t n = ::write(fd, line.data() + done, line.size() - done); if (n <= 0) std::_Exit(3); done += (size_t)n; }
}
}  // namespace codeeval_driver
"""


class MultiplECpp(_Dialect, Cpp):
    name = "multiple-cpp"
    completion_stops = ("\n}",)  # MultiPL-E's

    def driver(self, signature: Signature, cases: list[list[tuple[Any, ...]]]) -> str:
        branches = []
        for index, calls in enumerate(cases):
            kind, text = _call(calls[0])
            if kind == "program":
                body = f'{{\n{text}\n}} o += "\\"{COMPLETED}\\"";'
            else:
                body = f"auto r = {signature.name}({text}); codeeval_driver::enc(o, r);"
            branches.append(f"    case {index}: {{ {body} break; }}")
        return (
            "\n// ---- codeeval driver (generated) ----\n"
            + _CPP_ENCODER
            + "static void codeeval_case(int i, std::string& o) {\n  switch (i) {\n"
            + "\n".join(branches)
            + "\n  }\n}\n"
            + _CPP_MAIN.replace("@COUNT@", str(len(cases)))
        )

    def build(self) -> Build:
        """C++'s build without optimization, as MultiPL-E compiles (``g++ -std=c++17``), with
        ``<bits/stdc++.h>`` (every MultiPL-E prompt includes it) precompiled once per
        compiler: it is most of a compile's time. ``-include`` makes it the first header, as
        a precompiled header must be; the prompt's own include of it is then a no-op."""
        import dataclasses

        base = super().build()
        assert base.compile is not None
        flags = [a for a in base.compile if a != "-O1"]
        folder = precompiled_stdcpp(flags[0])
        if folder is None:
            return dataclasses.replace(base, compile=tuple(flags))
        flags[1:1] = ["-I", folder, "-include", "bits/stdc++.h"]
        keep = (*base.keep_paths, folder)
        return dataclasses.replace(base, compile=tuple(flags), keep_paths=keep)


@functools.lru_cache(maxsize=4)
def precompiled_stdcpp(gxx: str) -> str | None:
    """A folder holding ``bits/stdc++.h`` and its precompiled ``.gch`` for ``gxx`` with
    MultiPL-E's flags (built once, in the cache; None where it cannot be built: the compile
    then reads the header as usual). Only the compiler's own header is compiled here."""
    import hashlib
    import os
    import subprocess
    import tempfile

    from harness.paths import cache_dir

    try:
        probe = subprocess.run(
            [gxx, "-std=c++17", "-x", "c++", "-E", "-H", "-o", os.devnull, "-"],
            input="#include <bits/stdc++.h>\n",
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        header = next(line[2:] for line in probe.stderr.splitlines() if line.startswith(". "))
        version = subprocess.run([gxx, "--version"], capture_output=True, text=True).stdout
        key = hashlib.sha256(f"{gxx}\0{version}\0{header}".encode()).hexdigest()[:16]
        folder = cache_dir() / "languages-pch" / key
        if (folder / "bits" / "stdc++.h.gch").is_file():
            return str(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = tempfile.mkdtemp(prefix="pch-", dir=folder.parent)
        os.makedirs(os.path.join(staging, "bits"))
        os.symlink(os.path.realpath(header), os.path.join(staging, "bits", "stdc++.h"))
        gch = os.path.join(staging, "bits", "stdc++.h.gch")
        command = [gxx, "-std=c++17", "-pipe", "-x", "c++-header", header, "-o", gch]
        subprocess.run(command, capture_output=True, timeout=300, check=True)
        for path in (staging, os.path.join(staging, "bits")):
            os.chmod(path, 0o755)
        os.chmod(gch, 0o644)
        try:
            os.rename(staging, folder)  # another process may have won: its folder is as good
        except OSError:
            subprocess.run(["rm", "-rf", staging], check=False)
        return str(folder) if (folder / "bits" / "stdc++.h.gch").is_file() else None
    except (OSError, subprocess.SubprocessError, StopIteration):
        return None


_CPP_MAIN = r"""int main(int argc, char** argv) {
  std::string nonce; std::getline(std::cin, nonce);
  int start = std::atoi(argv[1]); int fd = std::atoi(argv[2]);
  codeeval_driver::put(fd, "{\"n\":\"" + nonce + "\",\"ready\":true}\n");
  for (int i = start; i < @COUNT@; i++) {
    std::string head = "{\"n\":\"" + nonce + "\",\"c\":" + std::to_string(i);
    std::string o;
    try { codeeval_case(i, o); o = head + ",\"v\":[" + o + "]}\n"; }
    catch (const std::exception& e) { o.clear(); o = head + ",\"e\":"; codeeval_driver::enc(o, std::string("exception: ") + e.what()); o += "}\n"; }
    catch (...) { o = head + ",\"e\":\"exception: (not a std::exception)\"}\n"; }
    codeeval_driver::put(fd, o);
  }
  codeeval_driver::put(fd, "{\"n\":\"" + nonce + "\",\"done\":true}\n");
  return 0;
}
"""


_JAVA_ENCODER = r"""
final class CodeevalDriver {
    static void enc(StringBuilder o, Object v, int depth) {
        if (depth > 200) throw new IllegalStateException("nested too deeply");
        if (v == null) { o.append("null"); }
        else if (v instanceof Boolean) { o.append(v.toString()); }
        else if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) { o.append(v.toString()); }
        else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d)) o.append("{\"f\":\"NaN\"}");
            else if (Double.isInfinite(d)) o.append(d > 0 ? "{\"f\":\"Infinity\"}" : "{\"f\":\"-Infinity\"}");
            else o.append(Double.toString(d));
        }
        else if (v instanceof String || v instanceof Character) { str(o, v.toString()); }
        else if (v instanceof Optional) {
            Optional<?> opt = (Optional<?>) v;
            o.append("{\"o\":[");
            if (opt.isPresent()) enc(o, opt.get(), depth + 1);
            o.append("]}");
        }
        else if (v instanceof org.javatuples.Tuple) { o.append("{\"t\":"); enc(o, ((org.javatuples.Tuple) v).toList(), depth + 1); o.append("}"); }
        else if (v instanceof List) {
            o.append('['); boolean first = true;
            for (Object x : (List<?>) v) { if (!first) o.append(','); first = false; enc(o, x, depth + 1); }
            o.append(']');
        }
        else if (v instanceof Map) {
            o.append("{\"m\":["); boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) o.append(','); first = false;
                o.append('['); enc(o, e.getKey(), depth + 1); o.append(','); enc(o, e.getValue(), depth + 1); o.append(']');
            }
            o.append("]}");
        }
        else { o.append("{\"x\":"); str(o, v.getClass().getName()); o.append("}"); }
    }
    static void str(StringBuilder o, String s) {
        o.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') { o.append('\\').append(c); }
            else if (c < 0x20 || (c >= 0xD800 && c <= 0xDFFF)) { o.append(String.format("\\u%04x", (int) c)); }
            else o.append(c);
        }
        o.append('"');
    }
}
"""


class MultiplEJava(_Dialect, Java):
    name = "multiple-java"
    completion_stops = ("\n    }\n",)  # MultiPL-E's

    def driver(self, signature: Signature, cases: list[list[tuple[Any, ...]]]) -> str:
        import re

        branches = []
        for index, calls in enumerate(cases):
            kind, text = _call(calls[0])
            if kind == "program":  # MultiPL-E's main calls the method unqualified
                text = re.sub(rf"\b(?<!\.){signature.name}\(", f"Problem.{signature.name}(", text)
                body = f'{{\n{text}\n}} o.append("\\"{COMPLETED}\\"");'
            else:
                body = f"CodeevalDriver.enc(o, (Object) Problem.{signature.name}({text}), 0);"
            branches.append(f"            case {index}: {{ {body} break; }}")
        return (
            "\n// ---- codeeval driver (generated) ----\n"
            + _JAVA_ENCODER
            + "final class Main {\n    static void run(int i, StringBuilder o) {\n"
            + "        switch (i) {\n"
            + "\n".join(branches)
            + "\n        }\n    }\n"
            + _JAVA_MAIN.replace("@COUNT@", str(len(cases)))
            + "}\n"
        )

    def build(self) -> Build:
        """Java's build with javatuples on the class path (MultiPL-E's prompts import it)
        and ``-ea`` (MultiPL-E's tests are ``assert`` statements)."""
        import dataclasses

        base = super().build()
        assert base.compile is not None
        compile_ = (*base.compile[:-1], "-cp", JAVATUPLES_JAR, base.compile[-1])
        run = list(base.run)
        where = run.index("-cp")
        run[where + 1] = "{build}:" + JAVATUPLES_JAR
        run.insert(1, "-ea")
        return dataclasses.replace(base, compile=compile_, run=tuple(run))


_JAVA_MAIN = r"""    public static void main(String[] args) throws Exception {
        String nonce = new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
        int start = Integer.parseInt(args[0]);
        java.io.OutputStream out = new java.io.FileOutputStream("/proc/self/fd/" + args[1]);
        out.write(("{\"n\":\"" + nonce + "\",\"ready\":true}\n").getBytes("UTF-8")); out.flush();
        for (int i = start; i < @COUNT@; i++) {
            String head = "{\"n\":\"" + nonce + "\",\"c\":" + i;
            StringBuilder o = new StringBuilder();
            String line;
            try { run(i, o); line = head + ",\"v\":[" + o + "]}\n"; }
            catch (Throwable t) { StringBuilder e = new StringBuilder(); CodeevalDriver.str(e, t.getClass().getSimpleName() + ": " + t.getMessage()); line = head + ",\"e\":" + e + "}\n"; }
            out.write(line.getBytes("UTF-8")); out.flush();
        }
        out.write(("{\"n\":\"" + nonce + "\",\"done\":true}\n").getBytes("UTF-8")); out.flush();
    }
"""


_RUST_ENCODER = r"""
trait CodeevalEnc { fn codeeval_enc(&self, o: &mut String); }
macro_rules! codeeval_int { ($($t:ty),*) => { $(impl CodeevalEnc for $t { fn codeeval_enc(&self, o: &mut String) { o.push_str(&self.to_string()); } })* } }
codeeval_int!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);
impl CodeevalEnc for bool { fn codeeval_enc(&self, o: &mut String) { o.push_str(if *self { "true" } else { "false" }); } }
impl CodeevalEnc for f64 { fn codeeval_enc(&self, o: &mut String) {
    if self.is_nan() { o.push_str("{\"f\":\"NaN\"}"); }
    else if self.is_infinite() { o.push_str(if *self > 0.0 { "{\"f\":\"Infinity\"}" } else { "{\"f\":\"-Infinity\"}" }); }
    else { o.push_str(&format!("{:?}", self)); }
} }
impl CodeevalEnc for f32 { fn codeeval_enc(&self, o: &mut String) { (*self as f64).codeeval_enc(o); } }
impl CodeevalEnc for String { fn codeeval_enc(&self, o: &mut String) { codeeval_str(o, self); } }
impl CodeevalEnc for &str { fn codeeval_enc(&self, o: &mut String) { codeeval_str(o, self); } }
impl CodeevalEnc for char { fn codeeval_enc(&self, o: &mut String) { codeeval_str(o, &self.to_string()); } }
impl CodeevalEnc for () { fn codeeval_enc(&self, o: &mut String) { o.push_str("{\"t\":[]}"); } }
impl<T: CodeevalEnc> CodeevalEnc for Vec<T> { fn codeeval_enc(&self, o: &mut String) {
    o.push('['); for (i, x) in self.iter().enumerate() { if i > 0 { o.push(','); } x.codeeval_enc(o); } o.push(']');
} }
impl<T: CodeevalEnc> CodeevalEnc for Option<T> { fn codeeval_enc(&self, o: &mut String) {
    match self { Some(x) => x.codeeval_enc(o), None => o.push_str("null") }
} }
impl<K: CodeevalEnc, V: CodeevalEnc> CodeevalEnc for std::collections::HashMap<K, V> { fn codeeval_enc(&self, o: &mut String) {
    o.push_str("{\"m\":["); for (i, (k, v)) in self.iter().enumerate() { if i > 0 { o.push(','); } o.push('['); k.codeeval_enc(o); o.push(','); v.codeeval_enc(o); o.push(']'); } o.push_str("]}");
} }
macro_rules! codeeval_tuple { ($($n:tt $t:ident),*) => { impl<$($t: CodeevalEnc),*> CodeevalEnc for ($($t,)*) { fn codeeval_enc(&self, o: &mut String) {
    o.push_str("{\"t\":["); let mut first = true; $( if !first { o.push(','); } first = false; self.$n.codeeval_enc(o); )* let _ = first; o.push_str("]}");
} } } }
codeeval_tuple!(0 A);
codeeval_tuple!(0 A, 1 B);
codeeval_tuple!(0 A, 1 B, 2 C);
codeeval_tuple!(0 A, 1 B, 2 C, 3 D);
fn codeeval_str(o: &mut String, s: &str) {
    o.push('"');
    for c in s.chars() {
        match c { '"' => o.push_str("\\\""), '\\' => o.push_str("\\\\"), c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)), c => o.push(c) }
    }
    o.push('"');
}
fn codeeval_panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() { return format!("panic: {}", s); }
    if let Some(s) = p.downcast_ref::<String>() { return format!("panic: {}", s); }
    String::from("panic: (no message)")
}
"""


class MultiplERust(_Dialect, Rust):
    name = "multiple-rs"
    completion_stops = ("\n}",)  # MultiPL-E's

    def driver(self, signature: Signature, cases: list[list[tuple[Any, ...]]]) -> str:
        branches = []
        for index, calls in enumerate(cases):
            kind, text = _call(calls[0])
            if kind == "program":
                body = f'{{\n{text}\n}} o.push_str("\\"{COMPLETED}\\"");'
            else:
                body = f"let r = {signature.name}({text}); r.codeeval_enc(o);"
            branches.append(f"        {index} => {{ {body} }}")
        return (
            "\n// ---- codeeval driver (generated) ----\n"
            + _RUST_ENCODER
            + "#[allow(unused)]\nfn codeeval_case(i: usize, o: &mut String) {\n    match i {\n"
            + "\n".join(branches)
            + "\n        _ => {}\n    }\n}\n"
            + _RUST_MAIN.replace("@COUNT@", str(len(cases)))
        )

    def build(self) -> Build:
        """Rust's build without optimization, as MultiPL-E compiles (``rustc``)."""
        import dataclasses

        base = super().build()
        assert base.compile is not None
        flags = list(base.compile)
        where = flags.index("opt-level=1")
        del flags[where - 1 : where + 1]
        return dataclasses.replace(base, compile=tuple(flags))


_RUST_MAIN = r"""fn main() {
    use std::io::Write;
    let mut nonce = String::new();
    std::io::stdin().read_line(&mut nonce).unwrap();
    let nonce = nonce.trim_end().to_string();
    let args: Vec<String> = std::env::args().collect();
    let start: usize = args[1].parse().unwrap();
    let fd: i32 = args[2].parse().unwrap();
    let mut out = unsafe { <std::fs::File as std::os::unix::io::FromRawFd>::from_raw_fd(fd) };
    out.write_all(format!("{{\"n\":\"{}\",\"ready\":true}}\n", nonce).as_bytes()).unwrap();
    std::panic::set_hook(Box::new(|_| {}));
    for i in start..@COUNT@ {
        let got = std::panic::catch_unwind(|| { let mut o = String::new(); codeeval_case(i, &mut o); o });
        let line = match got {
            Ok(o) => format!("{{\"n\":\"{}\",\"c\":{},\"v\":[{}]}}\n", nonce, i, o),
            Err(p) => { let mut e = String::new(); codeeval_str(&mut e, &codeeval_panic_text(p)); format!("{{\"n\":\"{}\",\"c\":{},\"e\":{}}}\n", nonce, i, e) }
        };
        out.write_all(line.as_bytes()).unwrap();
    }
    out.write_all(format!("{{\"n\":\"{}\",\"done\":true}}\n", nonce).as_bytes()).unwrap();
}
"""

DIALECTS = (MultiplEJs(), MultiplECpp(), MultiplEJava(), MultiplERust())
