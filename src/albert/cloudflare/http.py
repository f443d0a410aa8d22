"""Conversions between the platform's Request/Response and the core's values."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

from albert.cloudflare.ffi import py_value
from albert.security_headers import with_api_headers
from albert.web import HttpRequest, HttpResponse


def is_websocket_upgrade(request: Any) -> bool:
    """True for a WebSocket upgrade request."""
    return (request.headers.get("upgrade") or "").lower() == "websocket"


async def to_core_request(request: Any, *, read_body: bool = True) -> HttpRequest:
    """The core's view of a platform request."""
    url = urlsplit(str(request.url))
    headers = {str(k).lower(): str(v) for k, v in request.headers.items()}
    body = b""
    if read_body and request.method not in ("GET", "HEAD"):
        body = await request_bytes(request)
    return HttpRequest(
        method=str(request.method).upper(),
        path=url.path,
        query=dict(parse_qsl(url.query)),
        query_string=url.query,
        headers=headers,
        body=body,
        base_url=f"{url.scheme}://{url.netloc}",
    )


async def request_bytes(request: Any) -> bytes:
    """The body exactly as sent: bytes, so invalid UTF-8 reaches the core's checks (a
    text read would have replaced it, or failed, before any check could answer)."""
    js_request = getattr(request, "js_object", request)
    data = py_value(await js_request.arrayBuffer())
    return data if isinstance(data, bytes) else str(data or "").encode()


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
