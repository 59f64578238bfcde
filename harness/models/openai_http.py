"""A client for OpenAI-compatible servers (vLLM, llama.cpp, hosted APIs), stdlib only.

The model spec is ``openai:BASE_URL#MODEL``, e.g. ``openai:http://127.0.0.1:8000/v1#coder``.
Chat prompts go to ``/chat/completions``, completion prompts to ``/completions``. One request
per sample (servers differ in how they treat ``n``), several in flight from a thread pool;
429, 5xx, timeouts and connection errors are retried with exponential backoff.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from harness.models.base import Generation, GenerationSettings, Prompt, cut_at_stop
from harness.models.registry import ModelSpec

API_KEY_VARIABLES = ("CODEEVAL_API_KEY", "OPENAI_API_KEY")
_MAX_SERVER_STOPS = 4  # OpenAI's limit; the rest are applied to the text afterwards


class OpenAIError(RuntimeError):
    """A request failed for good (after its retries, or with a status not worth retrying)."""


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str


def parse_spec(source: str) -> Endpoint:
    """``openai:http://host:port/v1#model`` -> its base URL and model name."""
    if not source.startswith("openai:"):
        raise ValueError(f"model spec {source!r}: expected openai:URL#MODEL")
    url, _, model = source[len("openai:") :].partition("#")
    if not url.startswith(("http://", "https://")) or not model:
        raise ValueError(
            f"model spec {source!r}: expected openai:http(s)://HOST[:PORT]/PATH#MODEL "
            "(e.g. openai:http://127.0.0.1:8000/v1#my-model)"
        )
    return Endpoint(base_url=url.rstrip("/"), model=model)


def _retryable_status(status: int) -> bool:
    return status == 429 or 500 <= status < 600


class OpenAIBackend:
    """Generates through an OpenAI-compatible HTTP API."""

    def __init__(
        self,
        endpoint: Endpoint,
        name: str | None = None,
        default_style: str = "chat",
        stop: tuple[str, ...] = (),
        instruction: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        api_key: str | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.name = name or f"openai:{endpoint.base_url}#{endpoint.model}"
        self.default_style = default_style
        self.stop = tuple(stop)
        self.instruction = instruction
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.api_key = api_key or next(
            (os.environ[v] for v in API_KEY_VARIABLES if os.environ.get(v)), None
        )
        self.requests_sent = 0  # every HTTP attempt, retries included
        self._count_lock = threading.Lock()

    @classmethod
    def from_spec(cls, spec: ModelSpec, endpoint: Endpoint | None = None) -> OpenAIBackend:
        """The client for a registry entry (``endpoint``: a server other than its source's)."""
        return cls(
            endpoint or parse_spec(spec.source),
            name=spec.name,
            default_style=spec.prompt_style,
            stop=spec.stop,
            instruction=spec.instruction,
            timeout_s=spec.request_timeout_s,
            max_retries=spec.max_retries,
        )

    def generate(
        self, prompts: list[Prompt], settings: GenerationSettings
    ) -> list[list[Generation]]:
        """``settings.n`` answers per prompt; ``settings.batch_size`` requests in flight."""
        jobs = [(p, j) for p in prompts for j in range(settings.n)]
        with ThreadPoolExecutor(max_workers=max(1, settings.batch_size)) as pool:
            done = list(pool.map(lambda job: self._one(job[0], job[1], settings), jobs))
        return [done[i * settings.n : (i + 1) * settings.n] for i in range(len(prompts))]

    def _one(self, prompt: Prompt, index: int, settings: GenerationSettings) -> Generation:
        stops = tuple(dict.fromkeys(prompt.stop + settings.stop))
        body: dict[str, Any] = {
            "model": self.endpoint.model,
            "max_tokens": settings.max_new_tokens,
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "n": 1,
            # Servers that honour a seed then give the same samples for the same run seed.
            "seed": settings.seed * 1_000_003 + index,
        }
        if stops:
            body["stop"] = list(stops[:_MAX_SERVER_STOPS])
        if prompt.style == "chat":
            body["messages"] = list(prompt.messages)
            reply = self._post("/chat/completions", body)
        else:
            body["prompt"] = prompt.text
            reply = self._post("/completions", body)
        try:
            choice = reply["choices"][0]
            raw = choice["message"]["content"] if prompt.style == "chat" else choice["text"]
        except (KeyError, IndexError, TypeError) as err:
            raise OpenAIError(f"{self.endpoint.base_url}: unexpected reply {reply!r:.300}") from err
        raw = raw or ""
        code_end = settings.stop_at_code_end and prompt.style == "chat"
        completion, stopped = cut_at_stop(raw, stops, code_end, prompt.entry_point)
        server_reason = choice.get("finish_reason") or "stop"
        reason = "stop" if stopped else "length" if server_reason == "length" else "eos"
        tokens = int((reply.get("usage") or {}).get("completion_tokens") or 0)
        return Generation(completion, raw, finish_reason=reason, tokens=tokens)

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST JSON with retries; the decoded JSON reply."""
        url = self.endpoint.base_url + path
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last_error = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self._delay(attempt, last_error))
            with self._count_lock:
                self.requests_sent += 1
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    return json.loads(response.read().decode("utf-8"))
            except urllib.error.HTTPError as err:
                detail = err.read().decode("utf-8", errors="replace")[:300]
                last_error = f"HTTP {err.code}: {detail}"
                if not _retryable_status(err.code):
                    raise OpenAIError(f"POST {url}: {last_error}") from err
                retry_after = err.headers.get("Retry-After") if err.headers else None
                if retry_after:
                    last_error += f" [retry-after {retry_after}]"
            except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
                last_error = f"{type(err).__name__}: {getattr(err, 'reason', err)}"
            except json.JSONDecodeError as err:
                raise OpenAIError(f"POST {url}: the reply is not JSON: {err}") from err
        raise OpenAIError(
            f"POST {url}: gave up after {self.max_retries + 1} attempts: {last_error}"
        )

    def _delay(self, attempt: int, last_error: str) -> float:
        """Exponential backoff with jitter, or the server's Retry-After when it gave one."""
        if "[retry-after " in last_error:
            value = last_error.rsplit("[retry-after ", 1)[1].rstrip("]")
            try:
                return min(float(value), 60.0)
            except ValueError:
                pass
        base = self.backoff_s * 2 ** (attempt - 1)
        return base * (0.5 + random.random() / 2)
