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
  [[key, value], ...]]``, ``["null"]``, ``["u"]``, ``["B", "12"]`` for a BigInt, ``["t", tag,
  ...]`` for any other object: ``JS_ENCODER``) for ``assert.deepEqual``'s loose equality.

:meth:`decode_result` turns that into the Python value the trusted check compares. A case
whose "argument" is ``("program", body)`` runs MultiPL-E's test body itself and sends
``"completed"`` when it ends (the suite's fallback; Java runs with ``-ea`` for its asserts).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import harness.languages.multiple_e_templates as templates
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
        return templates.JS_DRIVER.format(
            encoder=templates.JS_ENCODER, branches="\n".join(branches), count=len(cases)
        )

    def decode_result(self, data: Any, returns: PyType) -> Any:
        if data == COMPLETED:
            return data
        return data  # tagged JavaScript values: suites.js_deep_equal.js_deep_equal


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
            + templates.CPP_ENCODER
            + "static void codeeval_case(int i, std::string& o) {\n  switch (i) {\n"
            + "\n".join(branches)
            + "\n  }\n}\n"
            + templates.CPP_MAIN.replace("@COUNT@", str(len(cases)))
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
            + templates.JAVA_ENCODER
            + "final class Main {\n    static void run(int i, StringBuilder o) {\n"
            + "        switch (i) {\n"
            + "\n".join(branches)
            + "\n        }\n    }\n"
            + templates.JAVA_MAIN.replace("@COUNT@", str(len(cases)))
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
            + templates.RUST_ENCODER
            + "#[allow(unused)]\nfn codeeval_case(i: usize, o: &mut String) {\n    match i {\n"
            + "\n".join(branches)
            + "\n        _ => {}\n    }\n}\n"
            + templates.RUST_MAIN.replace("@COUNT@", str(len(cases)))
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


DIALECTS = (MultiplEJs(), MultiplECpp(), MultiplEJava(), MultiplERust())
