"""harness.jsonlines.loads: orjson's speed, json's values, for any text."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import jsonlines
from harness.jsonlines import loads

# Every kind of value json writes, with those orjson reads differently or not at all: integers
# past 64 bits, NaN and the infinities, lone surrogates, negative zero; and floats whose long
# fractions look like long integers to a careless check.
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63 - 5, max_value=2**70)
    | st.integers(min_value=-(2**70), max_value=-(2**63) + 5)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.floats(min_value=1e-4, max_value=1e-2)  # 19-20 digits after the dot, as durations have
    | st.text()
    | st.sampled_from(["\ud800", "a\udfff", "-0.0", "é☃"])
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _same(a: object, b: object) -> bool:
    """Equal values of equal types all the way down (NaN equal to NaN, -0.0 apart from 0.0)."""
    return json.dumps(a) == json.dumps(b)


@given(_values, st.booleans(), st.booleans())
def test_loads_gives_json_s_value_for_any_text_json_writes(value, ascii_only, as_bytes):
    text = json.dumps(value, ensure_ascii=ascii_only)
    data = text.encode("utf-8", "surrogatepass") if as_bytes else text
    if as_bytes and not ascii_only and any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        return  # not UTF-8: json cannot read these bytes either
    assert _same(loads(data), json.loads(data))


@given(st.text(max_size=30))
def test_loads_refuses_what_json_refuses_with_json_s_error(text):
    try:
        expected = json.loads(text)
    except json.JSONDecodeError:
        with pytest.raises(json.JSONDecodeError):
            loads(text)
    except RecursionError:
        pass
    else:
        assert _same(loads(text), expected)


def test_nesting_json_reads_is_read_alike():
    text = "[" * 500 + '{"a": -0.0}' + "]" * 500
    assert _same(loads(text), json.loads(text))


@pytest.mark.parametrize(
    "text",
    [str(2**64), f"[{-(2**63) - 1}]", f'{{"a": {2**70}}}', f" {10**30}", f"[0.5,{2**64}]"],
)
def test_an_integer_past_64_bits_stays_exact(text):
    assert _same(loads(text), json.loads(text))
    assert _same(loads(text.encode()), json.loads(text))


def test_without_orjson_json_parses_alone():
    # A platform without orjson's wheel: the module imports, and every value is json's.
    code = (
        "import sys; sys.modules['orjson'] = None\n"
        "from harness import jsonlines\n"
        "assert jsonlines.orjson is None\n"
        f"assert jsonlines.loads({_TEXT!r}) == {json.loads(_TEXT)!r}\n"
        "print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr


_TEXT = '{"a": [1, 2.5, "x", null, true], "big": 123456789012345678901}'


def test_the_fast_parser_is_installed():
    # A declared dependency: without it every row would still parse, 2-3x slower.
    assert jsonlines.orjson is not None
