"""Rust (edition 2021, rustc 1.63+): ``i64``, ``f64``, ``bool``, ``String``, ``Vec``, tuples,
``Option``, ``HashMap``, and for a Union an enum the stub defines (``enum Value { Int(i64),
Str(String) }``: one variant per alternative; the Unions of one signature share one enum where
their alternatives agree). Works with rustup's toolchain under ``/root`` (bound back into the
sandbox) and with Debian's ``rustc`` under ``/usr``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import lru_cache
from typing import Any

from harness.languages.base import Build, Language, doc_lines, escaped_string, float_text
from harness.languages.translate import Signature
from harness.languages.types import PyType, Untranslatable, family, union
from harness.languages.unions import unions_in

VARIANTS = {"int": "Int", "float": "Float", "bool": "Bool", "str": "Str", "list": "List"}
VARIANTS |= {"tuple": "Tuple", "dict": "Dict"}
Enums = dict[PyType, tuple[str, PyType]]  # a Union -> its enum's name and the Union it holds

_KEYWORDS = """as break const continue crate else enum extern false fn for if impl in let loop match
mod move mut pub ref return self Self static struct super trait true type unsafe use where while
async await dyn abstract become box do final macro override priv typeof unsized virtual yield
try main""".split()

_ENCODER = r"""
trait CodeevalEnc { fn codeeval_enc(&self, o: &mut String); }
impl CodeevalEnc for bool { fn codeeval_enc(&self, o: &mut String) { o.push_str(if *self { "true" } else { "false" }); } }
impl CodeevalEnc for i64 { fn codeeval_enc(&self, o: &mut String) { o.push_str(&self.to_string()); } }
impl CodeevalEnc for f64 { fn codeeval_enc(&self, o: &mut String) {
    if self.is_nan() { o.push_str("\"NaN\""); }
    else if self.is_infinite() { o.push_str(if *self > 0.0 { "\"Infinity\"" } else { "\"-Infinity\"" }); }
    else { o.push_str(&format!("{:e}", self)); }
} }
impl CodeevalEnc for String { fn codeeval_enc(&self, o: &mut String) { codeeval_str(o, self); } }
impl<T: CodeevalEnc> CodeevalEnc for Vec<T> { fn codeeval_enc(&self, o: &mut String) {
    o.push('['); for (i, x) in self.iter().enumerate() { if i > 0 { o.push(','); } x.codeeval_enc(o); } o.push(']');
} }
impl<T: CodeevalEnc> CodeevalEnc for Option<T> { fn codeeval_enc(&self, o: &mut String) {
    match self { Some(x) => x.codeeval_enc(o), None => o.push_str("null") }
} }
impl<K: CodeevalEnc, V: CodeevalEnc> CodeevalEnc for std::collections::HashMap<K, V> { fn codeeval_enc(&self, o: &mut String) {
    o.push('['); for (i, (k, v)) in self.iter().enumerate() { if i > 0 { o.push(','); } o.push('['); k.codeeval_enc(o); o.push(','); v.codeeval_enc(o); o.push(']'); } o.push(']');
} }
impl<A: CodeevalEnc, B: CodeevalEnc> CodeevalEnc for (A, B) { fn codeeval_enc(&self, o: &mut String) {
    o.push('['); self.0.codeeval_enc(o); o.push(','); self.1.codeeval_enc(o); o.push(']');
} }
impl<A: CodeevalEnc, B: CodeevalEnc, C: CodeevalEnc> CodeevalEnc for (A, B, C) { fn codeeval_enc(&self, o: &mut String) {
    o.push('['); self.0.codeeval_enc(o); o.push(','); self.1.codeeval_enc(o); o.push(','); self.2.codeeval_enc(o); o.push(']');
} }
impl<A: CodeevalEnc, B: CodeevalEnc, C: CodeevalEnc, D: CodeevalEnc> CodeevalEnc for (A, B, C, D) { fn codeeval_enc(&self, o: &mut String) {
    o.push('['); self.0.codeeval_enc(o); o.push(','); self.1.codeeval_enc(o); o.push(','); self.2.codeeval_enc(o); o.push(','); self.3.codeeval_enc(o); o.push(']');
} }
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


class Rust(Language):
    name = "rs"
    title = "Rust"
    fence = "rust"
    fence_tags = frozenset({"rust", "rs"})
    keywords = frozenset(_KEYWORDS)
    case_timeout_s = 5.0
    startup_s = 5.0

    def type_name(self, t: PyType, enums: Enums | None = None) -> str:
        enums = enum_names([t]) if enums is None else enums
        kind = t.kind
        simple = {"int": "i64", "float": "f64", "bool": "bool", "str": "String"}
        if kind in simple:
            return simple[kind]
        if kind in ("list", "vartuple"):
            return f"Vec<{self.type_name(t.args[0], enums)}>"
        if kind == "tuple":
            if not 2 <= len(t.args) <= 4:
                raise Untranslatable(
                    f"the Rust driver encodes tuples of 2-4 items, not {len(t.args)}"
                )
            return "(" + ", ".join(self.type_name(a, enums) for a in t.args) + ")"
        if kind == "optional":
            return f"Option<{self.type_name(t.args[0], enums)}>"
        if kind == "dict":
            if not hashable(t.args[0]):
                raise Untranslatable(f"Rust's HashMap has no {t.args[0]} keys (not hashable)")
            key, value = (self.type_name(a, enums) for a in t.args)
            return f"HashMap<{key}, {value}>"
        if kind == "union":
            for a in t.args:
                self.type_name(a, enums)
            return enums[t][0]
        raise Untranslatable(f"Rust has no translation for {t}")

    def literal(self, value: Any, t: PyType, enums: Enums | None = None) -> str:
        enums = enum_names([t]) if enums is None else enums
        kind = t.kind
        if kind == "optional":
            return "None" if value is None else f"Some({self.literal(value, t.args[0], enums)})"
        if kind == "union":
            alt = self.alternative(value, t)
            name = enums[t][0]
            return f"{name}::{VARIANTS[family(alt)]}({self.literal(value, alt, enums)})"
        if kind == "int":
            return "i64::MIN" if value == -(2**63) else f"{value}i64"
        if kind == "float":
            return float_text(value) + "f64"
        if kind == "bool":
            return "true" if value else "false"
        if kind == "str":
            return f"String::from({escaped_string(value, 'rust')})"
        if kind in ("list", "vartuple"):
            return "vec![" + ", ".join(self.literal(v, t.args[0], enums) for v in value) + "]"
        if kind == "tuple":
            return (
                "("
                + ", ".join(self.literal(v, a, enums) for v, a in zip(value, t.args, strict=True))
                + ")"
            )
        if kind == "dict":
            if not value:
                return "std::collections::HashMap::new()"
            items = ", ".join(
                f"({self.literal(k, t.args[0], enums)}, {self.literal(v, t.args[1], enums)})"
                for k, v in value.items()
            )
            return f"std::collections::HashMap::from([{items}])"
        raise Untranslatable(f"Rust has no literal for {t}")

    def check_types(self, signature: Signature) -> None:
        enums = signature_enums(signature)
        for _, t in signature.params:
            self.type_name(t, enums)
        self.type_name(signature.returns, enums)

    def stub(self, signature: Signature, doc: str) -> str:
        enums = signature_enums(signature)
        params = ", ".join(
            f"{self.ident(n)}: {self.type_name(t, enums)}" for n, t in signature.params
        )
        returns = self.type_name(signature.returns, enums)
        comment = "".join(f"/// {line}".rstrip() + "\n" for line in doc_lines(doc))
        defined = self.enum_definitions(enums)
        uses = (
            "use std::collections::HashMap;\n\n" if "HashMap" in params + returns + defined else ""
        )
        return f"{uses}{defined}{comment}fn {signature.name}({params}) -> {returns} {{\n"

    def enum_definitions(self, enums: Enums) -> str:
        """The stub's enums: one variant per alternative (``Int(i64)``), with the derives the
        alternatives allow (``Eq`` and ``Hash`` where it holds no float and no map)."""
        out = []
        for name, held in dict(enums.values()).items():
            derives = "Debug, Clone, PartialEq" + (", Eq, Hash" if hashable(held) else "")
            variants = "".join(
                f"    {VARIANTS[family(a)]}({self.type_name(a, enums)}),\n" for a in held.args
            )
            out.append(f"#[derive({derives})]\nenum {name} {{\n{variants}}}\n\n")
        return "".join(out)

    def drop_defined(self, preamble: str, code: str) -> str:
        """The stub's enums and ``use`` lines that a whole solution states itself are not
        added again (Rust refuses a second definition of a name)."""
        for name in re.findall(r"(?m)^enum (\w+) \{$", preamble):
            if re.search(rf"\benum\s+{name}\b", code):
                preamble = re.sub(
                    rf"(?ms)^(#\[derive\([^\n]*\)\]\n)?enum {name} \{{\n.*?^\}}\n\n?", "", preamble
                )
        lines = [
            line for line in preamble.split("\n") if not (line.startswith("use ") and line in code)
        ]
        return "\n".join(lines)

    def driver(self, signature: Signature, cases: list[list[tuple[Any, ...]]]) -> str:
        types = [t for _, t in signature.params]
        enums = signature_enums(signature)
        returns = self.type_name(signature.returns, enums)
        returns = returns.replace("HashMap", "std::collections::HashMap")
        branches = []
        for index, calls in enumerate(cases):
            lines = [f"        {index} => {{"]
            for number, args in enumerate(calls):
                rendered = ", ".join(
                    self.literal(a, t, enums) for a, t in zip(args, types, strict=True)
                )
                if number:
                    lines.append("            o.push(',');")
                lines.append(
                    f"            let r: {returns} = {signature.name}({rendered}); "
                    "r.codeeval_enc(o);"
                )
            lines.append("        }")
            branches.append("\n".join(lines))
        return (
            "\n// ---- codeeval driver (generated) ----\n"
            + _ENCODER
            + _enum_encoders(enums)
            + "fn codeeval_case(i: usize, o: &mut String) {\n    match i {\n"
            + "\n".join(branches)
            + "\n        _ => {}\n    }\n}\n"
            + "fn main() {\n"
            + "    use std::io::Write;\n"
            + "    let mut nonce = String::new();\n"
            + "    std::io::stdin().read_line(&mut nonce).unwrap();\n"
            + "    let nonce = nonce.trim_end().to_string();\n"
            + "    let args: Vec<String> = std::env::args().collect();\n"
            + "    let start: usize = args[1].parse().unwrap();\n"
            + "    let fd: i32 = args[2].parse().unwrap();\n"
            + "    let mut out = unsafe { <std::fs::File as std::os::unix::io::FromRawFd>::from_raw_fd(fd) };\n"
            + '    out.write_all(format!("{{\\"n\\":\\"{}\\",\\"ready\\":true}}\\n", nonce).as_bytes()).unwrap();\n'
            + "    std::panic::set_hook(Box::new(|_| {}));\n"
            + f"    for i in start..{len(cases)} {{\n"
            + "        let got = std::panic::catch_unwind(|| { let mut o = String::new(); codeeval_case(i, &mut o); o });\n"
            + "        let line = match got {\n"
            + '            Ok(o) => format!("{{\\"n\\":\\"{}\\",\\"c\\":{},\\"v\\":[{}]}}\\n", nonce, i, o),\n'
            + "            Err(p) => { let mut e = String::new(); codeeval_str(&mut e, &codeeval_panic_text(p)); "
            + 'format!("{{\\"n\\":\\"{}\\",\\"c\\":{},\\"e\\":{}}}\\n", nonce, i, e) }\n'
            + "        };\n"
            + "        out.write_all(line.as_bytes()).unwrap();\n"
            + "    }\n"
            + '    out.write_all(format!("{{\\"n\\":\\"{}\\",\\"done\\":true}}\\n", nonce).as_bytes()).unwrap();\n'
            + "}\n"
        )

    def build(self) -> Build:
        rustc, sysroot = _rustc()
        keep = (sysroot,) if not sysroot.startswith("/usr") else ()
        return Build(
            source_name="main.rs",
            compile=(
                rustc,
                "--edition",
                "2021",
                "-C",
                "opt-level=1",
                "-C",
                "debuginfo=0",
                "-A",
                "warnings",
                *_system_linker(),
                "-o",
                "main",
                "main.rs",
            ),
            run=("{build}/main", "{start}", "{fd}"),
            keep_paths=keep,
        )

    def version(self) -> str:
        return _version()

    def entry_defined(self, code: str, name: str) -> bool:
        return re.search(rf"(?m)^\s*(?:pub\s+)?fn\s+{re.escape(name)}\b", code) is not None


def enum_names(types: list[PyType]) -> Enums:
    """Each Union in ``types`` with the enum that holds it: one ``Value`` for all of them where
    no family has two payload types and no Union holds another, else ``Value``, ``Value2``..."""
    found: list[PyType] = []
    for t in types:
        found += [u for u in unions_in(t) if u not in found]
    if not found:
        return {}
    if not any(unions_in(a) for u in found for a in u.args):
        try:
            merged = union(found)
            return {u: ("Value", merged) for u in found}
        except Untranslatable:
            pass  # e.g. Vec<i64> in one Union and Vec<String> in another
    return {u: ("Value" if i == 0 else f"Value{i + 1}", u) for i, u in enumerate(found)}


def signature_enums(signature: Signature) -> Enums:
    return enum_names([*(t for _, t in signature.params), signature.returns])


def hashable(t: PyType) -> bool:
    """Whether ``t``'s Rust type can be a HashMap key (f64 and HashMap are not Hash)."""
    return t.kind not in ("float", "dict") and all(hashable(a) for a in t.args)


def _enum_encoders(enums: Enums) -> str:
    """Each enum's encoder: its value as ``["family", value]`` (the variant names the family)."""
    out = []
    for name, held in dict(enums.values()).items():
        arms = "".join(
            f'        {name}::{VARIANTS[family(a)]}(x) => {{ o.push_str("[\\"{family(a)}\\","); '
            "x.codeeval_enc(o); o.push(']'); }\n"
            for a in held.args
        )
        out.append(
            f"impl CodeevalEnc for {name} {{ fn codeeval_enc(&self, o: &mut String) {{\n"
            f"    match self {{\n{arms}    }}\n}} }}\n"
        )
    return "".join(out)


@lru_cache(maxsize=1)
def _rustc() -> tuple[str, str]:
    """The real compiler (not rustup's proxy, which needs ``$HOME``) and its sysroot.

    rustup's proxy finds its toolchains through ``RUSTUP_HOME`` or the home folder; a test
    runner may point ``$HOME`` elsewhere, so the user's real home (from the password database)
    is the fallback.
    """
    import pwd

    home = pwd.getpwuid(os.getuid()).pw_dir
    cargo_rustc = os.path.join(home, ".cargo", "bin", "rustc")
    found = shutil.which("rustc") or (cargo_rustc if os.path.exists(cargo_rustc) else None)
    if not found:
        raise FileNotFoundError("rustc is not installed")
    env = dict(os.environ)
    if "RUSTUP_HOME" not in env and os.path.isdir(os.path.join(home, ".rustup")):
        env["RUSTUP_HOME"] = os.path.join(home, ".rustup")
    done = subprocess.run(
        [found, "--print", "sysroot"], capture_output=True, text=True, check=False, env=env
    )
    sysroot = os.path.realpath(done.stdout.strip() or os.path.dirname(os.path.dirname(found)))
    real = os.path.join(sysroot, "bin", "rustc")
    return (real if os.path.exists(real) else found), sysroot


@lru_cache(maxsize=1)
def _system_linker() -> tuple[str, ...]:
    """Link with the system's ``ld``, where this rustc can say so (1.90 and later).

    rustup's toolchains link with their own ``rust-lld``, which ``cc`` looks for with
    ``access()`` in the toolchain's folder. ``access()`` checks the real uid without
    capabilities, so without bubblewrap a dropped uid cannot find it in a 0700 home ("collect2:
    cannot find 'ld'"); ``/usr/bin/ld`` is in the view in both modes.
    """
    done = subprocess.run(
        [_rustc()[0], "-C", "linker-features=-lld", "--print", "sysroot"],
        capture_output=True,
        check=False,
    )
    return ("-C", "linker-features=-lld") if done.returncode == 0 else ()


@lru_cache(maxsize=1)
def _version() -> str:
    done = subprocess.run([_rustc()[0], "--version"], capture_output=True, text=True, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise FileNotFoundError(f"rustc does not run: {done.stderr.strip()[:200]}")
    return done.stdout.strip()
