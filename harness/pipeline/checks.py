"""Split a benchmark's ``check(candidate)`` function into one :class:`CheckCase` per check.

Rules (in order, per top-level statement of the ``check`` body):

1. An ``assert`` that mentions no candidate is dropped (HumanEval's ``assert True, "..."``).
2. An ``assert`` becomes a **compare** case when every call of the candidate in it can be lifted
   out: the sandbox evaluates those calls (``calls``) and the trusted process evaluates the rest
   (``check``, with the calls replaced by ``v[0]``, ``v[1]``, ...). That needs: no candidate name
   used other than as the callee of a call, no call inside a lambda or comprehension, every other
   name resolvable on the trusted side (builtins, the test module's own names, earlier prelude
   statements), and no earlier statement that already involved the candidate.
3. A ``for`` loop over a literal (a list, tuple, set, dict or string of constants, or ``range``
   with constant arguments; at most ``MAX_UNROLLED`` iterations) whose body holds only asserts and
   assignments that do not involve the candidate is unrolled: each iteration's asserts, with the
   loop variable replaced by its value, become compare cases ``case_N_0``, ``case_N_1``, ... as
   rule 2 says (all of them, or the loop stays whole under rule 4). HumanEval/44's
   ``for x in range(2, 8): assert candidate(x, x + 1) == str(x)`` is one.
4. Any other statement holding an ``assert`` (a loop, an ``if``) or calling the candidate without
   a result (``candidate(x)`` alone) becomes a **sandbox** case: it runs inside the sandbox, with
   each candidate call wrapped in ``__plain__`` so custom objects turn into plain data first.
5. Everything else is **prelude**: benchmark code that later cases need (``import math``,
   ``x = [1, 2]``). An assignment that calls the candidate is prelude too, but it makes every later
   case a sandbox case (its value only exists in the sandbox).

Names a check uses for the code under test are the check function's parameter (``candidate``)
plus ``candidate_names`` (MBPP checks call the function by its own name).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import textwrap
from collections.abc import Iterable
from typing import Any

from harness.memo import DiskMemo, source_version
from harness.records import CheckCase

BUILTIN_NAMES = frozenset(dir(builtins))
MAX_UNROLLED = 100  # iterations of a literal loop that become separate compare cases


class CheckSplitError(ValueError):
    """The test source has no usable ``check`` function."""


_MEMO = DiskMemo("split_check", source_version(__file__))


def split_check(
    test_source: str, candidate_names: tuple[str, ...] = ("candidate",)
) -> tuple[str, tuple[CheckCase, ...]]:
    """Return ``(test_setup, cases)`` for a module that defines ``def check(candidate): ...``.

    ``test_setup`` is the module without the ``check`` function (imports, helpers, constants).
    Results are kept on disk between runs (keyed by the source and this module's own code).
    """
    key = DiskMemo.key(test_source, list(candidate_names))
    hit = _MEMO.get(key)
    if hit is not None:
        return hit[0], tuple(CheckCase(**{**c, "calls": tuple(c["calls"])}) for c in hit[1])
    test_setup, cases = _split_check(test_source, candidate_names)
    _MEMO.put(key, [test_setup, [dataclasses.asdict(c) for c in cases]])
    return test_setup, cases


def _split_check(
    test_source: str, candidate_names: tuple[str, ...]
) -> tuple[str, tuple[CheckCase, ...]]:
    try:
        module = ast.parse(test_source)
    except SyntaxError as exc:
        raise CheckSplitError(f"test code does not parse: line {exc.lineno}: {exc.msg}") from exc
    check_fn = next(
        (n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None
    )
    if check_fn is None:
        raise CheckSplitError("test code defines no top-level function `check(candidate)`")
    setup_nodes = [n for n in module.body if n is not check_fn]
    test_setup = "\n".join(ast.unparse(n) for n in setup_nodes)
    names = set(candidate_names) | {a.arg for a in check_fn.args.args[:1]}
    splitter = _Splitter(test_source, frozenset(names), _bound_names(setup_nodes))
    return test_setup, tuple(splitter.split(check_fn.body))


class _Splitter:
    def __init__(self, source: str, candidate_names: frozenset[str], setup_names: set[str]):
        self.lines = source.splitlines(keepends=True)
        self.candidates = candidate_names
        self.defined = set(setup_names)  # names the benchmark binds (it may shadow builtins)
        self.trusted = self.defined | BUILTIN_NAMES
        self.prelude: list[str] = []
        self.tainted = False

    def split(self, body: Iterable[ast.stmt]) -> list[CheckCase]:
        cases: list[CheckCase] = []
        number = 0  # statements that gave cases: an unrolled loop's cases share its number
        for stmt in body:
            case_id = f"case_{number}"
            unrolled = self._unrolled(stmt, case_id) if isinstance(stmt, ast.For) else None
            if unrolled is not None:
                cases += unrolled
                number += bool(unrolled)
                continue
            case = self._case_for(stmt, case_id)
            if case is not None:
                cases.append(case)
                number += 1
        return cases

    def _unrolled(self, loop: ast.For, case_id: str) -> list[CheckCase] | None:
        """The compare cases of a literal loop, one per iteration and assert; None: keep it."""
        values = self._literal_iterations(loop.iter)
        if values is None or loop.orelse or not values:
            return None
        names = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        if names & self.candidates or not all(_simple(s) for s in loop.body):
            return None
        if any(
            isinstance(n, ast.Name) and n.id in PURE_BUILTINS and n.id in self.defined
            for s in loop.body
            for n in ast.walk(s)
        ):
            return None  # a "pure" builtin the benchmark redefined
        if any(_locally_bound(s) & names for s in loop.body):
            return None  # rebound or shadowed inside: substitution would change the meaning
        asserts = sum(isinstance(s, ast.Assert) for s in loop.body)
        if asserts * len(values) > MAX_UNROLLED:
            return None
        saved = (list(self.prelude), set(self.trusted), set(self.defined))
        cases = self._unroll(loop, values, case_id)
        if cases is None:
            self.prelude, self.trusted, self.defined = saved
        return cases

    def _unroll(self, loop: ast.For, values: list[Any], case_id: str) -> list[CheckCase] | None:
        cases: list[CheckCase] = []
        for value in values:
            bindings = _bind(loop.target, value)
            if bindings is None or not _aliasing_safe(loop.body, bindings):
                return None
            literals = {name: _literal(part) for name, part in bindings.items()}
            if None in literals.values():
                return None
            for stmt in loop.body:
                stmt = ast.fix_missing_locations(_Substitute(literals).visit(_copy_tree(stmt)))
                if isinstance(stmt, ast.Pass):
                    continue
                if not isinstance(stmt, ast.Assert):
                    if self._mentions_candidate(stmt):
                        return None
                    self.prelude.append(ast.unparse(stmt))
                    self._trust(_bound_names([stmt]))
                    continue
                if not self._mentions_candidate(stmt):
                    continue  # rule 1
                case = None if self.tainted else self._compare_case(stmt, case_id)
                if case is None:
                    return None
                unrolled_id = f"{case_id}_{len(cases)}"
                source = ast.unparse(stmt)
                cases.append(dataclasses.replace(case, case_id=unrolled_id, source=source))
        # After the loop its variables hold the last iteration's values, as in Python.
        self.prelude += [f"{name} = {text}" for name, text in literals.items()]
        self._trust(set(literals))
        return cases

    def _literal_iterations(self, node: ast.expr) -> list[Any] | None:
        """The values a literal iterable yields (at most MAX_UNROLLED), else None."""
        if isinstance(node, ast.Call):
            func = node.func
            if not isinstance(func, ast.Name) or func.id != "range" or node.keywords:
                return None
            if "range" in self.defined or not 1 <= len(node.args) <= 3:
                return None  # the benchmark's own `range` is not the builtin
            args = [_constant(a) for a in node.args]
            if not all(type(a) is int for a in args) or (len(args) == 3 and args[2] == 0):
                return None
            iterations = range(*args)
            return list(iterations) if len(iterations) <= MAX_UNROLLED else None
        if not isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Constant)):
            return None
        literal = _constant(node)
        if not isinstance(literal, (list, tuple, set, dict, str, bytes)):
            return None
        if len(literal) > MAX_UNROLLED:
            return None
        values = list(literal)
        return values if all(_literal(v) is not None for v in values) else None

    def _case_for(self, stmt: ast.stmt, case_id: str) -> CheckCase | None:
        mentions_candidate = self._mentions_candidate(stmt)
        has_assert = any(isinstance(n, ast.Assert) for n in ast.walk(stmt))
        is_bare_call = isinstance(stmt, ast.Expr) and mentions_candidate
        if isinstance(stmt, ast.Assert):
            if not mentions_candidate:
                return None
            compare = None if self.tainted else self._compare_case(stmt, case_id)
            return compare or self._sandbox_case(stmt, case_id)
        if has_assert or is_bare_call:
            return self._sandbox_case(stmt, case_id) if mentions_candidate or has_assert else None
        # Prelude: benchmark code later cases rely on.
        self.prelude.append(ast.unparse(stmt))
        if mentions_candidate:
            # Its names hold the candidate's values, which exist only inside the sandbox.
            self.candidates = self.candidates | _bound_names([stmt])
            self.tainted = True
        else:
            self._trust(_bound_names([stmt]))
        return None

    def _trust(self, names: set[str]) -> None:
        self.defined |= names
        self.trusted |= names

    def _mentions_candidate(self, node: ast.AST) -> bool:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                if sub.id in self.candidates or sub.id not in self.trusted | _locally_bound(node):
                    return True
        return False

    def _compare_case(self, stmt: ast.Assert, case_id: str) -> CheckCase | None:
        lifter = _CallLifter(self.candidates)
        rewritten = lifter.visit(_copy_tree(stmt))
        if lifter.blocked or not lifter.calls:
            return None
        local = _locally_bound(rewritten)
        for sub in ast.walk(rewritten):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                if sub.id == "v":
                    continue
                if sub.id in self.candidates or sub.id not in self.trusted | local:
                    return None
        return CheckCase(
            case_id=case_id,
            source=self._source_of(stmt),
            mode="compare",
            prelude="\n".join(self.prelude),
            calls=tuple(ast.unparse(c) for c in lifter.calls),
            check=ast.unparse(rewritten),
        )

    def _sandbox_case(self, stmt: ast.stmt, case_id: str) -> CheckCase:
        wrapped = _PlainWrapper(self.candidates).visit(_copy_tree(stmt))
        return CheckCase(
            case_id=case_id,
            source=self._source_of(stmt),
            mode="sandbox",
            prelude="\n".join(self.prelude),
            statement=ast.unparse(ast.fix_missing_locations(wrapped)),
        )

    def _source_of(self, stmt: ast.stmt) -> str:
        """The statement as written in the benchmark (dedented), for docstrings and reports."""
        end = stmt.end_lineno or stmt.lineno
        text = "".join(self.lines[stmt.lineno - 1 : end])
        return textwrap.dedent(text).strip() or ast.unparse(stmt)


class _CallLifter(ast.NodeTransformer):
    """Replace each outermost call of the candidate by ``v[i]``; note what cannot be lifted."""

    def __init__(self, candidates: frozenset[str]):
        self.candidates = candidates
        self.calls: list[ast.Call] = []
        self.blocked = False
        self._scope_depth = 0

    def _visit_scope(self, node: ast.AST) -> ast.AST:
        self._scope_depth += 1
        node = self.generic_visit(node)
        self._scope_depth -= 1
        return node

    visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = _visit_scope
    visit_GeneratorExp = _visit_scope

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if isinstance(node.func, ast.Name) and node.func.id in self.candidates:
            if self._scope_depth:
                self.blocked = True
                return node
            index = len(self.calls)
            self.calls.append(node)
            subscript = ast.Subscript(
                value=ast.Name(id="v", ctx=ast.Load()),
                slice=ast.Constant(value=index),
                ctx=ast.Load(),
            )
            return ast.copy_location(subscript, node)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.candidates:
            self.blocked = True  # the candidate used as a value, not called
        return node


class _PlainWrapper(ast.NodeTransformer):
    """Wrap ``candidate(...)`` as ``__plain__(candidate(...))`` for checks run in the sandbox."""

    def __init__(self, candidates: frozenset[str]):
        self.candidates = candidates

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node = self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in self.candidates:
            return ast.Call(func=ast.Name(id="__plain__", ctx=ast.Load()), args=[node], keywords=[])
        return node


class _Substitute(ast.NodeTransformer):
    """Replace loaded loop variables by their value's literal (source text) in one iteration."""

    def __init__(self, literals: dict[str, str | None]):
        self.literals = literals

    def visit_Name(self, node: ast.Name) -> ast.AST:
        text = self.literals.get(node.id) if isinstance(node.ctx, ast.Load) else None
        if text is None:
            return node
        return ast.copy_location(ast.parse(text, mode="eval").body, node)


_MISSING = object()


def _constant(node: ast.expr) -> Any:
    """The value of a literal expression, or ``_MISSING``."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING


def _literal(value: Any) -> str | None:
    """Source text that evaluates to ``value`` again (None: there is none, e.g. ``inf``)."""
    text = repr(value)
    try:
        again = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return text if type(again) is type(value) and again == value else None


def _bind(target: ast.expr, value: Any) -> dict[str, Any] | None:
    """Loop variables bound by unpacking ``value`` into ``target`` (None: not plain names)."""
    if isinstance(target, ast.Name):
        return {target.id: value}
    if not isinstance(target, (ast.Tuple, ast.List)):
        return None
    try:
        parts = list(value)
    except TypeError:
        return None
    if len(parts) != len(target.elts):
        return None
    bindings: dict[str, Any] = {}
    for element, part in zip(target.elts, parts, strict=True):
        inner = _bind(element, part)
        if inner is None:
            return None
        bindings.update(inner)
    return bindings


# Builtins an unrolled loop's assignments may call: their values are the same on both sides.
# Anything else (``random.randint``, a helper of the benchmark) may differ between the sandbox
# and the trusted process, which both run the assignments as prelude.
PURE_BUILTINS = frozenset(
    "abs all any bool bytes chr complex dict divmod enumerate float frozenset int len list max "
    "min ord pow range repr reversed round set sorted str sum tuple zip".split()
)


def _simple(stmt: ast.stmt) -> bool:
    """Statements a loop body may hold to be unrolled: asserts, pure assignments, pass."""
    if isinstance(stmt, (ast.Assert, ast.Pass)):
        return True
    if isinstance(stmt, ast.Assign):
        targets: list[ast.expr] = list(stmt.targets)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
        targets = [stmt.target]
    else:
        return False
    names_only = all(
        isinstance(n, (ast.Name, ast.Tuple, ast.List))
        for t in targets
        for n in ast.walk(t)
        if not isinstance(n, ast.expr_context)
    )
    pure = all(
        isinstance(n.func, ast.Name) and n.func.id in PURE_BUILTINS
        for n in ast.walk(stmt)
        if isinstance(n, ast.Call)
    )
    return names_only and pure


def _aliasing_safe(body: list[ast.stmt], bindings: dict[str, Any]) -> bool:
    """A mutable loop value used twice in the body would become two objects once substituted.

    (The candidate may mutate its argument, and plain Python would see that in the other use.)
    """
    uses = sum(
        1
        for stmt in body
        for n in ast.walk(stmt)
        if isinstance(n, ast.Name)
        and isinstance(n.ctx, ast.Load)
        and n.id in bindings
        and _mutable(bindings[n.id])
    )
    return uses <= 1


def _mutable(value: Any) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return any(_mutable(v) for v in value)
    return isinstance(value, (list, dict, set, bytearray))


def _bound_names(nodes: Iterable[ast.stmt]) -> set[str]:
    """Names a list of top-level statements binds (imports, assignments, defs, classes)."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
        else:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
    return names


def _locally_bound(node: ast.AST) -> set[str]:
    """Names bound inside a statement or expression: targets, arguments, handlers, imports."""
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, ast.arg):
            names.add(sub.arg)
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            names.add(sub.name)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in sub.names}
    return names


def _copy_tree(node: Any) -> Any:
    """A deep copy of an AST (5x faster than ``copy.deepcopy``: every suite load splits checks)."""
    if isinstance(node, ast.AST):
        copied = node.__class__.__new__(node.__class__)
        for name in node._fields:
            if hasattr(node, name):
                setattr(copied, name, _copy_tree(getattr(node, name)))
        for name in node._attributes:
            if hasattr(node, name):
                setattr(copied, name, getattr(node, name))
        return copied
    if isinstance(node, list):
        return [_copy_tree(item) for item in node]
    return node
