"""SSRF through the real runtime in production mode: IPv6 forms carrying private IPv4
addresses, and DNS rebinding against a loopback DNS-over-HTTPS stand-in.

The stand-in answers the first lookups of a name with a public address and later ones
with 127.0.0.1, where a listener records every request that reaches it. A check that
only looks once would pass the public answer and then connect wherever the name
points next; the listener would see the request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.albert.mcp.test_ssrf import NON_PUBLIC_V4, carrying_forms
from tests.support.asgi_server import AsgiServer
from tests.support.recorder import RecordingApp, recording_listener
from tests.support.runtime_process import RuntimeProcess

PUBLIC = "93.184.216.34"


class RebindingDoh:
    """A DNS-over-HTTPS (JSON) stand-in: `public_answers` public A answers per name, then
    127.0.0.1; AAAA never answers."""

    def __init__(self) -> None:
        self.public_answers: dict[str, int] = {}
        self.asked: dict[str, int] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        from urllib.parse import parse_qs

        query = parse_qs(scope["query_string"].decode())
        name, kind = query["name"][0], query["type"][0]
        answers: list[dict[str, Any]] = []
        if kind == "A":
            self.asked[name] = self.asked.get(name, 0) + 1
            public = self.asked[name] <= self.public_answers.get(name, 0)
            answers = [
                {"name": name, "type": 1, "TTL": 0, "data": PUBLIC if public else "127.0.0.1"}
            ]
        body = json.dumps({"Status": 0, "Answer": answers}).encode()
        headers = [(b"content-type", b"application/dns-json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def doh() -> Iterator[tuple[AsgiServer, RebindingDoh]]:
    app = RebindingDoh()
    with AsgiServer(app) as server:
        yield server, app


@pytest.fixture(scope="module")
def listener() -> Iterator[tuple[AsgiServer, RecordingApp]]:
    with recording_listener() as pair:
        yield pair


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, doh) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("ssrf")
    server, _ = doh
    variables = {
        "ALBERT_MODE": "production",
        "MCP_DEFAULT_SERVER_URL": "",
        "MCP_DNS_RESOLVER": "doh",
        "MCP_DOH_URL": f"{server.url}/dns-query",
        "MCP_CONNECT_TIMEOUT_SECONDS": "3",
        "MCP_RETRY_BASE_SECONDS": "0.2",
        "MCP_RETRY_MAX_SECONDS": "0.4",
        "MCP_RETRY_ATTEMPTS": "2",
        "MCP_CHANGES_PER_MINUTE": "1000",
        "NEW_SESSIONS_PER_IP": "0",
    }
    with RuntimeProcess(state, variables) as process:
        yield process


def _client(runtime: RuntimeProcess) -> httpx.Client:
    token = httpx.post(f"{runtime.url}/api/session").json()["token"]
    return httpx.Client(base_url=runtime.url, headers={"authorization": f"Bearer {token}"})


@pytest.mark.parametrize("v4", NON_PUBLIC_V4[:6])
def test_ipv6_forms_carrying_private_addresses_are_refused(runtime, v4: str) -> None:
    with _client(runtime) as http:
        for url in carrying_forms(v4):
            response = http.post("/api/mcp/servers", json={"name": "x", "url": url})
            assert response.status_code == 422, (url, response.text)
            assert response.json()["error"] == "url_refused"
        assert http.get("/api/mcp/servers").json()["servers"] == []


async def _settled_status(http: httpx.AsyncClient, name: str) -> dict[str, Any]:
    servers: dict[str, Any] = {}
    for _ in range(100):
        listing = (await http.get("/api/mcp/status")).json()["servers"]
        servers = {s["name"]: s for s in listing}
        status = servers.get(name)
        if status is not None and status["state"] != "connecting" and status["last_error"]:
            return dict(status)
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} never settled: {servers}")


@pytest.mark.parametrize("public_answers", [1, 2])
async def test_a_name_that_rebinds_to_loopback_never_reaches_the_listener(
    runtime, doh, listener, public_answers: int
) -> None:
    _, resolver = doh
    server, recorder = listener
    # "localhost": the system resolver sends it to 127.0.0.1, where the listener is.
    # With 1 public answer the re-check before connecting sees loopback; with 2 the
    # check as the socket opens does.
    name = f"rebind{public_answers}"
    host = "localhost"
    resolver.public_answers[host] = resolver.asked.get(host, 0) + public_answers
    before = len(recorder.requests)
    async with httpx.AsyncClient(base_url=runtime.url) as http:
        token = (await http.post("/api/session")).json()["token"]
        http.headers["authorization"] = f"Bearer {token}"
        added = await http.post(
            "/api/mcp/servers", json={"name": name, "url": f"http://{host}:{server.port}/mcp"}
        )
        assert added.status_code == 201, added.text  # the first answer was public
        status = await _settled_status(http, name)
        # Its retries would ask for the same name while the next case counts the answers.
        assert (await http.delete(f"/api/mcp/servers/{name}")).status_code == 204
    assert status["state"] in ("reconnecting", "failed")
    assert "resolves to 127.0.0.1" in status["last_error"], status
    assert "non-public range 127.0.0.0/8" in status["last_error"], status
    assert len(recorder.requests) == before, recorder.requests[before:]
