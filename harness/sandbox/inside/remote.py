"""The judge's end of the object bridge (bridge.py): :class:`Remote` proxies of the candidate's
objects, whose every operation is a message the child answers (stdlib only).

The judge runs a check with proxies in place of the program's names; an operation on a proxy
(a call, an attribute, ``len``, ...) goes to the child, and the answer comes back as plain data,
or as a new proxy for an object without a plain encoding. Nothing the candidate hands over is
ever resolved to one of the judge's own objects: a name (``os.system``) stays a name, equal to
the judge's object of that name and nothing more (:class:`_Named`).

Comparing a proxy with a trusted value, and arithmetic between them, use the proxy's plain
encoding: the candidate's ``__eq__``, ``__sub__`` or ``__rsub__`` never decides what a trusted
helper (``assertAlmostEqual``'s ``first - second``) concludes. Unary operations and conversions
of a proxy with a plain encoding are computed on it too; only the candidate's own objects
(opaque) compute their ``len``, ``str`` or ``abs`` themselves.
"""

from __future__ import annotations

import base64
import collections
import importlib
import json
import operator
import os
import pickle
import types
from collections.abc import Callable
from typing import Any

if __name__.startswith("harness."):  # imported by name (tests, type checkers)
    from harness.sandbox.inside import bridge
# Otherwise the fork server loaded this file by path and put ``bridge`` here first.

BridgeClosed = bridge.BridgeClosed
# What a proxy of such a container claims to be for ``isinstance`` (unittest's assertDictEqual).
_CLASSES = {
    cls.__name__: cls
    for cls in (
        *bridge.BY_REFERENCE,
        collections.OrderedDict,
        collections.defaultdict,
        collections.Counter,
    )
}


class JudgeSide:
    """The judge's end: turns operations on :class:`Remote` proxies into messages."""

    def __init__(self, codec: Any, wfd: int, rfd: int) -> None:
        self.codec = codec
        self.wfd, self.rfd = wfd, rfd
        # Once the bridge broke, no outcome of the case may be reported: a check that swallows
        # the error (a bare ``except:``) must not pass because the candidate's process died.
        self.closed = False
        codec.ENCODERS[id(Remote)] = self._encode_remote
        codec.hooks.handle = self._remote
        codec.hooks.opaque = self._trusted_object

    @staticmethod
    def _encode_remote(value: Remote, depth: int, budget: list[int]) -> list[Any]:
        return ["h", object.__getattribute__(value, "_handle")]

    def _trusted_object(self, value: Any) -> list[Any]:
        """One of the judge's own objects as an argument: by name when it has one (a class, a
        function), else a pickled copy, else an opaque snapshot."""
        module = getattr(value, "__module__", None)
        name = getattr(value, "__qualname__", None)
        if type(module) is str and type(name) is str and "<" not in name:
            try:
                found: Any = importlib.import_module(module)
                for part in name.split("."):
                    found = getattr(found, part)
                if found is value:
                    return ["h", "ref", module, name]
            except Exception:  # noqa: BLE001, S110 - not importable by name: try a copy
                pass
        try:
            return ["h", "pickle", base64.b64encode(pickle.dumps(value)).decode()]
        except Exception:  # noqa: BLE001
            return ["o", type(value).__qualname__, "<not sent>"]

    def _remote(self, node: list[Any]) -> Any:
        if len(node) == 4 and node[1] == "ref":
            return _Named(node[2], node[3])
        if len(node) != 3 or type(node[1]) is not int or type(node[2]) is not str:
            raise self.codec.ChannelError("bad handle")
        return Remote(self, node[1], node[2][:200])

    def apply(self, name: str, *args: Any, **kwargs: Any) -> Any:
        codec = self.codec
        message = {
            "fn": name,
            "a": [codec.encode_value(a) for a in args],
            "k": {k: codec.encode_value(v) for k, v in kwargs.items()},
        }
        reply = self._roundtrip(message)
        try:
            if "e" in reply:
                raise_from = codec.end_of_iterator(reply["e"])
            else:
                value = codec.decode_value(reply.get("v"))
                for index, data in reply.get("w") or ():
                    _update(args[index], codec.decode_value(data))
                return value
        except (codec.ChannelError, TypeError, ValueError, IndexError) as exc:
            self.closed = True
            raise BridgeClosed(f"malformed reply from the candidate: {exc}") from None
        raise raise_from

    def plain(self, remote: Remote) -> Any:
        """The value the compare path would see for ``remote`` (opaque for custom objects)."""
        reply = self._roundtrip({"fn": "plain", "a": [self.codec.encode_value(remote)]})
        hooks = self.codec.hooks
        hook, hooks.handle = hooks.handle, _resolve_node
        try:
            return self.codec.decode_value(reply.get("v"))
        except self.codec.ChannelError as exc:
            self.closed = True
            raise BridgeClosed(f"malformed reply from the candidate: {exc}") from None
        finally:
            hooks.handle = hook

    def end_case(self) -> None:
        self._write({"fn": "end"})

    def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, separators=(",", ":")).encode("utf-8", "surrogatepass")
        try:
            bridge.write_message(self.wfd, os.write, body)
        except OSError as exc:
            self.closed = True
            raise BridgeClosed(f"the candidate's process is gone: {exc}") from None

    def _roundtrip(self, message: dict[str, Any]) -> dict[str, Any]:
        self._write(message)
        try:
            reply = bridge.read_message(self.rfd)
        except BridgeClosed:
            self.closed = True
            raise
        if reply is None:
            self.closed = True
            raise BridgeClosed("the candidate's process is gone")
        return reply


class _Named:
    """A class or function the candidate named (``builtins.int``): equal to the judge's object
    of that module and name, and to nothing else. Never called, never resolved."""

    __slots__ = ("module", "name")

    def __init__(self, module: Any, name: Any) -> None:
        self.module = str(module)[:200]
        self.name = str(name)[:200]

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, _Named):
            return (self.module, self.name) == (other.module, other.name)
        if not isinstance(other, (type, types.FunctionType, types.BuiltinFunctionType)):
            return False
        return (getattr(other, "__module__", None), getattr(other, "__qualname__", None)) == (
            self.module,
            self.name,
        )

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self.module, self.name))

    def __repr__(self) -> str:
        return f"<{self.module}.{self.name} from the sandbox>"


def _resolve_node(node: list[Any]) -> Any:
    if len(node) == 4 and node[1] == "ref":
        return _Named(node[2], node[3])
    raise ValueError("a handle where a plain value was expected")


def _update(target: Any, new: Any) -> None:
    """Apply a call's in-place change of a mutable argument to the judge's own object."""
    if type(target) is not type(new):
        return
    if isinstance(target, (list, bytearray)):
        target[:] = new
    elif isinstance(target, (dict, set)):
        target.clear()
        target.update(new)


def _side(remote: Remote) -> JudgeSide:
    return object.__getattribute__(remote, "_side")


def _forward(name: str, kind: type | None = None) -> Callable[..., Any]:
    """A dunder that performs operation ``name`` on the proxy (and its arguments) in the child;
    ``kind``: the type Python requires of the dunder's result (the candidate may lie)."""
    if kind is None:

        def method(self: Remote, *args: Any) -> Any:
            return _side(self).apply(name, self, *args)

    else:

        def method(self: Remote, *args: Any) -> Any:
            return _checked(_side(self).apply(name, self, *args), kind)

    method.__name__ = f"__{name}__"
    return method


def _on_value(name: str, operation: Callable[..., Any], kind: type | None = None) -> Any:
    """A dunder computed on the proxy's plain value when it has one (a list of the candidate's
    is a list here), and by the candidate only for its own, opaque objects."""
    candidates = _forward(name, kind)

    def method(self: Remote, *args: Any) -> Any:
        plain = _side(self).plain(self)
        if _opaque(plain):
            return candidates(self, *args)
        return operation(plain, *args)

    method.__name__ = f"__{name}__"
    return method


def _opaque(value: Any) -> bool:
    return type(value).__name__ == "Opaque"


def _operand(remote: Remote) -> Any:
    """The plain value of a proxy in arithmetic with a trusted value; an object of the
    candidate's own has none there (its dunders would decide a trusted result)."""
    plain = _side(remote).plain(remote)
    if _opaque(plain):
        kind = object.__getattribute__(remote, "_type_name")
        raise TypeError(f"unsupported operand: the candidate's {kind} with a trusted value")
    return plain


def _binary(name: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """An operator's dunder and its reflected twin (``__add__``, ``__radd__``): the
    candidate's between two of its own objects, plain values' with a trusted one."""
    operation = getattr(operator, name + "_" if name in ("and", "or") else name)

    def forward(self: Remote, other: Any) -> Any:
        if isinstance(other, Remote):
            return _side(self).apply(name, self, other)
        return operation(_operand(self), other)

    def reflected(self: Remote, other: Any) -> Any:
        if isinstance(other, Remote):
            return _side(self).apply(name, other, self)
        return operation(other, _operand(self))

    return forward, reflected


def _comparison(name: str) -> Callable[[Remote, Any], Any]:
    """Comparing with a trusted value uses the plain encoding (the candidate's ``__eq__``
    never decides); two of the candidate's own objects compare as the candidate defines."""
    compare = getattr(operator, name)

    def method(self: Remote, other: Any) -> Any:
        if isinstance(other, Remote):
            return _side(self).apply(name, self, other)
        return compare(_side(self).plain(self), other)

    return method


class Remote:
    """An object of the candidate's, seen from the judge: operations go to the child."""

    __slots__ = ("_side", "_handle", "_type_name")

    def __init__(self, side: JudgeSide, handle: int, type_name: str) -> None:
        object.__setattr__(self, "_side", side)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_type_name", type_name)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # noqa: D105 - isinstance(x, dict) of a dict of the candidate's
        return _CLASSES.get(object.__getattribute__(self, "_type_name"), Remote)

    def __getattr__(self, name: str) -> Any:
        return _side(self).apply("getattr", self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        _side(self).apply("setattr", self, name, value)

    def __delattr__(self, name: str) -> None:
        _side(self).apply("delattr", self, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _side(self).apply("call", self, *args, **kwargs)

    def __iter__(self) -> Any:
        plain = _side(self).plain(self)
        return iter(_side(self).apply("iter", self) if _opaque(plain) else plain)

    def __exit__(self, *exc: Any) -> Any:
        return _side(self).apply("exit", self, None, None, None)

    def __instancecheck__(self, instance: Any) -> bool:
        if not isinstance(instance, Remote):
            return False  # trusted values are never instances of the candidate's classes
        return _checked(_side(self).apply("isinstance", instance, self), bool)

    def __subclasscheck__(self, cls: Any) -> bool:
        if not isinstance(cls, Remote):
            return False
        return _checked(_side(self).apply("issubclass", cls, self), bool)

    def __hash__(self) -> int:
        plain = _side(self).plain(self)
        if type(plain).__name__ == "Opaque":
            return hash(("remote", object.__getattribute__(self, "_handle")))
        return hash(plain)

    # Conversions: the candidate computes them, Python's required type is checked.
    __repr__ = _forward("repr", str)
    __str__ = _forward("str", str)
    __format__ = _forward("format", str)
    __len__ = _on_value("len", len, int)
    __bool__ = _on_value("bool", bool, bool)
    __int__ = _on_value("int", int, int)
    __float__ = _on_value("float", float, float)
    __index__ = _on_value("index", operator.index, int)
    __contains__ = _on_value("contains", operator.contains, bool)
    # Items, context and unary operators: whatever the candidate returns.
    __getitem__ = _forward("getitem")
    __setitem__ = _forward("setitem")
    __delitem__ = _forward("delitem")
    __enter__ = _forward("enter")
    __neg__ = _on_value("neg", operator.neg)
    __pos__ = _on_value("pos", operator.pos)
    __abs__ = _on_value("abs", abs)
    __invert__ = _on_value("invert", operator.invert)
    __eq__ = _comparison("eq")  # type: ignore[assignment]
    __ne__ = _comparison("ne")  # type: ignore[assignment]
    __lt__ = _comparison("lt")
    __le__ = _comparison("le")
    __gt__ = _comparison("gt")
    __ge__ = _comparison("ge")
    (__add__, __radd__) = _binary("add")
    (__sub__, __rsub__) = _binary("sub")
    (__mul__, __rmul__) = _binary("mul")
    (__truediv__, __rtruediv__) = _binary("truediv")
    (__floordiv__, __rfloordiv__) = _binary("floordiv")
    (__mod__, __rmod__) = _binary("mod")
    (__pow__, __rpow__) = _binary("pow")
    (__matmul__, __rmatmul__) = _binary("matmul")
    (__and__, __rand__) = _binary("and")
    (__or__, __ror__) = _binary("or")
    (__xor__, __rxor__) = _binary("xor")
    (__lshift__, __rlshift__) = _binary("lshift")
    (__rshift__, __rrshift__) = _binary("rshift")


def _checked(value: Any, kind: type) -> Any:
    """A dunder's result must have the type Python requires (the candidate may lie)."""
    if kind is int and type(value) is bool:
        return int(value)
    if type(value) is not kind:
        raise TypeError(f"expected {kind.__name__} from the candidate, got {type(value).__name__}")
    return value


def plain_value(side: JudgeSide) -> Callable[[Any], Any]:
    """``__plain__`` in the judge: a proxy becomes its plain encoding, anything else stays."""

    def plain(value: Any) -> Any:
        return side.plain(value) if isinstance(value, Remote) else value

    return plain
