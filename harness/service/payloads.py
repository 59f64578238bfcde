"""Request bodies in, items out: every shape check names the field it rejects.

``POST /v1/score`` takes ``{"items": [ITEM, ...], "deadline_s": 30}``; an ITEM is what
:meth:`harness.rewardapi.engine.RewardEngine.score` takes: ``{"completion", "task_id",
"suite"?}`` or ``{"completion", "problem": {"prompt", "tests", "entry_point", "language",
"reference"}}``. ``POST /get_reward`` takes OpenRLHF's ``--remote_rm_url`` body
(:func:`openrlhf_items`). Here: the shape of the body and the sizes; the items' own fields
are checked by the engine (:func:`harness.rewardapi.items.check_items`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any


class BadInput(Exception):
    """A request the server rejects before queueing it: HTTP ``status``, the ``field``."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.status = status
        self.field = field
        self.message = message

    def body(self) -> dict[str, Any]:
        return {"error": "bad_input", "field": self.field, "message": self.message}


@dataclass(frozen=True)
class Limits:
    """What one request may carry."""

    max_body_bytes: int = 8 * 1024 * 1024
    max_items: int = 1024
    max_completion_chars: int = 200_000
    max_deadline_s: float = 3600.0


def decode_json(raw: bytes) -> Any:
    """The body as JSON; a 400 naming ``body`` (with line and column) when it is not."""
    try:
        return json.loads(raw)
    except UnicodeDecodeError as exc:
        raise BadInput(400, "body", f"not UTF-8 text: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BadInput(
            400, "body", f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise BadInput(400, "body", "JSON nested too deeply") from None


def _mapping(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadInput(422, field, f"must be a JSON object, got {type(value).__name__}")
    return value


def _string(value: Any, field: str, limit: int | None = None) -> str:
    if not isinstance(value, str):
        raise BadInput(422, field, f"must be a string, got {type(value).__name__}")
    if limit is not None and len(value) > limit:
        raise BadInput(413, field, f"has {len(value)} characters; at most {limit}")
    return value


def check_item(item: Any, field: str, limits: Limits) -> dict[str, Any]:
    """One item within the size limits. Its fields (missing, wrong types, unknown task ids,
    inline problems) are the engine's to check: the server runs the engine's own checks on
    every request before queueing it, so the field names are the same everywhere."""
    item = _mapping(item, field)
    texts = [("completion", item.get("completion"))]
    if isinstance(item.get("problem"), dict):
        texts += [(f"problem.{k}", v) for k, v in item["problem"].items()]
    for name, value in texts:
        if isinstance(value, str) and len(value) > limits.max_completion_chars:
            raise BadInput(
                413,
                f"{field}.{name}",
                f"has {len(value)} characters; at most {limits.max_completion_chars}",
            )
    return item


def check_deadline(value: Any, limits: Limits) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadInput(422, "deadline_s", f"must be a number of seconds, got {value!r}")
    if not 0 < value <= limits.max_deadline_s:
        raise BadInput(422, "deadline_s", f"must be in (0, {limits.max_deadline_s}], got {value}")
    return float(value)


def score_request(body: Any, limits: Limits) -> tuple[list[dict[str, Any]], float | None]:
    """``(items, deadline_s)`` of a ``/v1/score`` body."""
    body = _mapping(body, "body")
    if "items" not in body:
        raise BadInput(422, "items", 'missing: the body is {"items": [...]}')
    items = body["items"]
    if not isinstance(items, list):
        raise BadInput(422, "items", f"must be a list, got {type(items).__name__}")
    if not items:
        raise BadInput(422, "items", "is empty")
    if len(items) > limits.max_items:
        raise BadInput(413, "items", f"has {len(items)} items; at most {limits.max_items}")
    checked = [check_item(item, f"items[{i}]", limits) for i, item in enumerate(items)]
    return checked, check_deadline(body.get("deadline_s"), limits)


def openrlhf_items(body: Any, limits: Limits, suite: str | None) -> list[dict[str, Any]]:
    """Items of OpenRLHF's ``remote_rm_fn`` body ``{"query": [...], "prompts": [...],
    "labels": [...]}``.

    ``query[i]`` is prompt + response; the completion is the response (``query[i]`` less its
    ``prompts[i]`` prefix). ``labels[i]`` (``--label_key``) names the problem: a task id, a
    JSON object text, or an object, ``{"task_id", "suite"}`` or ``{"problem": {...}}``.
    ``suite``: the ``?suite=`` of the URL, for bare task ids.
    """
    body = _mapping(body, "body")
    lists = {}
    for name in ("query", "prompts", "labels"):
        if name not in body:
            raise BadInput(422, name, "missing: OpenRLHF posts query, prompts and labels")
        if not isinstance(body[name], list):
            raise BadInput(422, name, f"must be a list, got {type(body[name]).__name__}")
        lists[name] = body[name]
    n = len(lists["query"])
    for name in ("prompts", "labels"):
        if len(lists[name]) != n:
            raise BadInput(422, name, f"has {len(lists[name])} entries for {n} queries")
    if not n:
        raise BadInput(422, "query", "is empty")
    if n > limits.max_items:
        raise BadInput(413, "query", f"has {n} entries; at most {limits.max_items}")
    items = []
    for i, (query, prompt, label) in enumerate(zip(*lists.values(), strict=True)):
        query = _string(query, f"query[{i}]", limits.max_completion_chars)
        prompt = _string(prompt, f"prompts[{i}]")
        item = _label_item(label, f"labels[{i}]", suite)
        item["completion"] = query[len(prompt) :] if query.startswith(prompt) else query
        items.append(check_item(item, f"labels[{i}]", limits))
    return items


def _label_item(label: Any, field: str, suite: str | None) -> dict[str, Any]:
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            label = json.loads(label)
        except json.JSONDecodeError as exc:
            raise BadInput(422, field, f"a JSON object text that does not parse: {exc}") from None
    if isinstance(label, str):
        item: dict[str, Any] = {"task_id": label}
    else:
        item = dict(_mapping(label, field))
    if suite is not None and "problem" not in item:
        item.setdefault("suite", suite)
    return item
