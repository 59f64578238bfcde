"""Values built to be expensive in the trusted process fail fast, and every sample keeps its row.

The candidate runs in the sandbox, but its values are decoded and compared here: a Fraction
whose normalization runs gcd on megabit ints, keys that all hash alike, a range or an empty
array whose iteration never ends, an int that explodes under ``**``. Each must be the
candidate's failure ("value too large: ..." or a check over its budget), quickly, in real
pytest sessions (``-n 0`` and ``-n 2``), beside honest samples with big honest values that
still pass. The problems are a registered suite's (its checks run in the trusted process; a
data set's would run confined, harness.pipeline.data_tests). The decoder's bounds are also checked
directly, with hypothesis.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.sandbox.channel import codec

P = sys.hash_info.modulus  # ints that differ by a multiple of it hash alike

SEQ_TEST = (
    "def check(candidate):\n"
    "    assert candidate(3) == [0, 1, 2]\n"
    "    assert sorted(candidate(4)) == [0, 1, 2, 3]\n"
    "    assert len(set(candidate(5))) == 5\n"
    "    assert list(candidate(2)) * 2 == [0, 1, 0, 1]\n"
    "    assert str(candidate(1)) == '[0]'\n"
)
NUM_TEST = (
    "def check(candidate):\n"
    "    assert candidate(2) == 2\n"
    "    assert str(candidate(3)) == '3'\n"
    "    assert candidate(2) ** 3 == 8\n"
    "    assert int(candidate(5)) == 5\n"
    "    assert 2 ** candidate(4) == 16\n"
    "    assert len([0] * candidate(3)) == 3\n"
)
BIG_TEST = (
    "def check(candidate):\n"
    f"    assert candidate(200) == {math.factorial(200)}\n"
    "    assert candidate(100000) == list(range(100000))\n"
    "    assert len(set(candidate(100000))) == 100000\n"
    "    assert sorted(candidate(-1), key=len) == [(), (1,), (1, 2)]\n"
)
PROBLEMS = [
    {
        "task_id": "hostile/seq",
        "prompt": 'def seq(n):\n    """The list 0, 1, ..., n - 1."""\n',
        "entry_point": "seq",
        "canonical_solution": "    return list(range(n))\n",
        "test": SEQ_TEST,
    },
    {
        "task_id": "hostile/num",
        "prompt": 'def num(n):\n    """n itself."""\n',
        "entry_point": "num",
        "canonical_solution": "    return n\n",
        "test": NUM_TEST,
    },
    {
        "task_id": "hostile/big",
        "prompt": 'import math\n\ndef big(n):\n    """n!, or 0..n-1 for n > 1000, or tuples."""\n',
        "entry_point": "big",
        "canonical_solution": "    if n < 0:\n        return [(1, 2), (), (1,)]\n"
        "    return math.factorial(n) if n <= 1000 else list(range(n))\n",
        "test": BIG_TEST,
    },
]

# Hash-alike keys built cheaply in the sandbox: a subclass with its own (distinct) hash there,
# which the value channel sends as the plain type, whose hashes collide here.
_DISTINCT_HASH = (
    "import collections, fractions, decimal\n"
    "P = 2**61 - 1\n"
    "class K(int):\n    __hash__ = object.__hash__\n"
    "class C(complex):\n    __hash__ = object.__hash__\n"
    "class T(tuple):\n    __hash__ = object.__hash__\n"
    "def keys(n=4000):\n    return [K(i * P) for i in range(1, n + 1)]\n"
)


def _seq(body: str, setup: str = "") -> tuple[str, str]:
    return "hostile/seq", f"{_DISTINCT_HASH}{setup}def seq(n):\n{body}"


def _num(body: str, setup: str = "") -> tuple[str, str]:
    return "hostile/num", f"import fractions, decimal\n{setup}def num(n):\n{body}"


# name -> (task, program, a substring of some failed case's message)
ATTACKS: dict[str, tuple[str, str, str]] = {
    "fraction_megabit": (
        *_num(
            "    f = fractions.Fraction.__new__(fractions.Fraction)\n"  # not normalized there
            "    f._numerator, f._denominator = 3 ** 400_000, 2 ** 600_000 + 1\n"
            "    return f\n"
        ),
        "value too large",
    ),
    "int_huge": (*_num("    return 1 << (1 << 22)\n"), "value too large"),
    "int_many_big": (*_num("    return [(1 << 100_000) + i for i in range(340)]\n"), "too large"),
    # Cheap to decode, explosive under the check's expression (2 ** v): the check's budget.
    "pow_exponent_big": (*_num("    return 1 << 100_000\n"), "ran past its budget"),
    "pow_exponent": (*_num("    return 10**9\n"), "ran past its budget"),
    "alloc_explodes": (*_num("    return 3 * 10**8 if n == 3 else n\n"), "MemoryError"),
    "decimal_exponent": (*_num("    return decimal.Decimal('1e999999999')\n"), "too large"),
    "decimal_digits": (*_num("    return decimal.Decimal('7' * 100_000)\n"), "too large"),
    "dict_keys_collide": (*_seq("    return dict.fromkeys(keys())\n"), "share one hash"),
    "set_complex_collide": (
        *_seq("    return {C(5 - 1000003 * i, i) for i in range(4000)}\n"),
        "share one hash",
    ),
    "frozenset_tuples_collide": (
        *_seq("    return frozenset(T((k,)) for k in keys())\n"),
        "share one hash",
    ),
    "list_ints_collide": (
        *_seq("    return [i * P for i in range(1, 4001)]\n"),
        "share one hash",
    ),
    "counter_collide": (*_seq("    return collections.Counter(keys())\n"), "share one hash"),
    "ordereddict_collide": (
        *_seq("    return collections.OrderedDict.fromkeys(keys())\n"),
        "share one hash",
    ),
    "defaultdict_collide": (
        *_seq("    return collections.defaultdict(int, dict.fromkeys(keys(), 1))\n"),
        "share one hash",
    ),
    "keys_view_collide": (*_seq("    return dict.fromkeys(keys()).keys()\n"), "share one hash"),
    "deque_collide": (
        *_seq("    return collections.deque(i * P for i in range(1, 4001))\n"),
        "share one hash",
    ),
    "generator_collide": (
        *_seq("    return (i * P for i in range(1, 4001))\n"),
        "share one hash",
    ),
    "fractions_collide": (
        *_seq("    return [fractions.Fraction(i * P + 1, 1) for i in range(1, 4001)]\n"),
        "share one hash",
    ),
    "range_huge": (*_seq("    return range(10**8)\n"), "value too large"),
    "range_collide": (*_seq("    return range(P, 4000 * P, P)\n"), "share one hash"),
    "string_huge": (*_seq("    return 'ab' * 2_500_000\n"), "value too large"),
    "bytes_huge": (*_seq("    return b'ab' * 2_500_000\n"), "value too large"),
    "ndarray_empty_axes": (
        *_seq("    return numpy.empty((2**40, 0))\n", "import numpy\n"),
        "value too large",
    ),
    "ndarray_object_collide": (
        *_seq(
            "    return numpy.array([i * P for i in range(1, 4001)], dtype=object)\n",
            "import numpy\n",
        ),
        "share one hash",
    ),
}
HONEST = {
    "seq_honest": ("hostile/seq", "    return list(range(n))\n"),
    "num_honest": ("hostile/num", "    return n\n"),
    "big_honest": (
        "hostile/big",
        "    if n < 0:\n        return [(1, 2), (), (1,)]\n"
        "    return math.factorial(n) if n <= 1000 else list(range(n))\n",
    ),
}
TRUSTED_SECONDS = 10.0  # the most one sample item may take (sandbox time included)
SUITE = "hostile"


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(
    pytester: pytest.Pytester, samples: list[dict], workers: str, *extra: str
) -> tuple[pytest.RunResult, Path]:
    # A registered suite (trusted tests, as a benchmark's), through a conftest of the session.
    pytester.makeconftest(
        "import json\n"
        "from suites import register_suite\n"
        "from suites.humaneval import problem_from_record\n"
        f"ROWS = json.loads({json.dumps(PROBLEMS)!r})\n"
        f"register_suite({SUITE!r}, lambda: [problem_from_record(r, {SUITE!r}) for r in ROWS])\n"
    )
    sample_file = _write(pytester.path / "samples.jsonl", samples)
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess(
        "--llm-eval", SUITE, "--llm-samples", str(sample_file), "--llm-out", str(out),
        "--llm-timeout", "5", "-n", workers, "-p", "no:codeeval_gate", "-p", "no:cacheprovider",
        "-q", f"--junitxml={pytester.path / 'junit.xml'}", *extra,
        timeout=240,
    )  # fmt: skip
    return result, out


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _item_seconds(junit: Path) -> dict[str, float]:
    root = ElementTree.parse(junit).getroot()
    return {case.get("name", ""): float(case.get("time", 0)) for case in root.iter("testcase")}


@pytest.mark.slow  # whole sessions of hostile samples
@pytest.mark.parametrize("workers", ["0", "2"])
def test_hostile_values_fail_fast_and_every_sample_has_a_row(
    pytester: pytest.Pytester, workers: str
) -> None:
    samples = [
        {"task_id": task, "sample_id": name, "completion": program}
        for name, (task, program, _) in ATTACKS.items()
    ]
    samples += [
        {"task_id": task, "sample_id": name, "completion": body}
        for name, (task, body) in HONEST.items()
    ]
    started = time.monotonic()
    result, out = _run(pytester, samples, workers)
    elapsed = time.monotonic() - started
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    rows = _rows(out)
    by_id = {row["sample_id"]: row for row in rows}
    assert len(rows) == len(samples) == len(by_id)
    for name in HONEST:
        assert by_id[name]["status"] == "passed", by_id[name]["cases"]
    for name, (_, _, expected) in ATTACKS.items():
        row = by_id[name]
        assert row["status"] == "failed", (name, row["status"], row["cases"])
        messages = [case["message"] for case in row["cases"]]
        assert any(expected in m for m in messages), (name, messages)
    summary = json.loads((out / "summary.json").read_text())
    entry = summary["suites"][SUITE]
    assert entry["samples"] == len(samples)
    assert entry["passed"] + entry["failed"] + entry["timeout"] + entry["errors"] == len(samples)
    assert (entry["passed"], entry["failed"]) == (len(HONEST), len(ATTACKS))
    slow = {k: v for k, v in _item_seconds(pytester.path / "junit.xml").items() if v > 10}
    assert slow == {}, slow
    assert elapsed < 180, elapsed


# -- the decoder's bounds, directly -------------------------------------------------------------


def _wire(value: object) -> object:
    return json.loads(json.dumps(codec.encode_value(value)))


def _decode_seconds(data: object) -> tuple[float, object]:
    """CPU seconds (the machine may be busy with other work) and the decoded value or error."""
    started = time.process_time()
    try:
        value: object = codec.decode_value(data)
    except codec.ChannelError as exc:
        value = exc
    return time.process_time() - started, value


_scalars = st.one_of(
    st.integers(min_value=-(1 << 4000), max_value=1 << 4000),
    st.floats(allow_nan=False),
    st.text(max_size=50),
    st.binary(max_size=50),
    st.fractions(),
    st.decimals(allow_nan=False, places=None).filter(lambda d: abs(d.adjusted()) < 10_000),
    st.complex_numbers(allow_nan=False),
    st.none(),
    st.booleans(),
)
_hashables = st.recursive(_scalars, lambda inner: st.tuples(inner, inner), max_leaves=8)
_values = st.recursive(
    _hashables,
    lambda inner: st.one_of(
        st.lists(inner, max_size=8),
        st.dictionaries(_hashables, inner, max_size=8),
        st.frozensets(_hashables, max_size=8),
        st.sets(_hashables, max_size=8),
    ),
    max_leaves=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_values)
def test_honest_values_within_bounds_round_trip(value: object) -> None:
    assert codec.decode_value(_wire(value)) == value


def test_honest_big_values_round_trip() -> None:
    for value in (
        math.factorial(200),
        math.factorial(10_000),
        list(range(100_000)),
        [-1, -2] * 50_000,  # the two small ints that share a hash, many times
        {i: str(i) for i in range(100_000)},
        "x" * 1_000_000,
        [(i, -i) for i in range(50_000)],
    ):
        seconds, decoded = _decode_seconds(_wire(value))
        assert decoded == value
        assert seconds < 3


# Enough distinct multiples of P that a set of them costs over MAX_FLOOD_COST comparisons.
_P_MULTIPLES = st.builds(
    lambda start, count: [(start + i) * P for i in range(count)],
    st.integers(1, 1 << 40),
    st.integers(1500, 6000),
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["l", "S", "F", "d", "q", "t", "K", "C"]),
    wrap=st.sampled_from(["int", "tuple", "pair", "complex", "fraction"]),
    multiples=_P_MULTIPLES,
)
def test_hash_floods_of_any_shape_are_refused_fast(kind: str, wrap: str, multiples: list) -> None:
    def part(m: int) -> list:
        return {
            "int": ["i", format(m, "x")],
            "tuple": ["t", [["i", format(m, "x")]]],
            "pair": ["t", [["s", "k"], ["i", format(m, "x")]]],
            "complex": ["c", "0x0p+0", "0x0p+0"],  # replaced below
            "fraction": ["Q", format(m + 1, "x"), "1"],
        }[wrap]

    parts = [part(m) for m in multiples]
    if wrap == "complex":  # real + 1000003 * imag is the hash: keep it, vary the parts
        parts = [
            ["c", float.hex(5.0 - 1000003 * i), float.hex(float(i))] for i in range(len(parts))
        ]
    data: list = {
        "d": ["d", [[p, ["n"]] for p in parts]],
        "C": ["C", [[p, ["i", "1"]] for p in parts]],
        "q": ["q", parts, None],
    }.get(kind, [kind, parts])
    seconds, decoded = _decode_seconds(data)
    assert isinstance(decoded, codec.TooLarge), (kind, wrap, type(decoded))
    assert "share one hash" in str(decoded)
    assert seconds < 2


@settings(max_examples=40, deadline=None)
@given(
    bits=st.integers(codec.MAX_INT_BITS + 8, 1 << 24),
    where=st.sampled_from(["int", "fraction", "range", "deque", "timedelta", "nested"]),
)
def test_huge_ints_anywhere_are_refused_fast(bits: int, where: str) -> None:
    big = format((1 << bits) - 12345, "x")
    data = {
        "int": ["i", big],
        "fraction": ["Q", big, format((1 << bits) + 1, "x")],
        "range": ["r", "0", big, "1"],
        "deque": ["q", [], big],
        "timedelta": ["timedelta", big, "0", "0"],
        "nested": ["l", [["t", [["d", [[["i", "1"], ["i", big]]]]]]]],
    }[where]
    seconds, decoded = _decode_seconds(data)
    assert isinstance(decoded, codec.TooLarge), (where, decoded)
    assert seconds < 1


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(["r", "0", format(10**9, "x"), "1"], id="range"),
        pytest.param(["s", "x" * (codec.MAX_UNITS + 1)], id="string"),
        pytest.param(["l", [["s", "x" * 1000]] * 5000], id="strings"),
        pytest.param(["nd", "<f8", [1 << 40, 0], []], id="empty-array-axes"),
        pytest.param(["D", "1e999999999"], id="decimal-exponent"),
        pytest.param(["D", "9" * 20_000], id="decimal-digits"),
        pytest.param(
            ["l", [["i", format((1 << 100_000) + i, "x")] for i in range(340)]], id="bits"
        ),
        pytest.param(["S", [["r", "0", "5", format(P, "x")]]], id="range-ok"),
    ],
)
def test_bounds_on_size(data: list) -> None:
    seconds, decoded = _decode_seconds(data)
    assert seconds < 1
    if data[0] == "S":  # a range of small size passes
        assert not isinstance(decoded, Exception)
        return
    assert isinstance(decoded, codec.TooLarge), decoded
    assert str(decoded).startswith("value too large: ")


def _nested(depth: int) -> list:
    node: list = ["l", []]
    for _ in range(depth):
        node = ["l", [node]]
    return node


def test_depth_is_bounded() -> None:
    assert codec.decode_value(_nested(codec.MAX_DEPTH)) is not None
    seconds, decoded = _decode_seconds(_nested(codec.MAX_DEPTH + 10))
    assert isinstance(decoded, codec.TooLarge) and seconds < 1


@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        st.one_of(
            st.builds(lambda b: ["i", format(b, "x")], st.integers(0, 1 << 2000)),
            st.builds(lambda n: ["s", "x" * n], st.integers(0, 10_000)),
            st.builds(
                lambda a, b: ["r", format(a, "x"), format(b, "x"), "1"],
                st.integers(0, 10**6),
                st.integers(0, 10**7),
            ),
        ),
        lambda inner: st.one_of(
            st.builds(lambda xs: ["l", xs], st.lists(inner, max_size=5)),
            st.builds(
                lambda xs, n: ["l", xs * n], st.lists(inner, max_size=3), st.integers(1, 3000)
            ),
            st.builds(lambda xs: ["t", xs], st.lists(inner, max_size=5)),
        ),
        max_leaves=20,
    )
)
def test_anything_accepted_decodes_quickly_and_stays_cheap(data: list) -> None:
    seconds, decoded = _decode_seconds(data)
    assert seconds < 2
    if isinstance(decoded, Exception):
        assert isinstance(decoded, codec.TooLarge)
        return
    started = time.process_time()  # what a check may do with it, in C: cheap too
    str(decoded)
    if isinstance(decoded, (list, tuple)):
        sorted(map(str, decoded))
        list(decoded) * 2
    assert time.process_time() - started < 3


def _tuple_hash_collisions(count: int) -> list[tuple[int, int]]:
    """Pairs of ints whose 2-tuples share one hash: CPython's xxHash-style tuple hash solved
    for the second item (64-bit lanes; an int's hash is itself below 2**61 - 1)."""
    mask, x1, x2, x5 = (
        (1 << 64) - 1,
        11400714785074694791,
        14029467366897019727,
        2870177450012600261,
    )

    def rotl(x: int) -> int:
        return ((x << 31) | (x >> 33)) & mask

    target = ((12345 >> 31) | (12345 << 33)) & mask  # the first lane's sum before rotating
    inverse = pow(x2, -1, 1 << 64)
    pairs: list[tuple[int, int]] = []
    a = 0
    while len(pairs) < count:
        a += 1
        lane = ((target - (rotl((x5 + a * x2) & mask) * x1 & mask)) * inverse) & mask
        b = lane - (1 << 64) if lane >> 63 else lane
        if -P < b < -1 or 0 <= b < P:
            pairs.append((a, b))
    return pairs


@pytest.mark.parametrize("inner", ["t", "l"])  # tuples, or lists a check makes tuples of
def test_crafted_tuple_hash_collisions_are_refused(inner: str) -> None:
    pairs = _tuple_hash_collisions(2000)
    assert len({hash(pair) for pair in pairs}) == 1
    data = ["l", [[inner, [["i", format(x, "x")] for x in pair]] for pair in pairs]]
    seconds, decoded = _decode_seconds(data)
    assert isinstance(decoded, codec.TooLarge) and "share one hash" in str(decoded)
    assert seconds < 2
