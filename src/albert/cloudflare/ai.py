"""The Workers AI binding (`env.AI`) behind the core's AiRunner port."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from albert.ai.workers_ai import WorkersAIClient
from albert.cloudflare.ffi import is_js_nullish, py_value, to_js_object


async def read_stream(stream: Any) -> AsyncIterator[bytes]:
    """The chunks of a JS ReadableStream (or an async iterable of bytes) as bytes."""
    get_reader = getattr(stream, "getReader", None)
    if get_reader is None:
        async for chunk in stream:
            yield py_value(chunk)
        return
    reader = get_reader()
    try:
        while True:
            result = await reader.read()
            if bool(py_value(getattr(result, "done", True))):
                return
            chunk = py_value(result.value)
            if chunk:
                yield chunk if isinstance(chunk, bytes) else str(chunk).encode()
    finally:
        release = getattr(reader, "releaseLock", None)
        if release is not None:
            try:
                release()
            except Exception:
                # Releasing a lock on a closed or errored stream may throw; nothing to keep.
                pass


class WorkersAiBinding:
    """`env.AI.run(model, inputs, options)` with plain-Python inputs and results."""

    def __init__(self, ai: Any, *, gateway_id: str = "") -> None:
        self._ai = ai
        self._gateway_id = gateway_id

    def options(self) -> dict[str, Any] | None:
        """The third `run` argument: route through AI Gateway when an id is configured."""
        if not self._gateway_id:
            return None
        return {"gateway": {"id": self._gateway_id}}

    async def run(self, model: str, inputs: dict[str, Any], *, stream: bool) -> Any:
        """Run a model; a dict result, or the SSE bytes of the stream when `stream` is set."""
        payload = {**inputs, "stream": stream}
        args: list[Any] = [model, to_js_object(payload)]
        options = self.options()
        if options is not None:
            args.append(to_js_object(options))
        result = await self._ai.run(*args)
        if stream:
            return read_stream(result)
        return py_value(result)


def workers_ai_client(env: Any, *, timeout: float = 60.0) -> WorkersAIClient | None:
    """A Workers AI model client when the env has an `AI` binding and a model, else None."""
    ai = getattr(env, "AI", None)
    model = getattr(env, "WORKERS_AI_MODEL", None)
    if is_js_nullish(ai) or is_js_nullish(model) or not str(model):
        return None
    gateway = getattr(env, "AI_GATEWAY_ID", None)
    binding = WorkersAiBinding(ai, gateway_id="" if is_js_nullish(gateway) else str(gateway))
    return WorkersAIClient(binding, model=str(model), timeout=timeout)


def platform_model(env: Any) -> WorkersAIClient | None:
    """Workers AI when no OpenAI-compatible gateway is configured and the binding is there."""
    base_url = getattr(env, "MODEL_BASE_URL", None)
    if not is_js_nullish(base_url) and str(base_url):
        return None
    return workers_ai_client(env)
