"""Read a repository's Python source: its modules, the functions worth mining, and holes.

Targets are top-level functions and the methods of top-level classes of the repository's own
modules (tests, ``setup.py`` and ``conftest.py`` excluded). A target's *body* is everything
after its header and docstring; :func:`hole_module` replaces it with one ``raise`` line, which
is both the stub that must fail the tests and the place a candidate's body goes.
"""

from __future__ import annotations

import ast
import io
import os
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from harness.mining.model import HOLE, Target

SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", "env", "build", "dist",
     "__pycache__", "node_modules", ".mypy_cache", ".pytest_cache", ".eggs", "site-packages"}
)  # fmt: skip
TEST_DIRS = frozenset({"tests", "test", "testing"})
NOT_PACKAGE = frozenset({"setup.py", "conftest.py", "noxfile.py", "fabfile.py", "tasks.py"})
DOC_DIRS = frozenset({"docs", "doc", "examples", "example", "benchmarks", "bench"})


@dataclass
class Definition:
    """A module-level name the prompt may show: its header and docstring, never its body."""

    name: str
    kind: str  # "function", "class" or "constant"
    header: str
    docstring: str | None
    path: str


@dataclass
class ModuleInfo:
    """One module of the repository, parsed once."""

    path: str
    module: str
    text: str
    tree: ast.Module
    docstring: str | None
    imports: list[str] = field(default_factory=list)  # source of the top-level imports
    definitions: dict[str, Definition] = field(default_factory=dict)
    imported: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (module, name)


def walk_files(root: Path) -> list[Path]:
    """Every file of the repository outside the folders nobody tests (VCS, builds, caches)."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        found += [Path(folder, f) for f in sorted(files)]
    return found


def is_test_file(rel: str) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(p in TEST_DIRS for p in parts[:-1])
    )


def is_package_file(rel: str) -> bool:
    parts = rel.split("/")
    return (
        rel.endswith(".py")
        and not is_test_file(rel)
        and parts[-1] not in NOT_PACKAGE
        and not (len(parts) > 1 and parts[0] in DOC_DIRS)
    )


def module_name(rel: str) -> str:
    parts = rel[: -len(".py")].split("/")
    if parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def read_modules(root: Path) -> dict[str, ModuleInfo]:
    """The repository's own modules (tests excluded) that parse, by repository-relative path."""
    modules: dict[str, ModuleInfo] = {}
    for path in walk_files(root):
        rel = path.relative_to(root).as_posix()
        if not is_package_file(rel):
            continue
        try:
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text, filename=rel)
        except (UnicodeDecodeError, SyntaxError, ValueError):
            continue  # not Python 3 this interpreter reads: nothing to mine there
        modules[rel] = _module_info(rel, text, tree)
    return modules


def _module_info(rel: str, text: str, tree: ast.Module) -> ModuleInfo:
    info = ModuleInfo(rel, module_name(rel), text, tree, ast.get_docstring(tree))
    package = info.module if rel.endswith("__init__.py") else info.module.rpartition(".")[0]
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            info.imports.append(ast.get_source_segment(text, node) or ast.unparse(node))
            if isinstance(node, ast.ImportFrom):
                source = _absolute(node, package)
                for alias in node.names:
                    info.imported[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            info.definitions[node.name] = Definition(
                node.name, kind, _header_text(text, node), ast.get_docstring(node), rel
            )
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    line = text.splitlines()[node.lineno - 1].strip()
                    info.definitions[target.id] = Definition(
                        target.id, "constant", line[:120], None, rel
                    )
    return info


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
    return ".".join([*base, *([node.module] if node.module else [])])


def find_targets(info: ModuleInfo) -> tuple[list[Target], list[tuple[str, str]]]:
    """The mineable functions of a module, and (target id, reason) for those that are not."""
    targets: list[Target] = []
    skipped: list[tuple[str, str]] = []
    lines = info.text.splitlines()
    for node in info.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            candidates: list[
                tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None, str]
            ]
            candidates = [(node, None, "")]
        elif isinstance(node, ast.ClassDef):
            bases = ", ".join(ast.unparse(b) for b in [*node.bases, *node.keywords])
            methods = [
                n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
            candidates = [(m, node, bases) for m in methods]
        else:
            continue
        for func, cls, bases in candidates:
            qualname = f"{cls.name}.{func.name}" if cls else func.name
            reason = _unmineable(func)
            if reason:
                skipped.append((f"{info.path}::{qualname}", reason))
                continue
            targets.append(_target(info, lines, func, cls, bases, qualname))
    return targets, skipped


def _unmineable(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    body = func.body
    if body[0].lineno == func.lineno:
        return "one-line definition (body on the def line)"
    stmts = body[1:] if ast.get_docstring(func, clean=False) is not None else body
    meaningful = [
        s
        for s in stmts
        if not isinstance(s, ast.Pass)
        and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    if not meaningful:
        return "trivial body (docstring, pass or ...)"
    if len(meaningful) == 1 and isinstance(meaningful[0], ast.Raise):
        text = ast.unparse(meaningful[0])
        if "NotImplementedError" in text:
            return "abstract body (raises NotImplementedError)"
    return None


def _target(
    info: ModuleInfo,
    lines: list[str],
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    cls: ast.ClassDef | None,
    bases: str,
    qualname: str,
) -> Target:
    doc = ast.get_docstring(func, clean=False)
    last_header_line = header_end(lines, func.lineno)
    hole_start = func.body[0].end_lineno + 1 if doc is not None else last_header_line + 1  # type: ignore[operator]
    first_stmt = func.body[1] if doc is not None else func.body[0]
    indent = lines[first_stmt.lineno - 1][: first_stmt.col_offset]
    decorators = tuple(
        ast.get_source_segment(info.text, d) or ast.unparse(d) for d in func.decorator_list
    )
    first = min([func.lineno, *(d.lineno for d in func.decorator_list)])
    return Target(
        path=info.path,
        module=info.module,
        qualname=qualname,
        name=func.name,
        class_name=cls.name if cls else None,
        def_line=func.lineno,
        first_line=first,
        hole_start=hole_start,
        end_line=func.end_lineno or func.lineno,
        header="\n".join(lines[func.lineno - 1 : last_header_line]),
        decorators=decorators,
        docstring=ast.get_docstring(func),
        indent=indent,
        uses=_uses(info, func, cls),
        bases=bases,
        header_names=_header_names(func),
    )


def _header_names(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """Names that defining the function evaluates: its defaults (not builtins). The prompt's
    stub must run on its own, where the module's names do not exist."""
    import builtins

    nodes = [*func.args.defaults, *(d for d in func.args.kw_defaults if d is not None)]
    found: list[str] = []
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and not hasattr(builtins, sub.id) and sub.id not in found:
                found.append(sub.id)
    return tuple(found)


def header_end(lines: list[str], def_line: int) -> int:
    """The line of the colon that ends a (possibly multi-line) ``def`` header."""
    text = "\n".join(lines[def_line - 1 :]) + "\n"
    depth = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.OP:
                if tok.string in "([{":
                    depth += 1
                elif tok.string in ")]}":
                    depth -= 1
                elif tok.string == ":" and depth == 0:
                    return def_line + tok.start[0] - 1
    except (tokenize.TokenError, IndentationError):
        pass
    return def_line


def _header_text(text: str, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    lines = text.splitlines()
    return "\n".join(lines[node.lineno - 1 : header_end(lines, node.lineno)])


def _uses(info: ModuleInfo, func: ast.AST, cls: ast.ClassDef | None) -> tuple[str, ...]:
    """Repository names the function refers to, in order of first use (itself excluded)."""
    own = getattr(func, "name", "")
    methods = {
        n.name
        for n in (cls.body if cls else [])
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    found: list[str] = []
    for node in ast.walk(func):
        name = None
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in info.definitions or _is_repo_import(info, node.id):
                name = node.id
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
            and node.attr in methods
        ):
            name = f"{cls.name}.{node.attr}" if cls else node.attr
        if name and name not in found and name not in (own, f"{cls.name}.{own}" if cls else own):
            found.append(name)
    return tuple(found)


def _is_repo_import(info: ModuleInfo, name: str) -> bool:
    source = info.imported.get(name)
    if source is None:
        return False
    top = info.module.split(".")[0]
    return source[0] == top or source[0].startswith(top + ".")


def hole_module(text: str, target: Target) -> str:
    """The module's source with the target's body replaced by one ``raise`` line."""
    lines = text.splitlines(keepends=True)
    before = lines[: target.hole_start - 1]
    after = lines[target.end_line :]
    return "".join(before) + f"{target.indent}{HOLE}\n" + "".join(after)


def reference_body(text: str, target: Target) -> str:
    """The original body, as the model should write it (indented as in the module)."""
    lines = text.splitlines(keepends=True)
    body = "".join(lines[target.hole_start - 1 : target.end_line])
    return body if body.endswith("\n") else body + "\n"
