"""Values over the channel's bounds travel as digests by equality, and lists of plain items as
vectors (harness.sandbox.channel: canonical.py, the encoder's ``#`` and ``v`` nodes).

A digest must judge as ``==`` judges: the same digest exactly when the values are equal
(``1 == 1.0 == True``, a list never a tuple, a NaN never equal), whatever path (item by item,
or the C-level forms for strings, numbers and rows) wrote it. The trusted side compares a
digest with a plain value by computing the value's digest, at a bounded cost; a forged node is
a corrupted channel. Through the real sandbox, EvalPlus-sized outputs (HumanEval/15's strings,
/83's ints, /130's lists, Mbpp/255's rows of tuples) come back as digests equal to the value.
"""

from __future__ import annotations

import array
import base64
import decimal
import fractions
import json
import math
import struct
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings
from harness.sandbox.channel import canonical, codec, wire


def through_json(value: Any) -> Any:
    return codec.decode_value(json.loads(json.dumps(codec.encode_value(value))))


def item_by_item(value: Any) -> tuple[str, bool] | None:
    """The digest with every C-level form turned off: the forms must write the same bytes."""
    saved = canonical._items

    def one_by_one(state: Any, items: list[Any], depth: int) -> None:
        for item in items:
            canonical._value(state, item, depth)

    canonical._items = one_by_one
    try:
        return canonical.digest(value)
    finally:
        canonical._items = saved


numbers = (
    st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.booleans()
    | st.fractions(max_denominator=64)
    | st.decimals(allow_nan=False, places=3, min_value=-(10**6), max_value=10**6)
    | st.complex_numbers(allow_nan=False, max_magnitude=1e6)
)
leaves = numbers | st.none() | st.text(max_size=4) | st.binary(max_size=3)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=6) | st.lists(inner, max_size=6).map(tuple),
    max_leaves=30,
)


def twin(value: Any) -> Any:
    """An equal value of other types where there is one: numbers as their float or Fraction,
    bytes as a bytearray."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, complex)):
        return value
    if isinstance(value, int):
        return float(value) if float(value) == value else fractions.Fraction(value)
    if isinstance(value, float):
        return fractions.Fraction(value) if math.isfinite(value) else value
    if isinstance(value, (fractions.Fraction, decimal.Decimal)):
        return float(value) if float(value) == value else value
    if isinstance(value, bytes):
        return bytearray(value)
    if isinstance(value, list):
        return [twin(item) for item in value]
    if isinstance(value, tuple):
        return tuple(twin(item) for item in value)
    return value


@settings(max_examples=400, deadline=None)
@given(values, values)
def test_digests_are_equal_exactly_when_the_values_are(a: Any, b: Any) -> None:
    assert (canonical.digest(a) == canonical.digest(b)) == (a == b)
    assert canonical.digest(twin(a)) == canonical.digest(a)
    assert canonical.digest(a) == item_by_item(a)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [0, 1, -1, 2.5, -0.0, 1e300, 2**53 + 1, True, 7.0, 2**64, 2**49, -(2**49) - 1, 2**53]
        ),
        max_size=40,
    ),
    st.lists(st.tuples(st.sampled_from(["a", "b", ""]), st.sampled_from(["a", "c"])), max_size=40),
)
def test_the_c_level_forms_write_the_bytes_item_by_item_writes(numbers: list, rows: list) -> None:
    many = [str(i) for i in range(200)]  # past the one-byte tokens
    for value in (numbers, tuple(numbers), rows, [list(r) for r in rows], rows + [("x", 1)], many):
        assert canonical.digest(value) == item_by_item(value)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from([0.0, -0.0, 2.5, -1e308, 1e308, math.inf, -math.inf, math.nan, 5e-324]),
        max_size=40,
    )
)
def test_a_list_of_floats_is_written_in_c_as_item_by_item_writes_it(floats: list) -> None:
    """Floats alone take the C path's own NaN test (a sum that is NaN, or that overflows or
    meets both infinities and is then checked item by item): the same bytes, NaN marked."""
    for value in (floats, tuple(floats), floats * 3):
        assert canonical.digest(value) == item_by_item(value)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from("ab\u00e9"), st.integers(0, 3 * canonical._FLUSH)), max_size=5
    ),
    st.booleans(),
)
def test_long_strings_are_hashed_in_place_as_the_whole_form_would_be(
    parts: list[tuple[str, int]], as_bytes: bool
) -> None:
    """Strings and bytes past the flush size go to the hash without being copied into the
    form: the digest is the one of the form written whole (no flush before the end)."""
    value = [(c * n).encode() if as_bytes else c * n for c, n in parts]
    value += value[:1]  # a repeated entry is written once, then referred to
    streamed = canonical.digest(value)
    saved = canonical._FLUSH
    canonical._FLUSH = 1 << 62
    try:
        assert canonical.digest(value) == streamed
    finally:
        canonical._FLUSH = saved


def test_equal_numbers_of_every_kind_are_one_number() -> None:
    one = canonical.digest(1)
    for other in (1.0, True, fractions.Fraction(1), decimal.Decimal("1.000"), 1 + 0j):
        assert canonical.digest(other) == one
    assert canonical.digest(-0.0) == canonical.digest(0)
    assert canonical.digest(0.1) != canonical.digest(fractions.Fraction(1, 10))  # 0.1 is not 1/10
    assert canonical.digest(2**53 + 1) != canonical.digest(float(2**53 + 1))
    assert canonical.digest(float("inf")) == canonical.digest(decimal.Decimal("Infinity"))
    assert canonical.digest([1, 2]) != canonical.digest((1, 2))
    assert canonical.digest("a") != canonical.digest(b"a")


def test_a_nan_equals_nothing() -> None:
    nan = float("nan")
    for value in (nan, [1, nan], (complex(1, nan),), decimal.Decimal("NaN")):
        found = canonical.digest(value)
        assert found is not None and found[1] is False
    big = [nan] + list(range(2_000_000))
    sent = through_json(big)
    assert isinstance(sent, codec.Digest) and sent != big and sent != sent


def test_values_with_no_canonical_form_stay_opaque() -> None:
    assert canonical.digest({1: 2}) is None and canonical.digest({1}) is None
    huge = dict.fromkeys(range(2_000_000))
    assert isinstance(through_json(huge), codec.Opaque)
    assert "value too large" in repr(through_json(range(10**8)))


def test_values_over_the_bounds_travel_as_digests_equal_to_them() -> None:
    text = "ab" * 2_500_000  # 5 M characters: over MAX_UNITS
    number = 18 * 10 ** (10**6 - 2)  # HumanEval/83's outputs: 3.3 M bits
    floats = [i / 2 for i in range(1_000_001)]  # /130's: a part more than MAX_NODES
    for value, near in ((text, text[:-1] + "c"), (number, number + 1), (floats, floats[:-1])):
        sent = through_json(value)
        assert isinstance(sent, codec.Digest) and "too large" in repr(sent)
        assert sent == value and value == sent and not sent != value
        assert sent != near and sent == through_json(value) and sent != through_json(near)
    # equal by ==, not by form: ints where the floats are integral (a right answer to /130)
    assert through_json(floats) == [int(x) if x.is_integer() else x for x in floats]


def test_comparing_a_digest_with_a_plain_value_costs_little() -> None:
    """The trusted side digests the plain side of ``==``, in C but for a Python step per
    distinct string: linear, a second or so for the largest value the decoder accepts."""
    sent = through_json(list(range(2_000_000)))
    numbers = through_json(list(range(1_000_000 - 1)))  # just under the bounds: sent whole
    strings = through_json([str(i) for i in range(500_000)])  # 3.4 M units
    assert type(numbers) is list and type(strings) is list
    for plain, seconds in ((numbers, 1.0), (strings, 3.0)):
        started = time.process_time()
        assert sent != plain
        assert time.process_time() - started < seconds


@pytest.mark.parametrize(
    "node",
    [
        ["#", "0" * 63, "", True],  # not a sha256
        ["#", "0" * 64, "", 1],
        ["#", "0" * 64, 5, True],
        ["l", [["#", "0" * 64, "", True]]],  # a digest stands for a whole value only
        ["S", [["#", "0" * 64, "", True]]],
        ["v", "l", [2**61]],  # an int past the vectors' bound
        ["v", "l", [[1]]],
        ["v", "l", [1, "a"]],
        ["v", "d", [1]],
        ["v", "l", {"a": 1}],
        ["S", [["v", "l", [1]]]],  # a list vector is not hashable
        ["vf", "l", "AAAAAAAA8D8", []],  # not base64 of whole float64s
        ["vf", "l", "AAAAAAAA8D8=", [1]],  # an int position past the end
        ["vf", "l", "AAAAAAAA+D8=", [0]],  # 1.5 where an int is said to be
        ["vf", "l", "AAAAAAAA8D8=", [0, 0]],
        ["vf", "l", "AAAAAAAA8D8=", ["0"]],
        ["vf", "d", "AAAAAAAA8D8=", []],
    ],
)
def test_forged_digest_and_vector_nodes_are_channel_errors(node: list[Any]) -> None:
    with pytest.raises(codec.ChannelError):
        codec.decode_value(node)


def test_vectors_keep_types_and_count_as_their_items() -> None:
    for value in ([1, 2.5, None, True, -0.0], (1, "x"), ("a", "b"), [float("inf")], [2**61, 1]):
        back = through_json(value)
        assert back == value and type(back) is type(value)
        assert [type(x) for x in back] == [type(x) for x in value]
    assert codec.encode_value([1, 2])[0] == "v" and codec.encode_value([2**61])[0] == "l"
    assert codec.encode_value((1, "a"))[0] == "t"  # mixed: item by item
    assert through_json({(1, 2): 3}) == {(1, 2): 3}  # a tuple vector is a dict key
    with pytest.raises(codec.TooLarge):  # as many parts as the items one by one
        codec.decode_value(["v", "l", [0] * codec.MAX_NODES])
    with pytest.raises(codec.TooLarge):
        codec.decode_value(["v", "l", ["x" * 1000] * 5000])  # units, as strings one by one
    # long lists of floats (with few ints) travel as float64s, exactly, signs and NaNs kept
    floats = [1, 3] + [i / 7 for i in range(1000)] + [-0.0, float("inf"), float("nan")]
    sent = codec.encode_value(floats)
    assert sent[0] == "vf" and sent[3] == [0, 1]
    back = through_json(floats)
    assert [type(x) for x in back] == [type(x) for x in floats]
    assert back[:-1] == floats[:-1] and math.isnan(back[-1])
    assert math.copysign(1, back[-3]) == -1
    assert codec.encode_value([1, 2.5] * 100)[0] == "v"  # half ints: JSON
    with pytest.raises(codec.TooLarge):
        codec.decode_value(["vf", "l", "A" * 12_000_000, []])


def test_float64s_travel_little_endian_on_any_host(monkeypatch: pytest.MonkeyPatch) -> None:
    numbers = [i / 7 for i in range(100)] + [-0.0, float("inf")]
    little = struct.pack(f"<{len(numbers)}d", *numbers)
    sent = codec.encode_value(numbers)
    assert sent[0] == "vf" and base64.b64decode(sent[2]) == little
    # A big-endian host, played on this one: the bytes that travel are a swapped copy, and the
    # array the caller holds (which canonical.py goes on reading) keeps the host's order.
    monkeypatch.setattr(wire, "_BIG_ENDIAN", True)
    values = array.array("d", numbers)
    host = values.tobytes()
    swapped = wire.float64_bytes(values)
    assert values.tobytes() == host
    assert swapped == b"".join(host[i : i + 8][::-1] for i in range(0, len(host), 8))
    assert wire.float64s(swapped) == values


@pytest.fixture(scope="module")
def sandbox() -> Any:
    with Sandbox(SandboxSettings(memory_mb=2048)) as box:
        yield box


PROGRAM = """
import itertools
def string_sequence(n):
    return " ".join(map(str, range(n + 1)))
def tri(n):
    ans = [1, 3]
    for i in range(2, n + 1):
        ans.append(1 + i / 2 if i % 2 == 0 else ans[-1] + ans[-2] + 1 + (i + 1) / 2)
    return ans
def rows(n):
    return list(itertools.combinations_with_replacement(["Dog", "Cat", "Bird", "Fish"], n))
"""


def test_evalplus_sized_outputs_come_back_as_digests_equal_to_them(sandbox: Sandbox) -> None:
    calls = {
        "str": "string_sequence(1_000_000)",
        "int": "18 * 10 ** (10**6 - 2)",
        "floats": "tri(1_000_000)",
        "rows": "rows(60)",  # 39,711 tuples of 60 strings: 2.4 M units
        "small": "tri(3)",
    }
    cases = tuple(CaseRequest(k, "compare", calls=(c,), timeout_s=30.0) for k, c in calls.items())
    result = sandbox.run(SampleRequest(PROGRAM, "tri", cases))
    scope: dict[str, Any] = {}
    exec(PROGRAM, scope)  # noqa: S102 - the test's own program, for the values expected
    for name, call in calls.items():
        case = result.cases[name]
        assert case.status == "ok", (name, case.message)
        (value,) = case.values
        assert isinstance(value, codec.Digest) == (name != "small"), (name, value)
        expected = eval(call, scope)  # noqa: S307
        assert value == expected, name
        near = expected + 1 if name == "int" else expected[:-1]
        assert value != near, name
