"""Runs inside the sandbox child (its source is a mined problem's ``test_setup``).

Stdlib only. ``__mined_check__(test_id)`` unpacks the repository copy (the target's body
removed, no bytecode), puts the candidate's body in the hole (and the helper functions its
answer defines at the end of the module), runs the problem's tests once
in a fresh pytest process and answers for one test; the other checks reuse that run.
``__mine_coverage__()`` runs the whole test suite under coverage.py with per-test contexts
and returns, as JSON text, which tests executed the body of each target. ``_MINED_SPEC`` is
defined after this code by the problem.
"""

from __future__ import annotations

import ast as _ast
import base64 as _b64
import io as _io
import json as _json
import os as _os
import secrets as _secrets
import subprocess as _sp
import sys as _sys
import tempfile as _tempfile
import zipfile as _zipfile

_MINED_STATE: dict = {}


def _mined_unpack(spec: dict) -> str:
    """The repository copy in a new folder under the child's private working folder."""
    root = _tempfile.mkdtemp(prefix="repo-", dir=_os.getcwd())
    with _zipfile.ZipFile(_io.BytesIO(_b64.b64decode(spec["zip"]))) as archive:
        archive.extractall(root)
    return root


def _mined_has_body(func: _ast.FunctionDef | _ast.AsyncFunctionDef) -> bool:
    return any(
        not (isinstance(s, _ast.Expr) and isinstance(s.value, _ast.Constant)) for s in func.body
    )


def _mined_body(program: str, spec: dict) -> str:
    """The candidate's body of the target, indented for the hole (AssertionError: none)."""
    body = _mined_target(program, spec).body
    if (
        body
        and isinstance(body[0], _ast.Expr)
        and isinstance(body[0].value, _ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]  # the docstring: the module copy keeps the original one
    if not body:
        return spec["indent"] + "pass\n"
    return _mined_reindent(program.splitlines(), body, spec["indent"])


def _mined_target(program: str, spec: dict) -> _ast.FunctionDef | _ast.AsyncFunctionDef:
    """The answer's definition of the target: a method of the target's class first, then a
    function of that name anywhere; of those, the last with a body (AssertionError: none)."""
    try:
        tree = _ast.parse(program)
    except SyntaxError as exc:
        raise AssertionError(f"the answer is not valid Python: {exc}") from None
    found, preferred = [], []
    for node in _ast.walk(tree):
        if isinstance(node, _ast.ClassDef) and node.name == spec.get("class"):
            preferred += [
                n for n in node.body
                if isinstance(n, (_ast.FunctionDef, _ast.AsyncFunctionDef)) and n.name == spec["name"]
            ]  # fmt: skip
        if (
            isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef))
            and node.name == spec["name"]
        ):
            found.append(node)
    # A whole answer may repeat the prompt's stub (docstring only): the def with a body wins.
    pool = [n for n in preferred if _mined_has_body(n)] or [n for n in found if _mined_has_body(n)]
    if not (pool or preferred or found):
        raise AssertionError(f"the answer defines no function {spec['name']!r}")
    return (pool or preferred or found)[-1]


def _mined_reindent(lines: list[str], body: list, indent: str) -> str:
    """The source lines of ``body`` moved from their own indentation to ``indent``."""
    first = min([body[0].lineno, *(d.lineno for d in getattr(body[0], "decorator_list", []))])
    col = (
        body[0].col_offset
        if first == body[0].lineno
        else len(lines[first - 1]) - len(lines[first - 1].lstrip())
    )
    out = []
    for number in range(first, (body[-1].end_lineno or first) + 1):
        line = lines[number - 1]
        if number == first:
            line = line[col:]
        elif line[:col].strip() == "":
            line = line[col:]
        else:
            line = line.lstrip()
        out.append(indent + line if line.strip() else "")
    return "\n".join(out) + "\n"


def _mined_helpers(program: str, module_text: str, spec: dict) -> str:
    """Top-level functions, classes and imports of the answer that the module lacks (an
    ``aux`` helper another agent wrote, ``import re`` its body needs), as source to append to
    the module copy; the target is not one."""
    try:
        answer, module = _ast.parse(program), _ast.parse(module_text)
    except SyntaxError:
        return ""
    known = {spec["name"], spec.get("class")}
    for node in module.body:
        if isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)):
            known.add(node.name)
        elif isinstance(node, (_ast.Import, _ast.ImportFrom)):
            known.update((a.asname or a.name).split(".")[0] for a in node.names)
    lines = program.splitlines()
    extra = []
    for node in answer.body:
        kinds = (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)
        if isinstance(node, kinds) and node.name not in known:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            extra.append("\n".join(lines[first - 1 : node.end_lineno]))
        elif isinstance(node, (_ast.Import, _ast.ImportFrom)) and node.col_offset == 0:
            bound = {(a.asname or a.name).split(".")[0] for a in node.names}
            if (
                "*" not in bound
                and not bound <= known
                and not (isinstance(node, _ast.ImportFrom) and node.module == "__future__")
            ):
                extra.append("\n".join(lines[node.lineno - 1 : node.end_lineno]))
                known |= bound
    return "".join("\n\n" + text + "\n" for text in extra)


def _mined_session(spec: dict, root: str, argv: list, driver: str | None = None) -> dict:
    """Run pytest (or the coverage driver) in ``root``; the reporter's frame, or an error."""
    tools = _os.path.join(root, "_codeeval_tools")
    _os.mkdir(tools)
    with open(_os.path.join(tools, "_codeeval_mined_reporter.py"), "w") as fh:
        fh.write(spec["reporter"])
    nonce = _secrets.token_hex(16)
    with open(_os.path.join(tools, "nonce"), "w") as fh:
        fh.write(nonce)
    read, write = _os.pipe()
    paths = [root, *[_os.path.join(root, p) for p in spec.get("pythonpath", [])], tools]
    env = {
        "PATH": _os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": _os.getcwd(),
        "PYTHONPATH": _os.pathsep.join(paths),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "CODEEVAL_MINED_FD": str(write),
    }
    if driver is None:
        command = [_sys.executable, "-s", "-B", "-m", "pytest", "-p", "_codeeval_mined_reporter"]
    else:
        with open(_os.path.join(tools, "_codeeval_cov_driver.py"), "w") as fh:
            fh.write(driver)
        command = [_sys.executable, "-s", "-B", _os.path.join(tools, "_codeeval_cov_driver.py")]
    command += ["-p", "no:cacheprovider", "-o", "addopts=", "-q", "--rootdir", root, *argv]
    with open(_os.path.join(_os.getcwd(), "pytest-output.txt"), "wb") as log:
        proc = _sp.Popen(
            command, cwd=root, env=env, stdin=_sp.DEVNULL, stdout=log, stderr=_sp.STDOUT,
            pass_fds=(write,),
        )  # fmt: skip
        _os.close(write)
        chunks = []
        while True:
            chunk = _os.read(read, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait()
    _os.close(read)
    frames = {}
    for line in b"".join(chunks).decode("utf-8", "replace").splitlines():
        head, _, rest = line.partition(" ")
        if head == nonce:
            frames.update(_json.loads(rest))
    if "outcomes" not in frames:
        with open(_os.path.join(_os.getcwd(), "pytest-output.txt"), "rb") as fh:
            tail = fh.read()[-1500:].decode("utf-8", "replace")
        return {"error": f"the test session ended without a report (exit {proc.returncode}): "
                         f"{tail}"}  # fmt: skip
    return frames


def __mined_check__(test_id: str) -> None:
    """Fail (AssertionError) unless ``test_id`` passes against the candidate's body."""
    spec = _MINED_SPEC  # type: ignore[name-defined]  # noqa: F821 - the problem defines it
    if "result" not in _MINED_STATE:
        try:
            with open(__file__) as fh:
                program = fh.read()
            setup = spec.get("program_setup", "")
            if setup and program.startswith(setup):
                program = program[len(setup) :]  # the harness's stand-ins, not the answer
            body = _mined_body(program, spec)
            root = _mined_unpack(spec)
            target = _os.path.join(root, spec["path"])
            with open(target) as fh:
                lines = fh.read().splitlines(keepends=True)
            original = "".join(lines)
            lines[spec["hole_line"] - 1] = body
            with open(target, "w") as fh:
                fh.write("".join(lines) + _mined_helpers(program, original, spec))
            argv = (["--doctest-modules"] if spec.get("doctest") else []) + list(spec["tests"])
            _MINED_STATE["result"] = _mined_session(spec, root, argv)
        except AssertionError as exc:
            _MINED_STATE["result"] = {"error": str(exc)}
    result = _MINED_STATE["result"]
    if "error" in result:
        raise AssertionError(result["error"])
    outcome = result["outcomes"].get(test_id, "not run")
    if outcome != "passed":
        message = result["messages"].get(test_id, "")
        raise AssertionError(f"{test_id}: {outcome}\n{message}".rstrip())


def __mine_coverage__() -> str:
    """Run every test under coverage; JSON: outcomes, and the tests that ran each target."""
    spec = _MINED_SPEC  # type: ignore[name-defined]  # noqa: F821
    root = _mined_unpack(spec)
    with open(_os.path.join(root, "_codeeval_targets.json"), "w") as fh:
        _json.dump(spec["targets"], fh)
    result = _mined_session(spec, root, list(spec["args"]), driver=spec["driver"])
    return _json.dumps(result)
