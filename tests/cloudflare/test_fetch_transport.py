"""The core's httpx client over the platform's `fetch` (FetchTransport), with JS fakes."""

from __future__ import annotations

import json
import sys
from typing import Any

import httpx
import pytest

from albert.cloudflare.fetch import FetchTransport
from tests.cloudflare import fakes
from tests.cloudflare.test_ai_binding import FakeReadableStream


class FakeHeaders(fakes.JsProxy):
    """A JS Headers object: `entries()` yields [name, value] arrays."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._pairs = pairs

    def entries(self) -> Any:
        return iter([fakes.JsArray([k, v]) for k, v in self._pairs])


class FakeFetch:
    """The global `fetch`: records its calls, answers or rejects."""

    def __init__(
        self, status: int = 200, body: bytes = b"", headers: Any = (), error: str = ""
    ) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.status, self.body, self.headers, self.error = status, body, list(headers), error

    async def __call__(self, url: str, init: Any) -> Any:
        self.calls.append((url, init))
        if self.error:
            raise fakes.JsException(self.error)
        return fakes.JsObject(
            {
                "status": self.status,
                "headers": FakeHeaders(self.headers),
                "body": FakeReadableStream([self.body[:3], self.body[3:]])
                if self.body
                else fakes.jsnull,
            }
        )


@pytest.fixture(autouse=True)
def js_fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, module in fakes.modules().items():
        monkeypatch.setitem(sys.modules, name, module)


async def test_a_json_post_goes_out_as_fetch_and_the_answer_streams_back() -> None:
    answer = json.dumps({"ok": True, "name": "Zoë"}).encode()
    fetch = FakeFetch(
        status=201,
        body=answer,
        headers=[("content-type", "application/json"), ("content-encoding", "gzip")],
    )
    async with httpx.AsyncClient(transport=FetchTransport(fetch)) as client:
        response = await client.post(
            "https://data.albert.example/platform/x", json={"q": 1}, headers={"x-key": "k"}
        )
    assert response.status_code == 201 and response.json() == {"ok": True, "name": "Zoë"}
    # fetch already undid the encoding: httpx must not try to gunzip again.
    assert "content-encoding" not in response.headers
    [(url, init)] = fetch.calls
    assert url == "https://data.albert.example/platform/x"
    assert type(init) is fakes.JsObject and init.method == "POST"
    sent_headers = {k.lower(): v for k, v in (pair.to_py() for pair in init.headers)}
    assert sent_headers["x-key"] == "k" and sent_headers["content-type"] == "application/json"
    assert "host" not in sent_headers and "content-length" not in sent_headers
    assert json.loads(init.body.to_bytes()) == {"q": 1}


async def test_a_get_sends_no_body_and_reads_an_empty_answer() -> None:
    fetch = FakeFetch(status=204)
    async with httpx.AsyncClient(transport=FetchTransport(fetch)) as client:
        response = await client.get("https://search.albert.example/health")
    assert response.status_code == 204 and response.content == b""
    assert "body" not in fetch.calls[0][1].object_keys()


async def test_a_rejected_fetch_is_a_connect_error() -> None:
    fetch = FakeFetch(error="TypeError: Network connection lost.")
    async with httpx.AsyncClient(transport=FetchTransport(fetch)) as client:
        with pytest.raises(httpx.ConnectError, match="Network connection lost"):
            await client.get("https://down.example/")
