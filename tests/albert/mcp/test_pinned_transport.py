"""The MCP client's transport checks each socket's address as it opens, and uses it.

A loopback listener records what reaches it; the resolver is the only way the test
names resolve at all (the system resolver knows none of them), so a request that
arrives proves the socket went to the checked address.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from albert.mcp.pinned_transport import CheckedTransport
from albert.mcp.ssrf import ConnectCheck, UrlRefused
from tests.support.asgi_server import AsgiServer


class Recorder:
    """An ASGI app that records the Host header of every request."""

    def __init__(self) -> None:
        self.hosts: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.hosts.append(dict(scope["headers"]).get(b"host", b"").decode())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture
def listener() -> Iterator[tuple[AsgiServer, Recorder]]:
    recorder = Recorder()
    with AsgiServer(recorder) as server:
        yield server, recorder


def _answers(*rounds: list[str]):
    """A resolver answering each lookup with the next round (the last one repeats)."""
    calls: list[str] = []

    async def resolve(host: str) -> list[str]:
        calls.append(host)
        return rounds[min(len(calls), len(rounds)) - 1]

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


async def test_the_socket_goes_to_the_checked_address_and_keeps_the_host_header(
    listener,
) -> None:
    server, recorder = listener
    resolve = _answers(["127.0.0.1"])
    transport = CheckedTransport(ConnectCheck("local", resolve))
    async with httpx2.AsyncClient(transport=transport) as http:
        response = await http.get(f"http://only-our-resolver.test:{server.port}/mcp")
    assert response.status_code == 200
    assert recorder.hosts == [f"only-our-resolver.test:{server.port}"]
    assert resolve.calls == ["only-our-resolver.test"]  # type: ignore[attr-defined]


async def test_the_checked_address_stays_pinned_while_a_reconnect_checks_again(
    listener,
) -> None:
    server, recorder = listener
    # Local mode allows loopback; the later answer is a private address it refuses.
    resolve = _answers(["127.0.0.1"], ["10.0.0.7"])
    check = ConnectCheck("local", resolve)
    async with httpx2.AsyncClient(
        transport=CheckedTransport(check), headers={"connection": "close"}
    ) as http:
        for _ in range(3):  # a new socket each time, all to the address checked first
            assert (await http.get(f"http://rebind.test:{server.port}/")).status_code == 200
    assert resolve.calls == ["rebind.test"]  # type: ignore[attr-defined]
    assert len(recorder.hosts) == 3
    # A reconnect is a new transport: it checks again, and the new answer is refused.
    async with httpx2.AsyncClient(transport=CheckedTransport(check)) as http:
        with pytest.raises(UrlRefused, match=r"resolves to 10\.0\.0\.7"):
            await http.get(f"http://rebind.test:{server.port}/")
    assert len(recorder.hosts) == 3


@pytest.mark.parametrize(
    "answer", [["127.0.0.1"], ["::1"], ["::ffff:127.0.0.1"], ["93.184.216.34", "127.0.0.1"]]
)
async def test_production_refuses_a_loopback_answer_at_connect_time(listener, answer) -> None:
    server, recorder = listener
    transport = CheckedTransport(ConnectCheck("production", _answers(answer)))
    async with httpx2.AsyncClient(transport=transport) as http:
        with pytest.raises(UrlRefused):
            await http.get(f"http://public-looking.test:{server.port}/")
    assert recorder.hosts == []


async def test_literal_addresses_are_checked_too(listener) -> None:
    server, recorder = listener
    transport = CheckedTransport(ConnectCheck("production", _answers(["8.8.8.8"])))
    async with httpx2.AsyncClient(transport=transport) as http:
        for host in ("127.0.0.1", "[::ffff:7f00:1]", "[::127.0.0.1]"):
            with pytest.raises(UrlRefused):
                await http.get(f"http://{host}:{server.port}/")
    assert recorder.hosts == []
