"""Hypothesis strategies for a problem's inputs, and a deterministic draw of examples.

Hypothesis generates what hand-written checks rarely hold (empty and one-element containers,
zeros, boundary values, repeated elements) because its generation is biased towards small and
special values; :func:`draw` runs it with a fixed seed and no example database, so the same seed
gives the same inputs on every machine with the same hypothesis version.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import HypothesisWarning

from harness.plus.domains import (
    BoolDomain,
    DictDomain,
    Domain,
    FloatDomain,
    IntDomain,
    ListDomain,
    NoneDomain,
    TextDomain,
    TupleDomain,
    UnionDomain,
)


def strategy(domain: Domain) -> st.SearchStrategy[Any]:
    """The strategy that draws values of ``domain``."""
    if isinstance(domain, NoneDomain):
        return st.none()
    if isinstance(domain, BoolDomain):
        return st.booleans()
    if isinstance(domain, IntDomain):
        return st.integers(domain.lo, domain.hi)
    if isinstance(domain, FloatDomain):
        exact = st.floats(domain.lo, domain.hi, allow_nan=False, allow_infinity=False).map(
            lambda x: float(f"{x:.6g}")  # six significant digits: readable, still "any" float
        )
        # Round values as people write them, mixed with hypothesis's own floats.
        tidy = st.integers(int(domain.lo * 10), int(domain.hi * 10)).map(lambda i: i / 10)
        return st.one_of(tidy, exact).filter(domain.contains)
    if isinstance(domain, TextDomain):
        return st.text(alphabet=domain.alphabet, min_size=domain.min_len, max_size=domain.max_len)
    if isinstance(domain, ListDomain):
        element = strategy(domain.element)
        if domain.kind == "set":
            return st.sets(element, min_size=domain.min_len, max_size=domain.max_len)
        values = st.lists(
            element,
            min_size=domain.min_len,
            max_size=domain.max_len,
            unique_by=repr if domain.unique else None,  # elements may be unhashable
        )
        return values.map(_sorted_if_possible) if domain.sorted else values
    if isinstance(domain, TupleDomain):
        return st.tuples(*(strategy(d) for d in domain.items))
    if isinstance(domain, DictDomain):
        return st.dictionaries(
            strategy(domain.key), strategy(domain.value), max_size=domain.max_len
        )
    if isinstance(domain, UnionDomain):
        return st.one_of(*(strategy(d) for d in domain.options))
    raise TypeError(f"no strategy for {domain!r}")


def _sorted_if_possible(values: list[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:
        return values


def draw(domains: Sequence[Domain], count: int, seed: int) -> list[tuple[Any, ...]]:
    """Up to ``count`` argument tuples drawn from ``domains``, the same for the same seed."""
    arguments = st.tuples(*(strategy(d) for d in domains))
    drawn: list[tuple[Any, ...]] = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(arguments)
    def collect(args: tuple[Any, ...]) -> None:
        drawn.append(args)

    with warnings.catch_warnings():
        # Generation may run while pytest configures (the plugin prepares the suite then).
        warnings.simplefilter("ignore", HypothesisWarning)
        try:
            collect()
        except Exception:  # noqa: BLE001 - a strategy that cannot draw gives fewer inputs
            pass
    return drawn
