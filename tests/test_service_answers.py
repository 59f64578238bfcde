"""The server's answers, encoded by orjson, read as Starlette's own JSON answers read."""

from __future__ import annotations

import json
import math
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st
from starlette.responses import JSONResponse

from harness.service import answers
from harness.service.answers import Answer

# What a row holds, with what orjson refuses: integers past 64 bits, keys that are not strings.
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63, max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(), inner, max_size=4)
        | st.dictionaries(st.integers(), inner, max_size=3)
    ),
    max_leaves=20,
)


@given(_values)
def test_an_answer_reads_as_starlette_s_answer_reads(value):
    ours, theirs = Answer(value).body, JSONResponse(value).body
    assert json.dumps(json.loads(ours)) == json.dumps(json.loads(theirs))
    assert Answer(value).headers["content-type"] == "application/json"


def test_a_nan_is_sent_as_null_where_starlette_fails_the_request():
    body = {"reward": math.nan, "parts": {"speed": math.inf}}
    assert json.loads(Answer(body).body) == {"reward": None, "parts": {"speed": None}}


def test_without_orjson_starlette_encodes():
    code = (
        "import sys; sys.modules['orjson'] = None\n"
        "from harness.service import answers\n"
        "assert answers.orjson is None\n"
        "print(answers.Answer({'rows': [{'reward': 1.0, 'k': 'é'}]}).body.decode())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == '{"rows":[{"reward":1.0,"k":"é"}]}', done.stderr


def test_the_fast_encoder_is_installed():
    assert answers.orjson is not None


def test_a_lone_surrogate_is_sent_escaped_where_encoders_fail_the_request():
    """A candidate's exception message may hold a lone surrogate: orjson and Starlette both
    refuse it, and the answer (every row of the request) would be an error 500."""
    body = {"rows": [{"error": "ValueError: \ud800!", "reward": math.nan, "big": 2**70}]}
    text = Answer(body).body.decode("utf-8")  # strict: valid UTF-8
    assert json.loads(text) == {
        "rows": [{"error": "ValueError: \\ud800!", "reward": None, "big": 2**70}]
    }


@given(
    st.recursive(
        # lone surrogates (category Cs) among any other character
        st.text(st.characters(categories=["Cs"]) | st.characters()) | st.floats() | st.integers(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    )
)
def test_any_text_makes_a_valid_utf8_answer(value):
    body = Answer({"value": value}).body
    body.decode("utf-8")  # strict: no surrogate escapes into the bytes
    json.loads(body)
