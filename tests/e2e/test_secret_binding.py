"""A deployment secret goes only where MCP_SECRETS binds it: the probe's exfiltration
repro against the real runtime, with loopback listeners recording what arrives.

The attacker's listener must never see the secret; the bound listener must (so the
refusals are not just everything being switched off); a stored config loses its
secret when the binding goes; and every refusal reads the same, so a client cannot
learn which secret names exist.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from albert.mcp.secret_binding import REFUSAL
from tests.support.asgi_server import AsgiServer
from tests.support.chat_client import ChatClient
from tests.support.recorder import RecordingApp, recording_listener
from tests.support.runtime_process import RuntimeProcess

SECRET = "s3cret-vaults2-value-4c1d9e"
UNUSED = "s3cret-unused-value-77aa01"


@pytest.fixture(scope="module")
def bound() -> Iterator[tuple[AsgiServer, RecordingApp]]:
    with recording_listener() as pair:
        yield pair


@pytest.fixture(scope="module")
def attacker() -> Iterator[tuple[AsgiServer, RecordingApp]]:
    with recording_listener() as pair:
        yield pair


def _bindings(bound_url: str, attacker_url: str) -> str:
    return json.dumps(
        {
            "MCP_SECRET_VAULTS2": {"origins": [bound_url], "tenants": ["default"]},
            # Bound to the attacker's origin, but never set in this environment.
            "MCP_SECRET_UNSET": {"origins": [attacker_url], "tenants": ["*"]},
            "MCP_SECRET_ACME": {"origins": [attacker_url], "tenants": ["acme"]},
        }
    )


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, bound, attacker) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("secret-binding")
    variables = {
        "ALBERT_MODE": "local",
        "MCP_DEFAULT_SERVER_URL": "",
        "MCP_SECRET_VAULTS2": SECRET,
        "MCP_SECRET_ACME": UNUSED,
        "MCP_SECRET_OTHER": UNUSED,
        "MCP_SECRETS": _bindings(bound[0].url, attacker[0].url),
        "TENANTS": json.dumps({"acme": {"name": "Acme"}}),
        "MCP_CHANGES_PER_MINUTE": "1000",
        "MCP_CONNECT_TIMEOUT_SECONDS": "15",  # the first connect also imports the mcp SDK
        "MCP_RETRY_ATTEMPTS": "0",
        "MCP_HALF_OPEN_COOLDOWN_SECONDS": "0.5",
    }
    with RuntimeProcess(state, variables) as process:
        yield process


def _client(runtime: RuntimeProcess, tenant: str | None = None) -> httpx.Client:
    body = {"tenant": tenant} if tenant else {}
    token = httpx.post(f"{runtime.url}/api/session", json=body).json()["token"]
    return httpx.Client(base_url=runtime.url, headers={"authorization": f"Bearer {token}"})


def _add(http: httpx.Client, url: str, secret_ref: str, header: str = "X-Leak") -> httpx.Response:
    body = {"name": "x", "url": url, "secret_ref": secret_ref, "secret_header": header}
    return http.post("/api/mcp/servers", json=body)


def test_the_probes_request_is_refused_and_nothing_reaches_the_listener(runtime, attacker) -> None:
    server, recorder = attacker
    with _client(runtime) as http:
        response = _add(http, f"{server.url}/mcp", "MCP_SECRET_VAULTS2")
        assert response.status_code == 422, response.text
        assert response.json() == {
            "error": "secret_refused",
            "detail": REFUSAL,
            "fields": [{"field": "secret_ref", "message": REFUSAL}],
        }
        assert http.get("/api/mcp/servers").json()["servers"] == []
    assert recorder.requests == []
    assert SECRET not in runtime.log_tail(10_000)


def test_every_refusal_reads_the_same_whatever_the_reason(runtime, bound, attacker) -> None:
    server, recorder = attacker
    url = f"{server.url}/mcp"
    with _client(runtime) as http, _client(runtime, "acme") as acme:
        bodies = {
            "bound elsewhere": _add(http, url, "MCP_SECRET_VAULTS2").content,
            "no such name": _add(http, url, "MCP_SECRET_NO_SUCH_NAME").content,
            "set, never bound": _add(http, url, "MCP_SECRET_OTHER").content,
            "bound here, not set": _add(http, url, "MCP_SECRET_UNSET").content,
            "other tenant's": _add(http, url, "MCP_SECRET_ACME").content,
            "bound, wrong tenant": _add(acme, f"{bound[0].url}/mcp", "MCP_SECRET_VAULTS2").content,
        }
    assert len(set(bodies.values())) == 1, bodies
    assert recorder.requests == [] and bound[1].requests == []


@pytest.mark.parametrize(
    "header",
    [
        "Host",
        "HOST",
        "hOsT",
        "Content-Length",
        "CONTENT-TYPE",
        "Transfer-Encoding",
        "connection",
        "Upgrade",
        "TE",
        "Mcp-Session-Id",
        "MCP-PROTOCOL-VERSION",
        "Proxy-Authorization",
        "Host\n",
        "Host ",
        "X-A\r\nHost",
        "Hos\u0442",
    ],
)
def test_the_secret_header_obeys_the_reserved_header_rule(runtime, bound, header) -> None:
    server, _ = bound
    with _client(runtime) as http:
        response = _add(http, f"{server.url}/mcp", "MCP_SECRET_VAULTS2", header)
        assert response.status_code == 422, (header, response.text)
        assert response.json()["error"] == "invalid_body"
        plain = http.post(
            "/api/mcp/servers",
            json={"name": "y", "url": f"{server.url}/mcp", "headers": {header: "v"}},
        )
        assert plain.status_code == 422, (header, plain.text)


def test_the_secret_reaches_its_bound_origin_and_stops_when_the_binding_goes(
    runtime, bound, attacker
) -> None:
    server, recorder = bound
    with _client(runtime) as http:
        added = http.post(
            "/api/mcp/servers",
            json={
                "name": "vaults2",
                "url": f"{server.url}/mcp",
                "secret_ref": "MCP_SECRET_VAULTS2",
                "secret_header": "X-Api-Key",
                "secret_prefix": "",
            },
        )
        assert added.status_code == 201, added.text
        token = http.headers["authorization"]
    # Bounded by time, not by a count of polls: under load the first connect may take seconds.
    deadline = time.monotonic() + 30
    while not recorder.saw(SECRET) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any(r.headers.get("x-api-key") == SECRET for r in recorder.requests)
    # The deployment narrows the binding; the stored config stays, the secret does not go.
    runtime.variables["MCP_SECRETS"] = _bindings("https://elsewhere.example", attacker[0].url)
    runtime.stop()
    # Counted once the old process is gone: its session may still have been talking.
    arrived = len(recorder.requests)
    runtime.start()
    try:
        with httpx.Client(base_url=runtime.url, headers={"authorization": token}) as http:
            # The restarted object keeps the server `failed` (its retries were spent
            # before the restart); the half-open attempt of the next message, past the
            # cool-down, is what meets the new binding.
            await_turn(runtime, token.removeprefix("Bearer "))
            status = {}
            for _ in range(100):
                status = {s["name"]: s for s in http.get("/api/mcp/status").json()["servers"]}
                if status.get("vaults2", {}).get("last_error") == REFUSAL:
                    break
                time.sleep(0.05)
            assert status["vaults2"]["last_error"] == REFUSAL
            assert status["vaults2"]["state"] in ("reconnecting", "failed")
        assert len(recorder.requests) == arrived
    finally:
        runtime.variables["MCP_SECRETS"] = _bindings(bound[0].url, attacker[0].url)
        runtime.restart()


def await_turn(runtime: RuntimeProcess, token: str) -> None:
    """One chat turn (the demo planner answers) of the client holding `token`."""

    async def turn() -> None:
        async with ChatClient(runtime.url, runtime.ws_url, token=token) as client:
            await client.connect()
            thread = await client.new_thread()
            frames = await client.turn(thread, "hello")
            assert frames[-1]["type"] == "done", frames[-1]

    time.sleep(0.6)  # past the half-open cool-down
    asyncio.run(turn())


def test_production_refuses_an_unbound_secret_for_a_public_host(tmp_path: Path) -> None:
    variables = {
        "ALBERT_MODE": "production",
        "MCP_DEFAULT_SERVER_URL": "",
        "MCP_SECRET_VAULTS2": SECRET,
        "MCP_SECRETS": json.dumps(
            {"MCP_SECRET_VAULTS2": {"origins": ["https://mcp.example.com"], "tenants": ["*"]}}
        ),
    }
    with RuntimeProcess(tmp_path, variables) as process, _client(process) as http:
        # A public literal needs no DNS; the binding alone refuses it.
        response = _add(http, "https://8.8.8.8/mcp", "MCP_SECRET_VAULTS2")
        assert response.status_code == 422 and response.json()["detail"] == REFUSAL
        assert http.get("/api/mcp/status").json()["servers"] == []
