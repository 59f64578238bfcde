"""A Python client of ``codeeval serve`` that retries what is safe to retry.

    client = RewardClient("http://127.0.0.1:8765", token=None)
    rows = client.score([{"completion": code, "task_id": "HumanEval/0"}])

Scoring is idempotent, so a request is sent again after a connection error, a 429 (queue
full) or a 503 (draining, or a restart), waiting what ``Retry-After`` says or, without it,
an exponential backoff with jitter. A 4xx for bad input is never retried: it raises
:class:`ServiceError` naming the field. :class:`AsyncRewardClient` is the same for asyncio.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

RETRIED_STATUSES = (429, 502, 503)


class ServiceError(Exception):
    """The server refused the request (``status``; ``field`` for bad input)."""

    def __init__(self, status: int, body: Any) -> None:
        body = body if isinstance(body, dict) else {"message": str(body)}
        self.status = status
        self.field = body.get("field")
        self.body = body
        where = f" ({self.field})" if self.field else ""
        super().__init__(f"HTTP {status}{where}: {body.get('message') or body.get('error')}")


class _Policy:
    """When to retry and how long to wait."""

    def __init__(self, retries: int, backoff_s: float, max_wait_s: float) -> None:
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_wait_s = max_wait_s

    def wait_s(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            header = response.headers.get("retry-after", "")
            if header.isdigit():
                return min(float(header), self.max_wait_s)
        base = self.backoff_s * (2**attempt)
        return min(base * (0.5 + random.random()), self.max_wait_s)

    @staticmethod
    def body(items: Sequence[Mapping[str, Any]], deadline_s: float | None) -> dict[str, Any]:
        body: dict[str, Any] = {"items": [dict(item) for item in items]}
        if deadline_s is not None:
            body["deadline_s"] = deadline_s
        return body

    @staticmethod
    def rows(response: httpx.Response) -> list[dict[str, Any]]:
        if response.status_code != 200:
            try:
                body = response.json()
            except ValueError:
                body = response.text
            raise ServiceError(response.status_code, body)
        return response.json()["rows"]


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


class RewardClient:
    """Blocking client; one connection pool, safe to share between threads."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        retries: int = 8,
        backoff_s: float = 0.25,
        max_wait_s: float = 30.0,
        timeout_s: float = 600.0,
    ) -> None:
        self.url = url.rstrip("/")
        self.policy = _Policy(retries, backoff_s, max_wait_s)
        self.http = httpx.Client(timeout=timeout_s, headers=_headers(token))

    def score(
        self, items: Sequence[Mapping[str, Any]], deadline_s: float | None = None
    ) -> list[dict[str, Any]]:
        """One row per item, in order (see ``POST /v1/score``)."""
        body = self.policy.body(items, deadline_s)
        for attempt in range(self.policy.retries + 1):
            last = attempt == self.policy.retries
            try:
                response = self.http.post(f"{self.url}/v1/score", json=body)
            except httpx.TransportError:
                if last:
                    raise
                time.sleep(self.policy.wait_s(attempt, None))
                continue
            if response.status_code in RETRIED_STATUSES and not last:
                time.sleep(self.policy.wait_s(attempt, response))
                continue
            return self.policy.rows(response)
        raise AssertionError("unreachable")

    def rewards(self, items: Sequence[Mapping[str, Any]]) -> list[float | None]:
        """Just the rewards (None where the harness could not judge the sample)."""
        return [row.get("reward") for row in self.score(items)]

    def health(self) -> dict[str, Any]:
        return self.http.get(f"{self.url}/health").json()

    def metrics(self) -> dict[str, Any]:
        return self.http.get(f"{self.url}/metrics").json()

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> RewardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncRewardClient:
    """The same client for asyncio (TRL's async reward functions, many requests in flight)."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        retries: int = 8,
        backoff_s: float = 0.25,
        max_wait_s: float = 30.0,
        timeout_s: float = 600.0,
    ) -> None:
        self.url = url.rstrip("/")
        self.policy = _Policy(retries, backoff_s, max_wait_s)
        self.http = httpx.AsyncClient(timeout=timeout_s, headers=_headers(token))

    async def score(
        self, items: Sequence[Mapping[str, Any]], deadline_s: float | None = None
    ) -> list[dict[str, Any]]:
        body = self.policy.body(items, deadline_s)
        for attempt in range(self.policy.retries + 1):
            last = attempt == self.policy.retries
            try:
                response = await self.http.post(f"{self.url}/v1/score", json=body)
            except httpx.TransportError:
                if last:
                    raise
                await asyncio.sleep(self.policy.wait_s(attempt, None))
                continue
            if response.status_code in RETRIED_STATUSES and not last:
                await asyncio.sleep(self.policy.wait_s(attempt, response))
                continue
            return self.policy.rows(response)
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        await self.http.aclose()
