"""The object bridge between a judge process and the candidate's child (stdlib only).

Checks that cannot be split into "call the candidate, then compare in the trusted process"
(loops over generated inputs, checks that use the benchmark's helpers, ClassEval's unittest
classes) run in a *judge*: a fork of the fork server that never runs candidate code
(:mod:`judge`). Whatever such a check does with the candidate goes over this bridge. The
judge's :class:`Remote` proxies send operations (a call, an attribute, ``len``, iteration,
...) to the child, which performs them on the real objects and answers with the result as
plain data (:mod:`codec`), or as a handle when the result has no plain encoding (an instance
of the candidate's own class). The assert itself runs in the judge, so a forged answer can
only be a wrong value.

Comparisons between a proxy and a trusted value never ask the candidate: they use the
object's plain encoding, as the compare path does (an object whose ``__eq__`` is always true
is opaque there and equals nothing). Operations whose *result* is what the check inspects
(``len``, ``str``, ``in``, arithmetic, method calls) are the candidate's to compute.

Messages are length-prefixed JSON on two pipes, ``{"fn", "a", "k"}`` one way and ``{"v"}``
(a value) or ``{"e"}`` (what the candidate raised) the other. The judge reads replies with a
size bound; anything malformed closes the bridge, which is the candidate's failure.
"""

from __future__ import annotations

import base64
import collections
import importlib
import json
import operator
import os
import pickle
import struct
import sys
import types
from collections.abc import Callable
from typing import Any

MAX_MESSAGE = 32 * 1024 * 1024  # bytes of one reply (the codec bounds the value inside)
_LEN = struct.Struct(">I")
_MUTABLE = (list, dict, set, bytearray)  # arguments whose changes the call sends back
# Attributes and items of these types travel as handles, not copies: a check that changes
# them (``obj.students["Alice"] = {...}``) changes the candidate's object, as in one process.
# (What a call returns travels as a value: ``type(f(x)) is dict`` holds.)
_BY_REFERENCE = (list, dict, set, bytearray, collections.deque)
# What a proxy of such a container claims to be for ``isinstance`` (unittest's assertDictEqual).
_CLASSES = {
    cls.__name__: cls
    for cls in (
        *_BY_REFERENCE,
        collections.OrderedDict,
        collections.defaultdict,
        collections.Counter,
    )
}


class BridgeClosed(BaseException):
    """The child is gone or broke the protocol (a BaseException: checks' ``except Exception``
    must not swallow it)."""


def _read_exact(fd: int, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def read_message(fd: int) -> Any:
    """One message, or None at end of file; BridgeClosed for anything malformed."""
    try:
        header = _read_exact(fd, 4)
        if header is None:
            return None
        size = _LEN.unpack(header)[0]
        if size > MAX_MESSAGE:
            raise BridgeClosed("bridge message too large")
        body = _read_exact(fd, size)
        if body is None:
            return None
        message = json.loads(body)
    except (OSError, ValueError, RecursionError) as exc:
        raise BridgeClosed(f"unreadable bridge message: {type(exc).__name__}") from None
    if type(message) is not dict:
        raise BridgeClosed("bridge message is not an object")
    return message


def write_message(fd: int, write: Callable[[int, Any], int], body: bytes) -> None:
    view = memoryview(_LEN.pack(len(body)) + body)
    while view:
        view = view[write(fd, view) :]


# -- the child's side -------------------------------------------------------------------------


def _call(target: Any, *args: Any, **kwargs: Any) -> Any:
    return target(*args, **kwargs)


def _names(env: dict[str, Any]) -> list[list[Any]]:
    """The program's top-level names: ``[name, module name or None, value]`` each."""
    out = []
    for name, value in list(env.items()):
        if type(name) is not str or name.startswith("__"):
            continue
        module = getattr(value, "__name__", None) if type(value) is type(os) else None
        out.append([name, module if type(module) is str else None, value])
    return out


# What a judge may ask the child to do; every entry takes the decoded arguments as they came.
OPERATIONS: dict[str, Callable[..., Any]] = {
    "call": _call,
    "getattr": getattr,
    "setattr": setattr,
    "delattr": delattr,
    "len": len,
    "iter": iter,
    "bool": bool,
    "str": str,
    "repr": repr,
    "format": format,
    "int": int,
    "float": float,
    "index": operator.index,
    "hash": hash,
    "contains": operator.contains,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "neg": operator.neg,
    "pos": operator.pos,
    "abs": abs,
    "invert": operator.invert,
    "enter": lambda obj: type(obj).__enter__(obj),
    "exit": lambda obj, *exc: type(obj).__exit__(obj, *exc),
    "isinstance": isinstance,
    "issubclass": issubclass,
}
BINARY = "add sub mul truediv floordiv mod pow matmul and or xor lshift rshift".split()
for _name in BINARY:
    OPERATIONS[_name] = getattr(operator, _name + "_" if _name in ("and", "or") else _name)


class ChildSide:
    """Serves a judge's operations on the program's objects, one sandbox-mode case at a time."""

    def __init__(self, codec: Any, env: dict[str, Any], rfd: int, wfd: int) -> None:
        self.codec = codec
        self.env = env
        self.rfd, self.wfd = rfd, wfd
        self.table: dict[int, Any] = {}  # handle -> object (kept alive: ids stay unique)
        self.handles: dict[int, int] = {}  # id(object) -> handle
        self._write = os.write
        self._dumps = json.dumps

    def _to_handle(self, value: Any) -> list[Any]:
        ref = _named(value)
        if ref is not None:
            return ref
        handle = self.handles.get(id(value))
        if handle is None:
            handle = len(self.table) + 1
            self.table[handle] = value
            self.handles[id(value)] = handle
        return ["h", handle, self.codec.type_name(value)]

    def _from_handle(self, node: list[Any]) -> Any:
        if len(node) == 4 and node[1] == "ref":  # a named object of the judge's: import it
            value: Any = importlib.import_module(node[2])
            for part in node[3].split("."):
                value = getattr(value, part)
            return value
        if len(node) == 3 and node[1] == "pickle":  # a copy of one of the judge's objects
            return pickle.loads(base64.b64decode(node[2]))
        if len(node) < 2 or type(node[1]) is not int or node[1] not in self.table:
            raise self.codec.ChannelError("unknown handle")
        return self.table[node[1]]

    def serve(self) -> bool:
        """Answer operations until the judge ends the case (True) or is gone (False)."""
        codec = self.codec
        codec.hooks.opaque, codec.hooks.handle = self._to_handle, self._from_handle
        try:
            while True:
                try:
                    message = read_message(self.rfd)
                except BridgeClosed:
                    return False
                if message is None:
                    return False
                name = message.get("fn")
                if name == "end":
                    return True
                self._answer(name, message)
        finally:
            codec.hooks.opaque = codec.hooks.handle = None

    def _answer(self, name: Any, message: dict[str, Any]) -> None:
        codec = self.codec
        reply: dict[str, Any]
        try:
            args = [codec.decode_value(a) for a in message.get("a") or ()]
            kwargs = {k: codec.decode_value(v) for k, v in (message.get("k") or {}).items()}
            if name == "names":
                result: Any = _names(self.env)
            elif name == "global":
                result = self.env[args[0]]
            elif name == "plain":
                codec.hooks.opaque = _named_or_opaque  # the compare path's encoding: no handles
                try:
                    reply = {"v": codec.encode_value(args[0])}
                finally:
                    codec.hooks.opaque = self._to_handle
                self._send(reply)
                return
            else:
                result = OPERATIONS[name](*args, **kwargs)
            if name in ("getattr", "getitem") and isinstance(result, _BY_REFERENCE):
                reply = {"v": self._to_handle(result)}
            else:
                reply = {"v": codec.encode_value(result)}
            if name == "call":  # in-place changes of mutable arguments travel back
                changed = [
                    [i, codec.encode_value(a)]
                    for i, a in enumerate(args)
                    if i and isinstance(a, _MUTABLE)
                ]
                if changed:
                    reply["w"] = changed
        except KeyError as exc:
            if name == "global":
                exc = NameError(f"name {exc.args[0]!r} is not defined")
            reply = {"e": codec.raised(exc)}
        except BaseException as exc:  # noqa: B036 - the candidate's, sent to the judge
            reply = {"e": codec.raised(exc)}
        self._send(reply)

    def _send(self, reply: dict[str, Any]) -> None:
        try:
            body = self._dumps(reply, separators=(",", ":")).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError, RecursionError):
            body = b'{"e":["raise","RuntimeError","unencodable reply",true]}'
        write_message(self.wfd, self._write, body)


# -- the judge's side -------------------------------------------------------------------------


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
            return _resolve(node[2], node[3])
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
            write_message(self.wfd, os.write, body)
        except OSError as exc:
            self.closed = True
            raise BridgeClosed(f"the candidate's process is gone: {exc}") from None

    def _roundtrip(self, message: dict[str, Any]) -> dict[str, Any]:
        self._write(message)
        try:
            reply = read_message(self.rfd)
        except BridgeClosed:
            self.closed = True
            raise
        if reply is None:
            self.closed = True
            raise BridgeClosed("the candidate's process is gone")
        return reply


def _named(value: Any) -> list[Any] | None:
    """``["h", "ref", module, qualname]`` for a class or function another module defines
    (``int``, ``datetime.date``): the judge takes its own copy by that name. The program's
    own classes and functions (module ``solution``) are handles instead."""
    if not isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
        return None
    module = getattr(value, "__module__", None)
    name = getattr(value, "__qualname__", None)
    if type(module) is not str or type(name) is not str or module in ("solution", "__main__"):
        return None
    return ["h", "ref", module[:200], name[:200]]


def _named_or_opaque(value: Any) -> list[Any]:
    return _named(value) or ["o", type(value).__qualname__[:200], "<object>"]


def _resolve(module: Any, name: Any) -> Any:
    """A named object in the judge, only from modules it already imported (a name from the
    candidate never makes the judge import anything); unknown: an opaque value."""
    found: Any = sys.modules.get(module) if type(module) is str else None
    if found is not None and type(name) is str:
        for part in name.split("."):
            found = getattr(found, part, None)
        if isinstance(found, (type, types.FunctionType, types.BuiltinFunctionType)):
            return found
    return _Unknown(f"{module}.{name}")


def _resolve_node(node: list[Any]) -> Any:
    if len(node) == 4 and node[1] == "ref":
        return _resolve(node[2], node[3])
    raise ValueError("a handle where a plain value was expected")


class _Unknown:
    """A named object the judge does not have: equal to nothing but itself."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name[:200]} from the sandbox>"


def _update(target: Any, new: Any) -> None:
    """Apply a call's in-place change of a mutable argument to the judge's own object."""
    if type(target) is not type(new):
        return
    if isinstance(target, (list, bytearray)):
        target[:] = new
    elif isinstance(target, (dict, set)):
        target.clear()
        target.update(new)


def _binary(name: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    def forward(self: Remote, other: Any) -> Any:
        return _side(self).apply(name, self, other)

    def reflected(self: Remote, other: Any) -> Any:
        return _side(self).apply(name, other, self)

    return forward, reflected


def _side(remote: Remote) -> JudgeSide:
    return object.__getattribute__(remote, "_side")


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

    def __repr__(self) -> str:
        return _checked(_side(self).apply("repr", self), str)

    def __str__(self) -> str:
        return _checked(_side(self).apply("str", self), str)

    def __format__(self, spec: str) -> str:
        return _checked(_side(self).apply("format", self, spec), str)

    def __len__(self) -> int:
        return _checked(_side(self).apply("len", self), int)

    def __bool__(self) -> bool:
        return _checked(_side(self).apply("bool", self), bool)

    def __int__(self) -> int:
        return _checked(_side(self).apply("int", self), int)

    def __float__(self) -> float:
        return _checked(_side(self).apply("float", self), float)

    def __index__(self) -> int:
        return _checked(_side(self).apply("index", self), int)

    def __iter__(self) -> Any:
        return iter(_side(self).apply("iter", self))

    def __contains__(self, item: Any) -> bool:
        return _checked(_side(self).apply("contains", self, item), bool)

    def __getitem__(self, key: Any) -> Any:
        return _side(self).apply("getitem", self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _side(self).apply("setitem", self, key, value)

    def __delitem__(self, key: Any) -> None:
        _side(self).apply("delitem", self, key)

    def __enter__(self) -> Any:
        return _side(self).apply("enter", self)

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

    # Comparing with a trusted value uses the plain encoding (the candidate's __eq__ never
    # decides); two of the candidate's own objects compare as the candidate defines.
    def _compare(self, name: str, other: Any) -> Any:
        if isinstance(other, Remote):
            return _side(self).apply(name, self, other)
        return getattr(operator, name)(_side(self).plain(self), other)

    def __eq__(self, other: object) -> Any:
        return self._compare("eq", other)

    def __ne__(self, other: object) -> Any:
        return self._compare("ne", other)

    def __lt__(self, other: Any) -> Any:
        return self._compare("lt", other)

    def __le__(self, other: Any) -> Any:
        return self._compare("le", other)

    def __gt__(self, other: Any) -> Any:
        return self._compare("gt", other)

    def __ge__(self, other: Any) -> Any:
        return self._compare("ge", other)

    def __neg__(self) -> Any:
        return _side(self).apply("neg", self)

    def __pos__(self) -> Any:
        return _side(self).apply("pos", self)

    def __abs__(self) -> Any:
        return _side(self).apply("abs", self)

    def __invert__(self) -> Any:
        return _side(self).apply("invert", self)

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
