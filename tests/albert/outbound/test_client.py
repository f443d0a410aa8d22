"""The object's httpx client: cookies behave as httpx's own, cookieless responses skip the jar."""

from __future__ import annotations

import httpx
import pytest

from albert.cloudflare.fetch import outbound_client
from albert.outbound.client import ObjectHttpClient, SetCookieCookies


def _server(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/set":
        return httpx.Response(200, headers=[("SET-COOKIE", "session=abc; Path=/")])
    if request.url.path == "/set2":
        return httpx.Response(200, headers=[("Set-Cookie", "other=1; Path=/")])
    return httpx.Response(200, json={"cookie": request.headers.get("cookie")})


async def test_cookies_a_response_sets_are_kept_and_sent_back() -> None:
    async with ObjectHttpClient(transport=httpx.MockTransport(_server), cookies={"a": "1"}) as c:
        assert (await c.get("http://api.test/echo")).json() == {"cookie": "a=1"}
        await c.get("http://api.test/set")
        await c.get("http://api.test/set2")
        assert dict(c.cookies) == {"a": "1", "session": "abc", "other": "1"}
        assert (await c.get("http://api.test/echo")).json() == {
            "cookie": "a=1; session=abc; other=1"
        }


async def test_a_response_without_set_cookie_never_reaches_the_jar(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str] = []
    real = httpx.Cookies.extract_cookies

    def counted(self: httpx.Cookies, response: httpx.Response) -> None:
        seen.append(response.request.url.path)
        real(self, response)

    monkeypatch.setattr(httpx.Cookies, "extract_cookies", counted)
    async with ObjectHttpClient(transport=httpx.MockTransport(_server)) as client:
        await client.get("http://api.test/echo")
        await client.get("http://api.test/set")
        await client.get("http://api.test/echo")
    assert seen == ["/set"]


def test_assigned_cookies_keep_the_skipping_store() -> None:
    client = ObjectHttpClient()
    client.cookies = {"x": "y"}
    assert isinstance(client.cookies, SetCookieCookies)
    assert dict(client.cookies) == {"x": "y"}


async def test_every_outbound_client_is_one() -> None:
    for client in (outbound_client(),):
        async with client:
            assert isinstance(client, ObjectHttpClient)
            assert isinstance(client.cookies, SetCookieCookies)
