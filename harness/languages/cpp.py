"""C++17 (g++ 12): ``long`` for int, ``double`` for float, ``std::string``, ``std::vector``,
``std::tuple``, ``std::optional``, ``std::map`` and ``std::variant`` for a Union."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from functools import lru_cache
from typing import Any

from harness.languages.base import Build, Language, block_comment, escaped_string, float_text
from harness.languages.translate import Signature
from harness.languages.types import PyType, Untranslatable, family
from harness.languages.unions import unions_in

HEADERS = """#include <algorithm>
#include <cassert>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>
using namespace std;
"""

_KEYWORDS = """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t
char32_t class compl const constexpr const_cast continue decltype default delete do double
dynamic_cast else enum explicit export extern false float for friend goto if inline int long
mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public
register reinterpret_cast return short signed sizeof static static_assert static_cast struct
switch template this thread_local throw true try typedef typeid typename union unsigned using
virtual void volatile wchar_t while xor xor_eq main""".split()

_ENCODERS = r"""
#include <unistd.h>
#include <cstdio>
namespace codeeval_driver {
void enc(std::string& o, bool v);
void enc(std::string& o, long v);
void enc(std::string& o, double v);
void enc(std::string& o, const std::string& v);
template <class T> void enc(std::string& o, const std::vector<T>& v);
template <class T> void enc(std::string& o, const std::optional<T>& v);
template <class K, class V> void enc(std::string& o, const std::map<K, V>& v);
template <class... T> void enc(std::string& o, const std::tuple<T...>& v);
@VARIANT_DECLARATION@void enc(std::string& o, bool v) { o += v ? "true" : "false"; }
void enc(std::string& o, long v) { o += std::to_string(v); }
void enc(std::string& o, double v) {
  if (std::isnan(v)) { o += "\"NaN\""; return; }
  if (std::isinf(v)) { o += v > 0 ? "\"Infinity\"" : "\"-Infinity\""; return; }
  char buf[40]; std::snprintf(buf, sizeof buf, "%.17g", v); o += buf;
}
void enc(std::string& o, const std::string& v) {
  o += '"';
  for (unsigned char c : v) {
    if (c == '"' || c == '\\') { o += '\\'; o += (char)c; }
    else if (c < 0x20) { char buf[8]; std::snprintf(buf, sizeof buf, "\\u%04x", c); o += buf; }
    else o += (char)c;
  }
  o += '"';
}
template <class T> void enc(std::string& o, const std::vector<T>& v) {
  o += '[';
  for (size_t i = 0; i < v.size(); i++) { if (i) o += ','; enc(o, (T)v[i]); }
  o += ']';
}
template <class T> void enc(std::string& o, const std::optional<T>& v) {
  if (v.has_value()) enc(o, *v); else o += "null";
}
template <class K, class V> void enc(std::string& o, const std::map<K, V>& v) {
  o += '['; bool first = true;
  for (const auto& kv : v) { if (!first) o += ','; first = false; o += '['; enc(o, kv.first); o += ','; enc(o, kv.second); o += ']'; }
  o += ']';
}
template <class... T> void enc(std::string& o, const std::tuple<T...>& v) {
  o += '['; bool first = true;
  std::apply([&](const auto&... x) { ((o += first ? "" : ",", first = false, enc(o, x)), ...); }, v);
  o += ']';
}
@VARIANT_DEFINITION@void put(int fd, const std::string& line) {
  size_t done = 0;
  while (done < line.size()) { ssize_t n = ::write(fd, line.data() + done, line.size() - done); if (n <= 0) std::_Exit(3); done += (size_t)n; }
}
}  // namespace codeeval_driver
"""

# A Union's value goes out as [family, value]: the family of the alternative the variant holds,
# from a table per variant type (``tags``, specialized by the driver for each Union it returns).
_VARIANT_DECLARATION = """template <class V> struct tags;
template <class... T> void enc(std::string& o, const std::variant<T...>& v);
"""
_VARIANT_DEFINITION = """template <class... T> void enc(std::string& o, const std::variant<T...>& v) {
  if (v.valueless_by_exception()) throw std::bad_variant_access();
  o += "[\\""; o += tags<std::variant<T...>>::names[v.index()]; o += "\\",";
  std::visit([&](const auto& x) { enc(o, x); }, v);
  o += ']';
}
"""


class Cpp(Language):
    name = "cpp"
    title = "C++"
    fence = "cpp"
    fence_tags = frozenset({"cpp", "c++", "cc", "cxx"})
    keywords = frozenset(_KEYWORDS)
    case_timeout_s = 5.0
    startup_s = 5.0

    def type_name(self, t: PyType) -> str:
        kind = t.kind
        if kind == "int":
            return "long"
        if kind == "float":
            return "double"
        if kind == "bool":
            return "bool"
        if kind == "str":
            return "std::string"
        if kind in ("list", "vartuple"):
            return f"std::vector<{self.type_name(t.args[0])}>"
        if kind == "tuple":
            return "std::tuple<" + ", ".join(self.type_name(a) for a in t.args) + ">"
        if kind == "optional":
            return f"std::optional<{self.type_name(t.args[0])}>"
        if kind == "dict":
            return f"std::map<{self.type_name(t.args[0])}, {self.type_name(t.args[1])}>"
        if kind == "union":
            names = [self.type_name(a) for a in t.args]
            if len(set(names)) != len(names):  # a list and a variable tuple: both vectors
                raise Untranslatable(f"C++ variant alternatives of {t} would not be distinct")
            return f"std::variant<{', '.join(names)}>"
        raise Untranslatable(f"C++ has no translation for {t}")

    def literal(self, value: Any, t: PyType) -> str:
        kind = t.kind
        if kind == "optional":
            if value is None:
                return f"{self.type_name(t)}()"
            return f"{self.type_name(t)}({self.literal(value, t.args[0])})"
        if kind == "union":
            alt = self.alternative(value, t)
            index = t.args.index(alt)  # in place: no conversion may pick another alternative
            return f"{self.type_name(t)}(std::in_place_index<{index}>, {self.literal(value, alt)})"
        if kind == "int":
            return "LONG_MIN" if value == -(2**63) else f"{value}L"
        if kind == "float":
            return float_text(value)
        if kind == "bool":
            return "true" if value else "false"
        if kind == "str":
            return f"std::string({escaped_string(value, 'cpp')}, {len(value.encode())})"
        if kind in ("list", "vartuple"):
            items = ", ".join(self.literal(v, t.args[0]) for v in value)
            return f"{self.type_name(t)}{{{items}}}"
        if kind == "tuple":
            items = ", ".join(self.literal(v, a) for v, a in zip(value, t.args, strict=True))
            return f"{self.type_name(t)}({items})"
        if kind == "dict":
            items = ", ".join(
                f"{{{self.literal(k, t.args[0])}, {self.literal(v, t.args[1])}}}"
                for k, v in value.items()
            )
            return f"{self.type_name(t)}{{{items}}}"
        raise Untranslatable(f"C++ has no literal for {t}")

    def check_types(self, signature: Signature) -> None:
        super().check_types(signature)
        _tag_tables(signature.returns)  # two Unions of one variant type: Untranslatable

    def stub(self, signature: Signature, doc: str) -> str:
        params = ", ".join(f"{self.type_name(t)} {self.ident(n)}" for n, t in signature.params)
        returns = self.type_name(signature.returns)
        headers = HEADERS
        if any(unions_in(t) for t in (*(t for _, t in signature.params), signature.returns)):
            headers = headers.replace("#include <vector>", "#include <variant>\n#include <vector>")
        return f"{headers}\n{block_comment(doc)}{returns} {signature.name}({params}) {{\n"

    def driver(self, signature: Signature, cases: list[list[tuple[Any, ...]]]) -> str:
        types = [t for _, t in signature.params]
        returns = self.type_name(signature.returns)
        branches = []
        for index, calls in enumerate(cases):
            lines = [f"    case {index}: {{"]
            for number, args in enumerate(calls):
                rendered = ", ".join(self.literal(a, t) for a, t in zip(args, types, strict=True))
                separator = "" if number == 0 else 'o += ",";'
                lines.append(
                    f"      {{ {returns} r = {signature.name}({rendered}); {separator} "
                    "codeeval_driver::enc(o, r); }"
                )
            lines.append("      break; }")
            branches.append("\n".join(lines))
        return (
            "\n// ---- codeeval driver (generated) ----\n"
            + self._encoders(signature.returns)
            + "static void codeeval_case(int i, std::string& o) {\n  switch (i) {\n"
            + "\n".join(branches)
            + "\n  }\n}\n"
            + "int main(int argc, char** argv) {\n"
            + "  std::string nonce; std::getline(std::cin, nonce);\n"
            + "  int start = std::atoi(argv[1]); int fd = std::atoi(argv[2]);\n"
            + '  codeeval_driver::put(fd, "{\\"n\\":\\"" + nonce + "\\",\\"ready\\":true}\\n");\n'
            + f"  for (int i = start; i < {len(cases)}; i++) {{\n"
            + '    std::string head = "{\\"n\\":\\"" + nonce + "\\",\\"c\\":" + std::to_string(i);\n'
            + "    std::string o;\n"
            + '    try { codeeval_case(i, o); o = head + ",\\"v\\":[" + o + "]}\\n"; }\n'
            + '    catch (const std::exception& e) { o.clear(); o = head + ",\\"e\\":"; '
            + 'codeeval_driver::enc(o, std::string("exception: ") + e.what()); o += "}\\n"; }\n'
            + '    catch (...) { o = head + ",\\"e\\":\\"exception: (not a std::exception)\\"}\\n"; }\n'
            + "    codeeval_driver::put(fd, o);\n"
            + "  }\n"
            + '  codeeval_driver::put(fd, "{\\"n\\":\\"" + nonce + "\\",\\"done\\":true}\\n");\n'
            + "  return 0;\n}\n"
        )

    def _encoders(self, returns: PyType) -> str:
        tables = _tag_tables(returns)
        if not tables:
            return _ENCODERS.replace("@VARIANT_DECLARATION@", "").replace(
                "@VARIANT_DEFINITION@", ""
            )
        text = _ENCODERS.replace("@VARIANT_DECLARATION@", _VARIANT_DECLARATION)
        text = text.replace("@VARIANT_DEFINITION@", _VARIANT_DEFINITION)
        specializations = "".join(
            f"template <> struct tags<{name}> {{ static constexpr const char* names[] = "
            f"{{{', '.join(map(json.dumps, families))}}}; }};\n"
            for name, families in tables.items()
        )
        return f"#include <variant>\n{text}namespace codeeval_driver {{\n{specializations}}}\n"

    def build(self) -> Build:
        gxx = _gxx()
        return Build(
            source_name="main.cpp",
            compile=(gxx, "-std=c++17", "-O1", "-pipe", "-o", "main", "main.cpp"),
            run=("{build}/main", "{start}", "{fd}"),
        )

    def version(self) -> str:
        return _version()

    def entry_defined(self, code: str, name: str) -> bool:
        pattern = rf"(?m)^[\w:<>,\s\*&]*[\w>&\*]\s+{re.escape(name)}\s*\([^;{{]*\)\s*\{{"
        return re.search(pattern, code) is not None


def _tag_tables(returns: PyType) -> dict[str, tuple[str, ...]]:
    """Each variant type the result holds, with its alternatives' families (the tags)."""
    tables: dict[str, tuple[str, ...]] = {}
    for t in unions_in(returns):
        name = Cpp().type_name(t)
        families = tuple(family(a) for a in t.args)
        if tables.setdefault(name, families) != families:
            raise Untranslatable(f"two Unions of the result are one C++ type, {name}")
    return tables


@lru_cache(maxsize=1)
def _gxx() -> str:
    found = shutil.which("g++")
    if not found:
        raise FileNotFoundError("g++ is not installed")
    return found


@lru_cache(maxsize=1)
def _version() -> str:
    done = subprocess.run([_gxx(), "--version"], capture_output=True, text=True, check=False)
    return done.stdout.splitlines()[0] if done.stdout else "g++"
