"""Request bodies in, items out: every shape check names the field it rejects.

``POST /v1/score`` takes ``{"items": [ITEM, ...], "deadline_s": 30}``; an ITEM is what
:meth:`harness.rewardapi.engine.RewardEngine.score` takes: ``{"completion", "task_id",
"suite"?}`` or ``{"completion", "problem": {"prompt", "tests", "entry_point", "language",
"reference"}}``. ``POST /get_reward`` takes OpenRLHF's ``--reward.remote_url`` body
(:func:`openrlhf_samples`). Here: the shape of the body and the bounds on what one request
may cost before anything is prepared (its size, its items, its inline problems, the digits of
its integers); the items' own fields are checked by the engine
(:func:`harness.rewardapi.items.check_items`).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.rewardapi.codedata import suite_for, task_id_for
from harness.rewardapi.items import DEFAULT_SUITE
from harness.rewardapi.responses import response_of

# Python refuses to turn longer digit strings into ints (sys.int_info.str_digits_check_threshold
# aside, the default limit is 4300): such a number is refused by name, never an error 500.
MAX_INT_DIGITS = getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 4300


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
    # How long a client may take to send its body: one that trickles it holds a connection
    # (uvicorn answers 503 past --max-connections), so a slow one is cut off with a 408.
    body_timeout_s: float = 60.0
    max_items: int = 1024
    max_completion_chars: int = 200_000
    max_deadline_s: float = 3600.0
    # Inline problems are built (parsed, their checks split, their reference calibrated in
    # the sandbox) before they are judged: a request may carry only so many distinct ones.
    allow_inline: bool = True
    max_inline_problems: int = 32
    max_inline_chars: int = 400_000  # all fields of a request's distinct inline problems


class _HugeInt:
    """An integer literal with more digits than Python converts (found, then refused)."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def _parse_int(text: str) -> int | _HugeInt:
    digits = len(text.lstrip("-"))
    return _HugeInt(digits) if digits > MAX_INT_DIGITS else int(text)


def decode_json(raw: bytes) -> Any:
    """The body as JSON; a 400 naming ``body`` (with line and column) when it is not."""
    try:
        value = json.loads(raw, parse_int=_parse_int)
    except UnicodeDecodeError as exc:
        raise BadInput(400, "body", f"not UTF-8 text: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BadInput(
            400, "body", f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise BadInput(400, "body", "JSON nested too deeply") from None
    except ValueError as exc:  # anything else json refuses: never an error 500
        raise BadInput(400, "body", f"not JSON the server can read: {exc}") from None
    huge = _find_huge_int(value)
    if huge is not None:
        where, digits = huge
        raise BadInput(422, where, f"an integer of {digits} digits; at most {MAX_INT_DIGITS}")
    return value


def _find_huge_int(value: Any) -> tuple[str, int] | None:
    """Where the first over-long integer is (``items[3].completion``), if any."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, _HugeInt):
            return where or "body", node.digits
        if isinstance(node, dict):
            stack.extend((_path(where, str(k)), v) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((f"{where or 'body'}[{i}]", v) for i, v in reversed(list(enumerate(node))))
    return None


def _path(where: str, key: str) -> str:
    if not where:
        return key if key.isidentifier() else f"body[{key!r}]"
    return f"{where}.{key}" if key.isidentifier() else f"{where}[{key!r}]"


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
    """One item within the size limits of its inline problem. Its fields (missing, wrong
    types, unknown task ids, inline problems) are the engine's to check: the server runs the
    engine's own checks on every request before queueing it, so the field names are the same
    everywhere. A completion past the limit is not the client's error but the model's output:
    :func:`overlong` names it, and its row fails (the lowest reward), its batch unharmed."""
    item = _mapping(item, field)
    if isinstance(item.get("problem"), dict):
        for name, value in item["problem"].items():
            if isinstance(value, str) and len(value) > limits.max_completion_chars:
                raise BadInput(
                    413,
                    f"{field}.problem.{name}",
                    f"has {len(value)} characters; at most {limits.max_completion_chars}",
                )
    return item


def overlong(completion: Any, field: str, limits: Limits) -> str:
    """Why ``completion`` is not judged ("" when it is within the size limit)."""
    if isinstance(completion, str) and len(completion) > limits.max_completion_chars:
        return (
            f"{field}: the completion has {len(completion)} characters; at most "
            f"{limits.max_completion_chars}: judged as failing without running"
        )
    return ""


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
    check_inline_bounds(checked, limits, lambda i: f"items[{i}].problem")
    return checked, check_deadline(body.get("deadline_s"), limits)


def check_inline_bounds(
    items: list[dict[str, Any]], limits: Limits, where: Callable[[int], str]
) -> None:
    """Refuse inline problems where they are turned off (403), and more distinct ones, or more
    characters of them, than one request may make the server build (413), before any is built."""
    seen: set[str] = set()
    total = 0
    for i, item in enumerate(items):
        problem = item.get("problem")
        if problem is None:
            continue
        if not limits.allow_inline:
            raise BadInput(
                403,
                where(i),
                "inline problems are turned off on this server (their tests run as trusted "
                "code; it refuses them by default when it listens beyond loopback): name a "
                "registered suite's task_id, or start it with --allow-inline",
            )
        key = json.dumps(problem, sort_keys=True, ensure_ascii=False, default=str)
        if key in seen:
            continue
        seen.add(key)
        total += len(key)
        if len(seen) > limits.max_inline_problems:
            raise BadInput(
                413,
                where(i),
                f"more than {limits.max_inline_problems} distinct inline problems in one "
                "request; send them in several requests",
            )
        if total > limits.max_inline_chars:
            raise BadInput(
                413,
                where(i),
                f"the request's inline problems pass {limits.max_inline_chars} characters",
            )


@dataclass
class OpenRLHFSample:
    """One sample of an OpenRLHF request: its item, or why it cannot be judged (masked)."""

    completion: str
    item: dict[str, Any] | None = None
    reason: str = ""
    suite: str = ""
    task_id: str = ""
    overlong: bool = False  # the model's own doing: failed at the lowest reward, not masked


def openrlhf_samples(body: Any, limits: Limits, suite: str | None) -> list[OpenRLHFSample]:
    """The samples of OpenRLHF's remote reward body ``{"query": [...], "prompts": [...],
    "labels": [...]}`` (its agent path posts one sample per request).

    ``query[i]`` is prompt + response, decoded with the special tokens; the completion is the
    response, its end, pad and turn-marker tokens stripped
    (:func:`harness.rewardapi.responses.response_of`). ``labels[i]`` (the dataset column
    ``--data.label_key`` names) names the problem: a task id, a JSON object text, or an
    object, ``{"task_id", "suite"}`` or ``{"problem": {...}}``. ``suite``: the ``?suite=`` of
    the URL, for bare task ids.

    A malformed request (not OpenRLHF's shape, an empty label: ``--data.label_key`` unset)
    raises :class:`BadInput`; a sample whose label cannot be read is masked with its reason;
    one whose response is over the size limit is ``overlong`` (it fails: a model must not
    escape its score by writing more).
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
    samples = []
    for i, (query, prompt, label) in enumerate(zip(*lists.values(), strict=True)):
        query = _string(query, f"query[{i}]")
        prompt = _string(prompt, f"prompts[{i}]")
        if label is None or (isinstance(label, str) and not label.strip()):
            raise BadInput(
                422,
                f"labels[{i}]",
                "empty: OpenRLHF sends an empty label when --data.label_key is not set; set "
                "--data.label_key to the dataset column that holds the task id (or problem)",
            )
        completion = response_of(query, prompt)
        try:
            item = _label_item(label, f"labels[{i}]", suite)
        except BadInput as exc:
            samples.append(OpenRLHFSample(completion, reason=f"{exc.field}: {exc.message}"))
            continue
        ids = {"suite": str(item.get("suite") or ""), "task_id": str(item.get("task_id") or "")}
        reason = overlong(completion, f"query[{i}]", limits)
        if reason:
            samples.append(OpenRLHFSample(completion, reason=reason, overlong=True, **ids))
            continue
        item["completion"] = completion
        samples.append(
            OpenRLHFSample(completion, item=check_item(item, f"labels[{i}]", limits), **ids)
        )
    items = [sample.item for sample in samples if sample.item is not None]
    positions = [i for i, sample in enumerate(samples) if sample.item is not None]
    check_inline_bounds(items, limits, lambda k: f"labels[{positions[k]}]")
    return samples


def _label_item(label: Any, field: str, suite: str | None) -> dict[str, Any]:
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            label = json.loads(label, parse_int=_parse_int)
        except (ValueError, RecursionError) as exc:
            raise BadInput(422, field, f"a JSON object text that does not parse: {exc}") from None
        if _find_huge_int(label) is not None:
            raise BadInput(422, field, f"holds an integer of more than {MAX_INT_DIGITS} digits")
    if isinstance(label, (str, int)) and not isinstance(label, bool):
        item: dict[str, Any] = {"task_id": str(label).strip()}
    else:
        item = dict(_mapping(label, field))
    if "problem" in item:
        return item
    if suite is not None:
        item.setdefault("suite", suite)
    if isinstance(item.get("suite"), str):  # verl's and the hub's names of HumanEval, MBPP
        item["suite"] = suite_for(item["suite"])
    if isinstance(item.get("task_id"), str):  # a bare number: that suite's task
        item["task_id"] = task_id_for(str(item.get("suite") or DEFAULT_SUITE), item["task_id"])
    return item
