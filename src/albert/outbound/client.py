"""The httpx client an object sends its outbound requests through."""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from httpx._client import ClientState


class SetCookieCookies(httpx.Cookies):
    """A client's cookie store that reads a response's cookies only when it sets any.

    httpx hands every response to the cookie jar, which first rebuilds the request as a
    `urllib` request (URL text, header dict, URL parsing): ~2.5% of the runtime's CPU per
    chat turn, for model responses that never set a cookie. A response without a
    `Set-Cookie`/`Set-Cookie2` header has nothing for the jar, so skipping it stores the
    same cookies.
    """

    def extract_cookies(self, response: httpx.Response) -> None:
        headers = response.headers
        if "set-cookie" in headers or "set-cookie2" in headers:
            super().extract_cookies(response)


class ObjectHttpClient(httpx.AsyncClient):
    """`httpx.AsyncClient` with `SetCookieCookies` as its cookie store; otherwise the same."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # What httpx built from `cookies=`, moved into the store that skips cookieless
        # responses.
        self.cookies = httpx.AsyncClient.cookies.fget(self)  # type: ignore[attr-defined]

    @property
    def cookies(self) -> httpx.Cookies:
        return self._set_cookie_store

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        self._set_cookie_store = SetCookieCookies(cookies)


_log = logging.getLogger("httpx")


def _plain_client(client: httpx.AsyncClient) -> bool:
    """True when `AsyncClient.send` would add nothing to a request: no auth, hooks, cookies
    to send, params or redirects to follow, and the client open."""
    hooks = client.event_hooks
    return (
        not client.is_closed
        and client.auth is None
        and not client.follow_redirects
        and not hooks["request"]
        and not hooks["response"]
        and not client.cookies.jar
        and not client.params
    )


@asynccontextmanager
async def _sent(client: httpx.AsyncClient, request: httpx.Request) -> AsyncIterator[httpx.Response]:
    """`request` through the transport `AsyncClient.send` would pick, with its bookkeeping.

    The error names the request, cookies are extracted, the default encoding, log line and
    elapsed time are set as httpx sets them; the response is closed when the block ends.
    """
    transport = client._transport_for_url(request.url)
    client._state = ClientState.OPENED  # as `send` marks it
    started = time.perf_counter()
    try:
        response = await transport.handle_async_request(request)
    except httpx.RequestError as exc:
        exc.request = request  # as httpx's own send path names it
        raise
    try:
        response.request = request
        client.cookies.extract_cookies(response)
        response.default_encoding = client._default_encoding  # type: ignore[attr-defined]
        _log.info(
            'HTTP Request: %s %s "%s %d %s"',
            request.method,
            request.url,
            response.http_version,
            response.status_code,
            response.reason_phrase,
        )
        yield response
    finally:
        response.elapsed = datetime.timedelta(seconds=time.perf_counter() - started)
        await response.aclose()


# Merged request heads shared by every RepeatedPost of the process, by URL and headers.
_SHARED_TEMPLATES = 64
_templates: dict[tuple[Any, ...], tuple[httpx.URL, httpx.Headers]] = {}


class RepeatedPost:
    """A POST sent again and again to one URL with the same headers, only the body changing.

    `AsyncClient.stream` runs every request through its generic path: merging the client's
    URL, headers and cookies into a new `Request` (headers normalized twice, the body
    encoded into a stream, auto headers added), then auth, redirect and event-hook
    handling that a model request never uses: about half of what sending a chat turn's
    model request cost the runtime. Here the merged headers are made once, and each call
    builds only the `Request` with its body and its Content-Length, then goes to the same
    transport `AsyncClient.send` would pick, with the same bookkeeping afterwards (cookies
    extracted, default encoding, elapsed time, the response closed on exit), so what goes
    on the wire and what comes back are the same. Whenever the client has anything the
    shortcut does not handle (auth, event hooks, cookies to send, a closed client, redirects
    to follow) the call goes through `client.stream` instead.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: httpx.URL | str,
        *,
        headers: dict[str, str],
        timeout: httpx.Timeout,
    ) -> None:
        self._client = client
        self._url = url
        self._headers = headers
        self._timeout = timeout
        self._extensions = {"timeout": timeout.as_dict()}
        self._client_headers: list[tuple[bytes, bytes]] | None = None
        self._template: tuple[httpx.URL, httpx.Headers] | None = None

    def _merged(self) -> tuple[httpx.URL, httpx.Headers]:
        # The client's own headers may change (a setter, or in place): merged again then.
        client_headers = self._client.headers.raw
        if self._template is None or client_headers != self._client_headers:
            # Every object of a process posts to the same model with the same headers: the
            # merge is made once for all of them (each call copies the headers it sends).
            key = (str(self._url), tuple(self._headers.items()), tuple(client_headers))
            template = _templates.get(key)
            if template is None:
                request = self._client.build_request(
                    "POST", self._url, content=b"", headers=self._headers, timeout=self._timeout
                )
                # The body's Content-Length is the last header httpx adds: set per call.
                headers = httpx.Headers(request.headers)
                del headers["content-length"]
                template = (request.url, headers)
                if len(_templates) >= _SHARED_TEMPLATES:
                    _templates.clear()
                _templates[key] = template
            self._template, self._client_headers = template, client_headers
        return self._template

    def _shortcut_applies(self) -> bool:
        return isinstance(self._url, httpx.URL) and _plain_client(self._client)

    @asynccontextmanager
    async def stream(self, content: bytes) -> AsyncIterator[httpx.Response]:
        """Send `content` as the body; the response streams, closed when the block ends."""
        client = self._client
        if not self._shortcut_applies():
            async with client.stream(
                "POST", self._url, content=content, headers=self._headers, timeout=self._timeout
            ) as response:
                yield response
            return
        url, merged = self._merged()
        headers = httpx.Headers(merged)
        headers["Content-Length"] = str(len(content))
        request = httpx.Request(
            "POST",
            url,
            headers=headers,
            stream=httpx.ByteStream(content),
            extensions=self._extensions,
        )
        request.read()
        async with _sent(client, request) as response:
            yield response


_NO_BASE_URL = httpx.URL("")


class RepeatedGet:
    """GETs with the same headers and timeout sent again and again, only the URL changing.

    What `RepeatedPost` is for a POST, for a read such as a Typesense search: the client's
    headers are merged into the request's once (per scheme and host, which the `Host`
    header follows), and each call builds only the `Request` for its URL, then goes to the
    transport `AsyncClient.send` would pick, with the same bookkeeping (the error naming
    the request, cookies extracted, default encoding, the log line, elapsed time, the body
    read and the response closed), so the request on the wire, the response, its errors and
    its timeouts are those of `client.request("GET", url, headers=..., timeout=...)`, which
    is used whenever the client has anything the shortcut does not handle. `AsyncClient`'s
    generic path (merging URL, headers and cookies into a new `Request`, auth, redirect and
    hook handling) was ~35 µs of a ~0.35 ms search request.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        headers: dict[str, str],
        timeout: httpx.Timeout | float,
    ) -> None:
        self._client = client
        self._headers = headers
        self._timeout = timeout
        self._extensions = {"timeout": httpx.Timeout(timeout).as_dict()}
        self._client_headers: list[tuple[bytes, bytes]] | None = None
        self._origin: tuple[str, bytes] | None = None
        self._merged: httpx.Headers | None = None

    def _shortcut_applies(self) -> bool:
        return self._client.base_url == _NO_BASE_URL and _plain_client(self._client)

    def _headers_for(self, url: httpx.URL) -> httpx.Headers:
        client_headers = self._client.headers.raw
        origin = (url.scheme, url.netloc)
        merged = self._merged
        if merged is None or client_headers != self._client_headers or origin != self._origin:
            merged = self._client.build_request(
                "GET", url, headers=self._headers, timeout=self._timeout
            ).headers
            self._merged, self._client_headers, self._origin = merged, client_headers, origin
        return merged

    async def get(self, url: str) -> httpx.Response:
        """GET `url` (absolute); the response with its body read."""
        client = self._client
        if not self._shortcut_applies():
            return await client.request("GET", url, headers=self._headers, timeout=self._timeout)
        parsed = httpx.URL(url)
        request = httpx.Request(
            "GET",
            parsed,
            headers=httpx.Headers(self._headers_for(parsed)),
            extensions=self._extensions,
        )
        async with _sent(client, request) as response:
            await response.aread()
        return response
