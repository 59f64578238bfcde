"""The checks the trainers' ``__post_init__``s share: each raises :func:`invalid` naming the
field, its value and the rule (``must be >= 1 (got 0)``), so the message says what to do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainers.common.config import invalid


def require(settings: Any, rule: str, test: Callable[[Any], bool], *names: str) -> None:
    """Every field in ``names`` passes ``test``; else ``"<rule> (got <value>)"``."""
    for name in names:
        value = getattr(settings, name)
        if not test(value):
            raise invalid(name, f"{rule} (got {value})")


def at_least_one(settings: Any, *names: str) -> None:
    require(settings, "must be >= 1", lambda v: v >= 1, *names)


def non_negative(settings: Any, *names: str) -> None:
    require(settings, "must be >= 0", lambda v: v >= 0, *names)


def positive(settings: Any, *names: str) -> None:
    require(settings, "must be > 0", lambda v: v > 0, *names)


def in_unit_interval(settings: Any, *names: str) -> None:
    require(settings, "must be in [0, 1]", lambda v: 0 <= v <= 1, *names)


def sampling(settings: Any) -> None:
    """``learning_rate``, ``temperature`` and ``top_p`` of a sampling trainer."""
    positive(settings, "learning_rate", "temperature", "top_p")
    if settings.top_p > 1:
        raise invalid("top_p", f"must be <= 1 (got {settings.top_p})")


def group_size(settings: Any, section: str) -> None:
    """``num_generations``: a group-relative baseline needs two samples at least."""
    if settings.num_generations < 2:
        raise invalid(
            "num_generations",
            f"G={settings.num_generations}: group-relative advantages need G >= 2; "
            f"set {section}.num_generations=2 or more",
        )


def clip_high(settings: Any) -> None:
    """``epsilon_high``, the upper clip range (DAPO's clip-higher)."""
    if settings.epsilon_high <= 0:
        raise invalid("epsilon_high", f"must be > 0 (got {settings.epsilon_high}); DAPO uses 0.28")


def overlong(settings: Any, zero: str) -> None:
    """``overlong_buffer`` within the completion and ``overlong_penalty`` >= 0; ``zero`` says
    what a buffer of 0 means for this trainer."""
    if not 0 <= settings.overlong_buffer < settings.max_new_tokens:
        raise invalid(
            "overlong_buffer",
            f"must be in 0..max_new_tokens-1={settings.max_new_tokens - 1} "
            f"(got {settings.overlong_buffer}); {zero}",
        )
    non_negative(settings, "overlong_penalty")


def eval_ks(settings: Any, section: str) -> None:
    """Each ``eval_k`` within ``1..eval_num_samples``."""
    n = settings.eval_num_samples
    if any(k < 1 or k > n for k in settings.eval_k):
        raise invalid(
            "eval_k",
            f"each k must be in 1..eval_num_samples={n} (got {settings.eval_k}); "
            f"raise {section}.eval_num_samples or lower k",
        )
