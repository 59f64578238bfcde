"""Type-aware mutation of known inputs (as EvalPlus grows its seed inputs).

A benchmark's own inputs are well-formed in ways a type cannot say (a bracket string that
balances, a list of words from the task's vocabulary); small edits of them stay close to that
shape while reaching the boundaries the checks missed: one element more or less, a duplicate,
an empty container, a neighbouring number, a changed character. Every mutant must stay in the
argument's :class:`~harness.plus.domains.Domain`; the random source is a seeded
``random.Random``, so the same seed gives the same inputs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from harness.plus.domains import (
    DictDomain,
    Domain,
    FloatDomain,
    IntDomain,
    ListDomain,
    TextDomain,
    TupleDomain,
    UnionDomain,
)


def mutate_inputs(
    seeds: Sequence[tuple[Any, ...]],
    domains: Sequence[Domain],
    count: int,
    rng: random.Random,
) -> list[tuple[Any, ...]]:
    """Up to ``count`` new argument tuples, each one to three mutations away from a seed."""
    out: list[tuple[Any, ...]] = []
    if not seeds:
        return out
    pool = list(seeds)
    for _ in range(count * 3):
        if len(out) >= count:
            break
        args = list(rng.choice(pool))
        for _ in range(rng.randint(1, 3)):
            position = rng.randrange(len(args))
            if len(args) > 1 and rng.random() < 0.3:
                source = rng.choice([i for i in range(len(args)) if i != position])
                args[position] = relate(args[position], args[source], rng)
            else:
                args[position] = mutate_value(args[position], domains[position], rng)
        candidate = tuple(args)
        if all(d.contains(v) for d, v in zip(domains, candidate, strict=False)):
            out.append(candidate)
            pool.append(candidate)  # mutants of mutants reach further
    return out


def relate(value: Any, other: Any, rng: random.Random) -> Any:
    """``value`` edited to meet another argument: boundaries live where arguments touch.

    A threshold equal to the gap between two elements, a target equal to a pair's sum, a tie
    between two numbers, a string that contains the other argument (twice, or not at its start),
    a list holding the other argument: the inputs where ``<`` and ``<=``, "first" and "all",
    "prefix" and "substring" part ways.
    """
    if type(value) in (int, float):  # not bool: type() is exact
        return _relate_number(value, other, rng)
    if type(value) is str and type(other) is str:
        at = rng.randrange(len(value) + 1)
        times = rng.randint(1, 3)
        return value[:at] + other * times + value[at:]
    if type(value) is list:
        return _relate_list(value, other, rng)
    return value


def _relate_number(value: float, other: Any, rng: random.Random) -> Any:
    """The other number (a tie), or one of a list's numbers, their gap or their sum."""
    if type(other) in (int, float):
        return other
    if type(other) in (list, tuple) and len(other) >= 2:
        items = [x for x in other if type(x) is type(value)]
        if len(items) >= 2:
            a, b = rng.sample(items, 2)
            return rng.choice([a, abs(a - b), a + b, b])
        if items:
            return items[0]
    return value


def _relate_list(value: list[Any], other: Any, rng: random.Random) -> list[Any]:
    """The list sharing the other list's elements, holding the other argument, or with one of
    its strings related to the other string."""
    if type(other) is list and other:
        items = list(value)  # share elements with the other list, maybe more than once
        for _ in range(rng.randint(1, 2)):
            items.insert(rng.randrange(len(items) + 1), rng.choice(other))
        return items
    if value and type(other) is type(value[0]) and not (type(other) is str and rng.random() < 0.5):
        items = list(value)
        items.insert(rng.randrange(len(items) + 1), other)
        return items
    if value and type(value[0]) is str and type(other) is str:  # the other inside one of them
        items = list(value)
        position = rng.randrange(len(items))
        items[position] = relate(items[position], other, rng)
        return items
    return value


def mutate_value(value: Any, domain: Domain, rng: random.Random) -> Any:
    """One small, type-preserving edit of ``value``."""
    if isinstance(domain, UnionDomain):
        owners = [d for d in domain.options if d.contains(value)]
        return mutate_value(value, owners[0], rng) if owners else value
    if type(value) is bool:
        return not value
    if type(value) is int:
        return _mutate_int(value, domain, rng)
    if type(value) is float:
        return _mutate_float(value, domain, rng)
    if type(value) is str:
        return _mutate_text(value, domain, rng)
    if type(value) in (list, set):
        return _mutate_list(value, domain, rng)
    if type(value) is tuple and isinstance(domain, TupleDomain) and value:
        position = rng.randrange(len(value))
        items = list(value)
        items[position] = mutate_value(items[position], domain.items[position], rng)
        return tuple(items)
    if type(value) is dict and isinstance(domain, DictDomain):
        return _mutate_dict(value, domain, rng)
    return value


def _mutate_int(value: int, domain: Domain, rng: random.Random) -> int:
    lo, hi = (domain.lo, domain.hi) if isinstance(domain, IntDomain) else (-(10**6), 10**6)
    options = [value + 1, value - 1, value * 2, value // 2, -value, lo, lo + 1, 0, 1, -1]
    options += [value + rng.randint(-10, 10)]
    valid = [o for o in options if lo <= o <= hi and o != value]
    return rng.choice(valid) if valid else value


def _mutate_float(value: float, domain: Domain, rng: random.Random) -> float:
    lo, hi = (domain.lo, domain.hi) if isinstance(domain, FloatDomain) else (-1e6, 1e6)
    options = [value + 1, value - 1, value * 2, value / 2, -value, 0.0, round(value), value + 0.5]
    valid = [o for o in options if lo <= o <= hi and o != value]
    return rng.choice(valid) if valid else value


def _mutate_text(value: str, domain: Domain, rng: random.Random) -> str:
    alphabet = domain.alphabet if isinstance(domain, TextDomain) else value or "a"
    position = rng.randrange(len(value) + 1)
    char = rng.choice(alphabet)
    options = [
        value[:position] + char + value[position:],  # insert
        value[:position] + value[position + 1 :],  # delete
        value[:position] + char + value[position + 1 :],  # replace
        value[::-1],
        value + value[-1:],  # repeat the last character
        value.upper() if rng.random() < 0.5 else value.lower(),
        value[: len(value) // 2],
        "",
    ]
    if value:
        start = rng.randrange(len(value))
        options.append(value + value[start : start + rng.randint(1, 4)])  # a repeated run
    if " " in value.strip():  # a sentence or a list of words: edit it word by word too
        words = value.split(" ")
        position = rng.randrange(len(words))
        options += [
            " ".join(words[:position] + words[position + 1 :]),
            " ".join(words[: position + 1] + words[position:]),
            " ".join(words[::-1]),
            " ".join(rng.sample(words, len(words))),
        ]
    return rng.choice(options)


def _mutate_list(value: list[Any] | set[Any], domain: Domain, rng: random.Random) -> Any:
    element = domain.element if isinstance(domain, ListDomain) else None
    items = list(value)
    choice = rng.randrange(8)
    if choice == 0 and items:  # drop one
        del items[rng.randrange(len(items))]
    elif choice == 1 and items:  # duplicate one
        items.insert(rng.randrange(len(items) + 1), rng.choice(items))
    elif choice == 2 and items and element is not None:  # change one
        position = rng.randrange(len(items))
        items[position] = mutate_value(items[position], element, rng)
    elif choice == 3 and items and element is not None:  # add a relative of one
        items.insert(rng.randrange(len(items) + 1), mutate_value(rng.choice(items), element, rng))
    elif choice == 4:
        items = items[::-1]
    elif choice == 5:
        items = items[:1]
    elif choice == 6:
        items = []
    elif items:
        rng.shuffle(items)
    if isinstance(domain, ListDomain) and domain.sorted:
        try:
            items.sort()
        except TypeError:
            pass
    return set(items) if type(value) is set else items


def _mutate_dict(value: dict[Any, Any], domain: DictDomain, rng: random.Random) -> dict[Any, Any]:
    items = dict(value)
    if items and rng.random() < 0.4:
        del items[rng.choice(list(items))]
    elif items and rng.random() < 0.6:
        key = rng.choice(list(items))
        items[key] = mutate_value(items[key], domain.value, rng)
    elif items:
        key = mutate_value(rng.choice(list(items)), domain.key, rng)
        try:
            items[key] = rng.choice(list(items.values()))
        except TypeError:
            pass
    else:
        items = {}
    return items


MAX_EDGE_SEEDS = 12
MAX_EDGE_PER_SEED = 48


def edge_inputs(
    seeds: Sequence[tuple[Any, ...]], domains: Sequence[Domain], rng: random.Random
) -> list[tuple[Any, ...]]:
    """Seeds with arguments moved to their edges, together: 0 and 1 for a number, the empty,
    one- and two-item prefix of a string or list (``modp(0, 1)``, one operator with its two
    operands). Bugs sit where two arguments are at an edge at once, which single mutations
    rarely reach."""
    out: list[tuple[Any, ...]] = []
    for args in seeds[:MAX_EDGE_SEEDS]:
        options = [
            [value, *(e for e in _edges(value, domain) if e != value or type(e) is not type(value))]
            for value, domain in zip(args, domains, strict=False)
        ]
        combos = [()]
        for choices in options:
            combos = [(*combo, choice) for combo in combos for choice in choices]
            if len(combos) > 4 * MAX_EDGE_PER_SEED:
                combos = rng.sample(combos, 4 * MAX_EDGE_PER_SEED)
        if len(combos) > MAX_EDGE_PER_SEED:
            combos = rng.sample(combos, MAX_EDGE_PER_SEED)
        out += [
            combo
            for combo in combos
            if all(d.contains(v) for d, v in zip(domains, combo, strict=False))
        ]
    return out


def _edges(value: Any, domain: Domain) -> list[Any]:
    if type(value) is int:
        low = [domain.lo] if isinstance(domain, IntDomain) else []
        return [*low, 0, 1]
    if type(value) is float:
        return [0.0, 1.0]
    if type(value) in (str, list):
        return [value[:0], value[:1], value[:2]]
    return []
