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

Comparisons and arithmetic between a proxy and a trusted value never ask the candidate: they
use the object's plain encoding, as the compare path does (an object whose ``__eq__`` is
always true is opaque there and equals nothing; an opaque object in arithmetic with a trusted
value is a TypeError). What the candidate hands the judge is always a handle, never a name
the judge resolves to one of its own objects: a method that *is* ``os.system`` or
``unittest.TestCase.skipTest`` is called in the candidate's process, like any other.
Operations on the candidate's own objects (calls, attributes, ``str``, the ``len`` of its own
class) are the candidate's to compute.

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
import types
from collections.abc import Callable
from typing import Any

MAX_MESSAGE = 32 * 1024 * 1024  # bytes of one reply (the codec bounds the value inside)
_LEN = struct.Struct(">I")
_MUTABLE = (list, dict, set, bytearray)  # arguments whose changes the call sends back
# Attributes and items of these types travel as handles, not copies: a check that changes
# them (``obj.students["Alice"] = {...}``) changes the candidate's object, as in one process.
# (What a call returns travels as a value: ``type(f(x)) is dict`` holds.)
BY_REFERENCE = (list, dict, set, bytearray, collections.deque)


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


# -- the child's side (the judge's is remote.py) -------------------------------------------------------------------------


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
        self._pid, self._getpid, self._exit = os.getpid(), os.getpid, os._exit

    def _to_handle(self, value: Any) -> list[Any]:
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
            if name in ("getattr", "getitem") and isinstance(result, BY_REFERENCE):
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
        if self._getpid() != self._pid:
            # A process the candidate forked, back in our loop: it never answers the judge
            # (as it never sends a frame: child.py's _Sender).
            self._exit(0)
        try:
            body = self._dumps(reply, separators=(",", ":")).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError, RecursionError):
            body = b'{"e":["raise","RuntimeError","unencodable reply",true]}'
        write_message(self.wfd, self._write, body)


def _named(value: Any) -> list[Any] | None:
    """``["h", "ref", module, qualname]`` for a class or function another module defines
    (``int``, ``datetime.date``), in a *plain* encoding only: the judge keeps it as a name it
    compares by (remote._Named), never as its own object. The program's own classes and
    functions (module ``solution``) are opaque."""
    if not isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
        return None
    module = getattr(value, "__module__", None)
    name = getattr(value, "__qualname__", None)
    if type(module) is not str or type(name) is not str or module in ("solution", "__main__"):
        return None
    return ["h", "ref", module[:200], name[:200]]


def _named_or_opaque(value: Any) -> list[Any]:
    return _named(value) or ["o", type(value).__qualname__[:200], "<object>"]
