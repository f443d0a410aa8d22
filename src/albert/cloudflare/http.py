"""Conversions between the platform's Request/Response and the core's values."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from albert.cloudflare.ffi import is_js_nullish, py_value
from albert.request_bodies import MAX_REQUEST_BODY_BYTES, BoundedBody, check_head, too_large
from albert.security_headers import with_api_headers
from albert.web import HttpRequest, HttpResponse

log = logging.getLogger(__name__)


async def to_core_request(
    request: Any,
    *,
    read_body: bool = True,
    max_body: int | Callable[[str], int] = MAX_REQUEST_BODY_BYTES,
) -> HttpRequest:
    """The core's view of a platform request, its body read up to `max_body` bytes (a
    number, or the cap of the request's path).

    Raises BadRequest (albert.request_bodies) for a head that frames its body twice (400)
    or declares more than the cap (413), before anything is read, even when the body is
    left unread (the router's check of a request it forwards); and for a body that grows
    past the cap (413), as soon as it does.
    """
    url = urlsplit(str(request.url))
    pairs = [(str(k).lower(), str(v)) for k, v in request.headers.items()]
    cap = max_body(url.path) if callable(max_body) else max_body
    check_head(pairs, cap)
    method = str(request.method).upper()
    body = b""
    if read_body and method not in ("GET", "HEAD"):
        body = await request_bytes(request, cap)
    return HttpRequest(
        method=method,
        path=url.path,
        query=dict(parse_qsl(url.query)),
        query_string=url.query,
        headers=dict(pairs),
        body=body,
        base_url=f"{url.scheme}://{url.netloc}",
    )


async def request_bytes(request: Any, cap: int = MAX_REQUEST_BODY_BYTES) -> bytes:
    """The body exactly as sent, at most `cap` bytes of it (BadRequest, 413, past that).

    Bytes, so invalid UTF-8 reaches the core's checks (a text read would have replaced it,
    or failed, before any check could answer). Read from the body's stream piece by piece,
    never whole (`arrayBuffer()` would buffer whatever a client sends before any check):
    a piece that would pass the cap is refused without being copied, and the stream is
    cancelled so the platform stops taking the rest.
    """
    js_request = getattr(request, "js_object", request)
    stream = js_request.body
    if is_js_nullish(stream):
        return b""
    reader = stream.getReader()
    body = BoundedBody(cap)
    while True:  # bounded by the cap: every piece kept is counted against it
        result = await reader.read()
        if result.done:
            return body.value()
        piece = result.value
        if not body.fits(_byte_length(piece)):
            await _cancel(reader)
            raise too_large(cap)
        body.add(py_value(piece))


def _byte_length(piece: Any) -> int:
    # A Uint8Array's length, read without copying it into Python.
    length = getattr(piece, "byteLength", None)
    return len(piece) if length is None else int(length)


async def _cancel(reader: Any) -> None:
    try:
        await reader.cancel()
    except Exception:
        # The refusal stands whatever the stream says: it may have failed or closed.
        log.debug("cancelling a refused body failed", exc_info=True)


def to_response(response: HttpResponse) -> Any:
    """A platform response from the core's.

    The body goes as the bytes it is: a large JSON page is not decoded into a string to
    be encoded again (or, on Cloudflare, transcoded to UTF-16 and back on its way out).
    """
    from workers import Response

    headers = with_api_headers(response.headers)
    if response.body and not any(k.lower() == "content-type" for k in headers):
        # What the platform would have said of the text body this used to send.
        headers["content-type"] = "text/plain;charset=UTF-8"
    return Response(response.body or None, status=response.status, headers=headers)


async def forward(stub: Any, request: Any) -> Any:
    """Send a request on to a Durable Object stub unchanged."""
    return await stub.fetch(getattr(request, "js_object", request))


async def post_to_object(
    stub: Any, url: str, body: str, headers: dict[str, str]
) -> tuple[int, str]:
    """POST `body` to a Durable Object; its status and text.

    The Workers SDK wraps every stub: its `fetch` takes the URL (or Request) as its one
    positional argument and the request's options as keywords, as `workers.fetch` does.
    A JS-style `fetch(url, init)` raises TypeError there (and in the local runtime's shim).
    """
    response = await stub.fetch(url, method="POST", headers=headers, body=body)
    return int(py_value(response.status)), str(py_value(await response.text()) or "")
