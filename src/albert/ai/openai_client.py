"""OpenAI-compatible chat-completions client over httpx with real SSE parsing.

Talks to AI Gateway, Workers AI's OpenAI endpoint, OpenAI, Ollama and vLLM alike.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from typing import Any

import httpx
from pydantic_core import to_json

from albert.ai.gateway_errors import MAX_LOGGED_CHARS, http_error, stream_error
from albert.ai.model import ModelError, ModelEvent, ModelRequest, TextDelta
from albert.ai.openai_wire import (
    StreamedStep,
    chunk_error,
    conversation_payload,
    decode_chunk,
    error_reason,
)
from albert.ai.sse import parse_sse_batches


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    # "nan", "inf" and "-5" parse as floats but say no wait at all.
    return seconds if seconds is not None and 0 <= seconds < math.inf else None


def _unreachable(exc: httpx.TransportError) -> ModelError:
    """A transport failure as a network error: its class and its own words (the detail the
    user unfolds and the log line; redacted there), e.g. "ConnectError: [Errno 111]
    Connection refused" or, on workerd, "ConnectError: Network connection lost."."""
    said = " ".join(str(exc).split())[:200]
    kind = type(exc).__name__
    return ModelError(
        "network", f"cannot reach the model gateway ({kind}{': ' + said if said else ''})"
    )


class OpenAICompatibleClient:
    """A streaming chat-completions client; one instance per object, reusing its httpx client."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float = 60.0,
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        self._http = http
        url = base_url.rstrip("/") + "/chat/completions"
        # Parsed once: httpx parses a URL given as text again for every request (~0.1 ms,
        # ~2% of a short turn). One it cannot parse stays text, refused on each request
        # as before.
        self._url: httpx.URL | str
        try:
            self._url = httpx.URL(url)
        except httpx.InvalidURL:
            self._url = url
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._headers.update(extra_headers or {})
        self._headers["content-type"] = "application/json"
        # What a gateway's error text must never carry past the log (redacted there too).
        self._secrets = [v for v in (api_key, *(extra_headers or {}).values()) if v]
        self.model_name = model
        self._timeout = httpx.Timeout(timeout)

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for a request."""
        return {
            "model": self.model_name,
            **conversation_payload(request),
            "stream_options": {"include_usage": True},
        }

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        # The same compact UTF-8 JSON httpx's `json=` makes, by pydantic-core in a fifth of
        # the time: the whole conversation and every tool schema go out on each step.
        content = to_json(self.build_body(request))
        for attempt in (1, 2):
            answered = False
            try:
                async with self._http.stream(
                    "POST", self._url, content=content, headers=self._headers, timeout=self._timeout
                ) as response:
                    answered = True
                    if response.status_code != 200:
                        await self._raise_for_status(response)
                    async for event in self._events(response):
                        yield event
                return
            except httpx.TimeoutException as exc:
                raise ModelError("timeout", "the model gateway did not answer in time") from exc
            except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
                # A pooled connection the gateway closed as we reused it: nothing was
                # answered, so nothing was processed, and one fresh try is safe.
                if not answered and attempt == 1:
                    continue
                raise ModelError("stream_cut", "the model stream was cut off") from exc
            except httpx.ConnectError as exc:
                # Nothing was answered: one fresh try, as OpenAI's own SDK makes. On workerd
                # every failure before the response head is a ConnectError (the platform's
                # fetch says no more), a pooled connection the gateway just closed included.
                if attempt == 1:
                    continue
                raise _unreachable(exc) from exc
            except httpx.TransportError as exc:
                raise _unreachable(exc) from exc

    async def _raise_for_status(self, response: httpx.Response) -> None:
        body = b""
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_LOGGED_CHARS:
                break
        raise http_error(
            response.status_code,
            body.decode(errors="replace"),
            self._secrets,
            retry_after=_retry_after(response),
        )

    def _decode(self, data: str) -> dict[str, Any]:
        return _chunk(data, self._secrets)

    async def _events(self, response: httpx.Response) -> AsyncIterator[ModelEvent]:
        step = StreamedStep()
        # The stream is read to its end (after [DONE] too) so the connection can go back
        # to the pool. The text of the events one read brought is one delta: a burst
        # costs the rest of the turn one step, not one per token.
        async for batch in parse_sse_batches(response.aiter_bytes()):
            text: list[str] = []
            try:
                for sse in batch:
                    chunk = step.accept(sse, self._decode)
                    if chunk is not None:
                        text.append(step.choices_text(chunk))
            except ModelError:
                # Text before a chunk that fails (an error event) is still the answer's.
                if any(text):
                    yield TextDelta(text="".join(text))
                raise
            joined = "".join(text)
            if joined:
                yield TextDelta(text=joined)
        step.check_finished("the model stream")
        for event in step.closing_events(
            step.finish_reason or ("tool_calls" if step.calls else "stop")
        ):
            yield event


def _chunk(data: str, secrets: list[str]) -> dict[str, Any]:
    """One chunk of the stream; one reporting an error raises (secrets redacted)."""
    chunk = decode_chunk(data, "the model")
    error = chunk_error(chunk)
    if error is not None:
        raise stream_error(json.dumps(error), secrets, error_reason(error))
    return chunk
