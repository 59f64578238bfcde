"""The value channel: exact round trips for plain data, and nothing but ChannelError for junk."""

from __future__ import annotations

import array
import builtins
import collections
import datetime
import decimal
import fractions
import itertools
import json
import math
import sys
import types
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

from harness.sandbox.api import CaseRequest, SampleRequest
from harness.sandbox.channel import codec
from harness.sandbox.decode import BLOB, CORRUPTED, ReplyError, assemble

# numpy dtypes that travel as themselves (long doubles do not: they become opaque)
numeric_dtypes = npst.scalar_dtypes().filter(
    lambda d: (
        d.kind in "biu"
        or (d.kind, d.itemsize) in {("f", 2), ("f", 4), ("f", 8), ("c", 8), ("c", 16)}
    )
)
RANGE_UNITS = codec.MAX_UNITS // 1024
zones = st.none() | st.builds(
    datetime.timezone,
    st.timedeltas(min_value=datetime.timedelta(hours=-23), max_value=datetime.timedelta(hours=23)),
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**300), max_value=2**300)
    | st.floats(allow_nan=False)
    | st.complex_numbers(allow_nan=False)
    | st.text(st.characters(codec=None, exclude_categories=()))
    | st.binary()
    | st.fractions()
    | st.decimals(allow_nan=False)
    | st.dates()
    | st.datetimes(timezones=zones)
    | st.times(timezones=zones)
    | st.timedeltas()
    | st.builds(range, st.integers(), st.integers(), st.integers().filter(bool)).filter(
        # A value's ranges share its MAX_UNITS (over them: "value too large"), and a drawn value
        # may hold hundreds: each a small share. One range of all of them: the test's example.
        lambda r: (r.stop - r.start) // r.step <= RANGE_UNITS
    )
    | numeric_dtypes.flatmap(lambda d: npst.from_dtype(d, allow_nan=False))
)
hashable = st.recursive(
    scalars,
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=4),
    max_leaves=8,
)
plain_values = st.recursive(
    hashable
    | st.floats()
    | st.complex_numbers()
    | st.decimals()  # NaN and sNaN included: unhashable, so only here
    | st.binary().map(bytearray)
    | st.lists(st.integers(-(2**63), 2**63 - 1)).map(lambda xs: array.array("q", xs))
    | st.lists(st.floats()).map(lambda xs: array.array("d", xs))
    | npst.arrays(
        numeric_dtypes | npst.unicode_string_dtypes() | npst.byte_string_dtypes(),
        npst.array_shapes(min_dims=0, min_side=0, max_side=3),
    ),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner)
        | st.sets(hashable, max_size=5)
        | st.frozensets(hashable, max_size=5)
        | st.dictionaries(hashable, inner, max_size=5)
        | st.dictionaries(hashable, st.integers(), max_size=5).map(collections.Counter)
        | st.dictionaries(hashable, inner, max_size=5).map(collections.OrderedDict)
        | st.dictionaries(hashable, inner, max_size=5).map(
            lambda d: collections.defaultdict(list, d)
        )
        | st.builds(
            collections.deque,
            st.lists(inner, max_size=4),
            st.none() | st.integers(4, 6),
        )
    ),
    max_leaves=25,
)


def same(a: Any, b: Any) -> bool:
    """Structural equality with exact types, where nan equals nan and -0.0 differs from 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (float, np.floating)):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, (complex, np.complexfloating)):
        return same(float(a.real), float(b.real)) and same(float(a.imag), float(b.imag))
    if isinstance(a, np.ndarray):
        return (a.dtype, a.shape) == (b.dtype, b.shape) and same(a.tolist(), b.tolist())
    if isinstance(a, decimal.Decimal):
        return str(a) == str(b)
    if isinstance(a, array.array):
        return a.typecode == b.typecode and same(a.tolist(), b.tolist())
    if isinstance(a, collections.deque):
        return a.maxlen == b.maxlen and same(list(a), list(b))
    if isinstance(a, collections.defaultdict) and a.default_factory is not b.default_factory:
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, collections.OrderedDict):
        return same(list(a.items()), list(b.items()))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b and (not isinstance(a, datetime.time) or a.tzinfo == b.tzinfo)


def through_json(value: Any) -> Any:
    wire = json.dumps(codec.encode_value(value))
    return codec.decode_value(json.loads(wire))


@pytest.mark.filterwarnings("ignore:Generating overly large repr")  # the strategy's own repr
@settings(max_examples=120, deadline=None)
@given(plain_values)
@example(range(0, codec.MAX_UNITS))
def test_round_trip_is_exact(value: Any) -> None:
    assert same(through_json(value), value)
    assert same(codec.plain(value), value)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise_anything_else(data: bytes) -> None:
    try:
        codec.decode_value(codec.parse_payload(data).get("v"))
    except codec.ChannelError:
        pass


json_junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=20,
)
tags = st.sampled_from(
    list("nbifcsyYtlSFdoCOKVPrqQDIN")
    + ["dd", "ar", "nd", "date", "datetime", "time", "timedelta", "zz"]
)
tagged_junk = st.recursive(
    st.builds(lambda t, p: [t, p], tags, json_junk) | st.builds(lambda t: [t], tags),
    lambda inner: (
        st.builds(lambda t, xs: [t, xs], tags, st.lists(inner, max_size=3))
        | st.builds(lambda t, xs: [t, [[x, x] for x in xs]], tags, st.lists(inner, max_size=3))
    ),
    max_leaves=15,
)


@settings(max_examples=200, deadline=None)
@given(json_junk | tagged_junk)
def test_forged_trees_decode_or_raise_channel_error(data: Any) -> None:
    try:
        codec.decode_value(data)
    except codec.ChannelError:
        pass


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200), st.sampled_from(["frame", "setup"]))
def test_forged_frames_become_corrupted_cases(data: bytes, kind: str) -> None:
    request = SampleRequest("", "f", (CaseRequest("c", "compare", calls=("candidate()",)),))
    slot = {"kind": kind, "nonce": "abc", "at": [0, len(data)]}
    reply = {"slots": [slot], "coverage": [], BLOB: data}
    case = assemble(request, reply).cases["c"]
    assert case.status == "crashed" and case.message == CORRUPTED


def _frame_reply(payload: dict[str, Any], nonce: str = "abc") -> dict[str, Any]:
    """A reply of one frame slot, its payload in the reply's bytes as the server puts it."""
    body = json.dumps(payload).encode()
    return {"slots": [{"kind": "frame", "nonce": nonce, "at": [0, len(body)]}], BLOB: body}


def test_good_frame_decodes_and_bad_ones_do_not() -> None:
    request = SampleRequest("", "f", (CaseRequest("c", "compare", calls=("candidate()",)),))
    good = {"status": "ok", "values": [["i", "1e"]], "duration_s": 0.1, "n": "abc", "i": 0}
    assert assemble(request, _frame_reply(good)).cases["c"].values == [30]
    for bad in (
        dict(good, n="other"),  # another writer
        dict(good, i=1),  # out of order
        dict(good, values=[["i", "1e"], ["i", "1"]]),  # too many values
        dict(good, values=[["i", "1e", "x"]]),
        dict(good, values=[["S", [["l", []]]]]),  # unhashable set element
        dict(good, values=[["d", [[["i", "1"], ["n"]], [["i", "1"], ["n"]]]]]),  # duplicate key
        dict(good, duration_s=-1),
        dict(good, status="passed"),
    ):
        case = assemble(request, _frame_reply(bad)).cases["c"]
        assert (case.status, case.message) == ("crashed", CORRUPTED), bad
    with pytest.raises(ReplyError):
        assemble(request, {"slots": []})
    with pytest.raises(ReplyError):
        assemble(request, {"slots": [{"kind": "verdict", "status": "ok"}]})
    for at in ([0, 10_000], [-1, 3], [0], "0:3", [0.0, 3]):  # not where our server puts one
        reply = _frame_reply(good)
        reply["slots"][0]["at"] = at
        with pytest.raises(ReplyError):
            assemble(request, reply)


class EvilInt(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__

    def __int__(self) -> int:
        return 999

    def __index__(self) -> int:
        return 999


class EvilStr(str):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__

    def __str__(self) -> str:
        return "forged"


class EvilList(list):
    def __iter__(self):  # type: ignore[override]
        return iter([1, 2, 3])

    def __len__(self) -> int:
        return 3


class EvilDict(dict):
    def items(self):  # type: ignore[override]
        return [("forged", 1)]


class SneakyDict(dict):
    """Overrides iteration too: ``dict.copy`` would then ask its ``keys()`` and ``[]``."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(["forged"])

    def keys(self):  # type: ignore[override]
        return ["forged"]

    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        return 1


class SneakyCounter(collections.Counter):  # type: ignore[type-arg]
    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(["forged"])

    def keys(self):  # type: ignore[override]
        return ["forged"]


class EvilFloat(float):
    def __float__(self) -> float:
        return 1.0


class Faker:
    """Claims to be an int via ``__class__``."""

    @property  # type: ignore[misc]
    def __class__(self):  # noqa: D105
        return int

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


def test_subclasses_become_their_exact_base_type() -> None:
    cases = [
        (EvilInt(5), 5),
        (EvilStr("abc"), "abc"),
        (EvilList([7]), [7]),
        (EvilDict({"a": 1}), {"a": 1}),
        (SneakyDict({"a": 2}), {"a": 2}),
        (SneakyCounter({"a": 2}), collections.Counter({"a": 2})),
        (EvilFloat(2.5), 2.5),
        ((EvilInt(1), EvilStr("x")), (1, "x")),
        ({EvilInt(3)}, {3}),
    ]
    for evil, expected in cases:
        value = through_json(evil)
        assert same(value, expected), (evil, value)
    faked = through_json(Faker())
    assert isinstance(faked, codec.Opaque) and faked != 0


class EvilArray(np.ndarray):
    def tolist(self):  # type: ignore[no-untyped-def]
        return [3]

    def ravel(self, order="C"):  # type: ignore[no-untyped-def]
        return np.array([3])

    def __eq__(self, other):  # type: ignore[no-untyped-def]
        return True

    __hash__ = None  # type: ignore[assignment]


def test_numpy_values_stay_numpy() -> None:
    for scalar in (np.int64(4), np.float32(0.5), np.bool_(True), np.str_("ab"), np.uint8(255)):
        assert same(through_json(scalar), scalar)
    assert through_json(np.float64(0.5)) == 0.5 and through_json(np.bool_(False)) is np.False_
    matrix = through_json(np.array([[1, 2], [3, 4]], dtype=np.int16))
    assert matrix.dtype == np.int16 and matrix.shape == (2, 2)
    # A subclass arrives as a plain array of its data: its own methods are never called.
    assert same(through_json(np.array([[1.5, 2]]).view(EvilArray)), np.array([[1.5, 2.0]]))
    mixed = through_json(np.array([[1, 2], (3,), "x", None, np.array([4])], dtype=object))
    assert mixed.dtype == object and mixed.shape == (5,)
    assert mixed[0] == [1, 2] and mixed[1] == (3,) and mixed[2] == "x" and mixed[3] is None
    assert same(mixed[4], np.array([4]))
    for odd in (np.datetime64("2020-01-01"), np.array([1], dtype="M8[D]"), np.longdouble(1)):
        assert isinstance(through_json(odd), codec.Opaque)


def test_numpy_is_looked_up_lazily() -> None:
    """The fork server never imports numpy; encoding only looks at ``sys.modules``."""
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('c', {codec.__file__!r})\n"
        "codec = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(codec)\n"
        "codec.encode_value([1, object(), iter([2])])\n"
        "print('numpy' in sys.modules)\n"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _numbers(stop: int, fail_after: int | None = None):  # type: ignore[no-untyped-def]
    for i in range(stop):
        if i == fail_after:
            raise ValueError("bad item")
        yield i


def test_iterators_behave_like_the_candidates_under_the_check() -> None:
    assert set(through_json(map(abs, [-1, 1, 2]))) == {1, 2}
    assert sorted(through_json(x for x in [3, 1, 2])) == [1, 2, 3]
    assert list(through_json(zip([1, 2], "ab", strict=True))) == [(1, "a"), (2, "b")]
    assert tuple(through_json(reversed([1, 2]))) == (2, 1)
    assert sum(through_json(filter(None, [0, 1, 2]))) == 3
    assert next(through_json(itertools.count(5))) == 5  # endless: the first items travel
    assert list(through_json(iter([[1], {2: 3}]))) == [[1], {2: 3}]
    generator = through_json(_numbers(3))
    assert isinstance(generator, types.GeneratorType)
    assert through_json(map(abs, [1])).__class__ is map
    iterator = through_json(iter([1, 2]))
    assert iterator != [1, 2] and not (iterator == [1, 2]) and iterator == iterator
    assert bool(through_json(iter([])))  # an iterator is true even when empty
    with pytest.raises(TypeError):
        len(through_json(iter([1, 2])))
    with pytest.raises(TypeError):
        through_json(iter([1, 2]))[0]  # type: ignore[index]


def test_an_iterator_that_raises_raises_again_after_its_items() -> None:
    replay = through_json(_numbers(5, fail_after=2))
    assert next(replay) == 0 and next(replay) == 1
    with pytest.raises(ValueError, match="bad item"):
        next(replay)
    assert list(replay) == []  # a generator that raised is finished
    with pytest.raises(ValueError):
        list(through_json(_numbers(5, fail_after=2)))

    class Custom(Exception):
        pass

    def custom():  # type: ignore[no-untyped-def]
        yield 1
        raise Custom("mine")

    with pytest.raises(codec.CandidateError, match="Custom: mine"):
        list(through_json(custom()))

    def leaves():  # type: ignore[no-untyped-def]
        yield 1
        raise SystemExit(0)  # must not stop the trusted process

    with pytest.raises(codec.CandidateError, match="SystemExit"):
        list(through_json(leaves()))
    endless = through_json(itertools.count())
    with pytest.raises(codec.TransferLimit):
        list(endless)


def test_stdlib_values_keep_their_types_and_equality() -> None:
    assert through_json(range(1, 10, 3)) == range(1, 10, 3)
    assert through_json({1: 2, 3: 4}.keys()) == {1, 3}
    assert through_json({1: 2}.items()) == {(1, 2)}
    values = through_json({1: [2]}.values())
    assert list(values) == [[2]] and values != [[2]]  # values views compare by identity
    assert through_json(collections.deque([1, 2])) == collections.deque([1, 2])
    assert through_json(collections.deque([1, 2])) != [1, 2]
    assert through_json(fractions.Fraction(1, 3)) == fractions.Fraction(2, 6)
    assert through_json(decimal.Decimal("0.10")) == decimal.Decimal("0.1")
    counter = through_json(collections.Counter("aab"))
    assert counter == {"a": 2, "b": 1} and counter["z"] == 0
    assert counter == collections.Counter(a=2, b=1, c=0)  # Counter equality, not dict's
    ordered = collections.OrderedDict([(1, 1), (2, 2)])
    ordered.move_to_end(1)
    assert list(through_json(ordered)) == [2, 1]
    assert through_json(ordered) != collections.OrderedDict([(1, 1), (2, 2)])
    assert through_json(collections.defaultdict(list, {1: [2]}))[5] == []
    with pytest.raises(KeyError):  # a lambda factory stays in the sandbox
        through_json(collections.defaultdict(lambda: 0, {1: 2}))[5]
    point = collections.namedtuple("Point", "x y")(1, 2)
    assert through_json(point) == (1, 2) == point
    assert through_json(datetime.date(2020, 1, 2)) == datetime.date(2020, 1, 2)
    assert through_json(array.array("i", [1, 2])) == array.array("i", [1, 2])


class OddZone(datetime.tzinfo):
    def utcoffset(self, dt):  # type: ignore[no-untyped-def]
        return datetime.timedelta(hours=1)


@pytest.mark.parametrize(
    "node",
    [
        ["r", "1", "2", "0"],  # step 0
        ["r", "1", "2"],
        ["q", [["i", "1"], ["i", "2"]], "1"],  # longer than maxlen
        ["q", [], 3],
        ["Q", "2", "4"],  # not in lowest terms
        ["Q", "1", "-3"],
        ["D", "1.5.3"],
        ["D", "nan"],
        ["date", "2020-13-01"],
        ["datetime", "x" * 100],
        ["timedelta", "0", "15180", "0"],  # seconds past a day
        ["dd", "print", []],
        ["dd", ["int"], []],
        ["K", [["i", "1"], ["i", "1"]]],  # duplicate key
        ["K", [["l", []]]],
        ["ar", "", []],
        ["ar", "i", [["f", "0x1.0p+0"]]],
        ["ar", "bB", []],
        ["I", "zip", [], None],
        ["I", "iterator", [], ["raise", "NotABuiltin", "", True]],
        ["I", "iterator", [], ["raise", "StopIteration", "", True]],
        ["I", "iterator", [], ["raise", "SystemExit", "", True]],
        ["I", "iterator", [], ["more", 1]],
        ["I", ["iterator"], [], None],
        ["N", "<i8", ["f", "0x1.0p+0"]],  # a float in an int scalar
        ["N", "|O", ["n"]],
        ["N", "<M8[D]", ["i", "1"]],
        ["N", "<f16", ["f", "0x1.0p+0"]],
        ["N", "<i1", ["i", "1ff"]],  # out of range
        ["nd", "<i8", [2], [["i", "1"]]],  # shape does not match
        ["nd", "<i8", [-1], []],
        ["nd", "<i8", [1, "1"], [["i", "1"]]],
        ["nd", "i8,i8", [0], []],  # structured
        ["nd", "<f8", [1], [["s", "1"]]],
        ["nd", "<U2", [1], [["y", ""]]],
    ],
)
def test_malformed_new_nodes_are_channel_errors(node: list[Any]) -> None:
    with pytest.raises(codec.ChannelError):
        codec.decode_value(node)


class SelfIterator:
    """``__next__`` returns the iterator itself: an endlessly nested value."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        return self

    def __next__(self):  # type: ignore[no-untyped-def]
        return self

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class ForgedIterator:
    """``__iter__`` hands out something that is not an iterator."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        return [1, 2, 3]

    def __next__(self):  # type: ignore[no-untyped-def]
        return 1


class FakeDtype:
    kind, str, fields, subdtype, itemsize = "i", "<i8", None, None, 8


class FakeNdarray:
    """What a fake ``numpy`` module in ``sys.modules`` calls its arrays."""

    dtype = property(lambda self: FakeDtype())
    shape = property(lambda self: (1,))
    size = property(lambda self: 1)

    def view(self, cls):  # type: ignore[no-untyped-def]
        return self

    def ravel(self):  # type: ignore[no-untyped-def]
        return self

    def tolist(self):  # type: ignore[no-untyped-def]
        return [0]

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


def test_hostile_iterators_and_fake_numpy_cannot_forge_equality() -> None:
    assert isinstance(through_json(SelfIterator()), codec.Opaque)
    assert isinstance(through_json(ForgedIterator()), codec.Opaque)
    fake = types.ModuleType("numpy")
    fake.ndarray, fake.generic = FakeNdarray, type("generic", (), {})  # type: ignore[attr-defined]
    saved = sys.modules["numpy"]
    sys.modules["numpy"] = fake
    try:
        encoded = codec.encode_value(FakeNdarray())
        everything = types.ModuleType("numpy")
        everything.ndarray = everything.generic = object  # type: ignore[attr-defined]
        sys.modules["numpy"] = everything
        swallowed = codec.encode_value(EvilInt(3))
    finally:
        sys.modules["numpy"] = saved
    # Only the fake's data travels, and the real numpy rebuilds it: its __eq__ is gone.
    value = codec.decode_value(json.loads(json.dumps(encoded)))
    assert type(value) is np.ndarray and not (value == 3).any()
    assert isinstance(codec.decode_value(swallowed), codec.Opaque)


def test_values_that_do_not_travel_are_opaque() -> None:
    aware = datetime.datetime(2020, 1, 1, tzinfo=OddZone())
    assert isinstance(through_json(aware), codec.Opaque)

    class NotIterable:
        def __next__(self):  # type: ignore[no-untyped-def]
            return 1

    assert isinstance(through_json(NotIterable()), codec.Opaque)


def test_other_objects_are_opaque_and_equal_only_themselves() -> None:
    value = through_json(object())
    assert isinstance(value, codec.Opaque)
    assert value == value and value != through_json(object()) and value != 0
    assert hash(value) == hash(value)
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    assert isinstance(through_json(cyclic), codec.Opaque)
    deep: list[Any] = []
    for _ in range(codec.MAX_DEPTH + 5):
        deep = [deep]
    assert isinstance(through_json(deep), codec.Opaque)


def test_hostile_repr_does_not_break_encoding() -> None:
    class Bad:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    class NotStr:
        def __repr__(self):  # type: ignore[no-untyped-def]
            return 5

    assert through_json(Bad()).text == "<unrepresentable>"
    assert through_json(NotStr()).text == "<unrepresentable>"


def test_patched_builtins_do_not_change_encoding() -> None:
    saved = (builtins.isinstance, builtins.type, builtins.len)
    try:
        builtins.isinstance = lambda *a: True  # type: ignore[assignment]
        builtins.len = lambda x: 0  # type: ignore[assignment]
        encoded = codec.encode_value([EvilInt(3), "x", {1: 2.5}])
    finally:
        builtins.isinstance, builtins.type, builtins.len = saved
    assert same(codec.decode_value(json.loads(json.dumps(encoded))), [3, "x", {1: 2.5}])


def test_frame_header_round_trip() -> None:
    data = codec.frame(codec.KIND_CASE, 7, {"status": "ok"})
    assert codec.parse_header(data[: codec.HEADER_SIZE]) == (
        codec.KIND_CASE,
        7,
        len(data) - codec.HEADER_SIZE,
    )
    with pytest.raises(codec.ChannelError):
        codec.parse_header(b"XXXX" + data[4 : codec.HEADER_SIZE])
    with pytest.raises(codec.ChannelError):
        codec.parse_payload(b"[1, 2]")


@pytest.mark.parametrize("micros", [1, -1, 999_999])
def test_a_utc_offset_with_microseconds_survives(micros: int) -> None:
    """fromisoformat drops an offset's microseconds before Python 3.12; the decoder keeps them."""
    zone = datetime.timezone(datetime.timedelta(hours=2, microseconds=micros))
    for value in (datetime.time(1, 2, tzinfo=zone), datetime.datetime(2001, 2, 3, tzinfo=zone)):
        assert same(through_json(value), value)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(plain_values, max_size=3),
    st.floats(min_value=0.0, allow_infinity=False, allow_nan=False),
    st.text("0123456789abcdef", min_size=1, max_size=32),
    st.integers(0, 2**32 - 1),
)
def test_a_case_frame_built_directly_is_the_frame_json_writes(
    values: list[Any], duration: float, nonce: str, index: int
) -> None:
    encoded = [codec.encode_value(v) for v in values]
    payload = {"status": "ok", "values": encoded, "duration_s": duration, "n": nonce, "i": index}
    assert codec.values_frame(index, encoded, duration, nonce) == codec.frame(
        codec.KIND_CASE, index, payload
    )
