"""The messages of failed oracle cases: each names the two values, shortened at a bounded cost."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.oracles import _BRIEF, _short_repr, brief


@settings(max_examples=600, deadline=None)
@given(
    st.integers()
    | st.integers(min_value=-(10**70), max_value=10**70)
    | st.floats()
    | st.booleans()
    | st.none()
    | st.text(max_size=200)
    | st.text(alphabet="\x00\x01'\"\\\u00e9", max_size=200)
)
def test_a_failed_cases_message_names_a_short_value_as_reprlib_would(value: Any) -> None:
    """Half a million failed inputs name their values (every input of HumanEval+ judged): a
    number or short string takes ``repr`` alone, to the same text as the shortened repr."""
    short = _short_repr(value)
    assert short is None or short == _BRIEF.repr(value)
    assert brief(value) == (lambda t: t if len(t) <= 120 else t[:117] + "...")(_BRIEF.repr(value))
