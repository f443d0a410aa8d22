"""The /api/mcp HTTP API: pydantic bodies, clear errors, nothing secret in answers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from albert.cloudflare.sql import WorkersSql
from albert.mcp.alarm_port import LoopAlarm
from albert.mcp.api import McpApi
from albert.mcp.config_store import McpConfigStore
from albert.mcp.manager import McpManager
from albert.mcp.secret_binding import SecretBinding, SecretRule
from albert.web import HttpRequest, HttpResponse
from tests.albert.mcp.conftest import fast_settings, now_ms


@pytest.fixture
async def api(sql: WorkersSql) -> AsyncIterator[McpApi]:
    settings = fast_settings(
        MCP_DEFAULT_SERVER_URL="http://127.0.0.1:9/mcp",  # nothing listens there
        MCP_MAX_SERVERS="2",
        MCP_RETRY_ATTEMPTS="0",
    )
    store = McpConfigStore(sql, settings, now_ms)
    alarm = LoopAlarm()
    rule = SecretRule(origins=["http://127.0.0.1:9"], tenants=["default"])
    secrets = SecretBinding({"MCP_SECRET_FILES": rule}, "default", {"MCP_SECRET_FILES": "f"}.get)
    manager = McpManager(
        store=store, settings=settings, local_tools=[], alarms=alarm, secrets=secrets
    )
    alarm.bind(manager.on_alarm)
    yield McpApi(store, manager, settings, secrets=secrets)
    await manager.close()
    alarm.close()


async def call(api: McpApi, method: str, path: str, body: Any = None) -> HttpResponse:
    raw = b"" if body is None else json.dumps(body).encode()
    return await api.handle(HttpRequest(method=method, path=path, body=raw))


def payload(response: HttpResponse) -> Any:
    return json.loads(response.body)


async def test_list_add_replace_and_delete(api: McpApi) -> None:
    listed = payload(await call(api, "GET", "/api/mcp/servers"))
    assert [(s["name"], s["source"]) for s in listed["servers"]] == [("vaults", "default")]

    body = {
        "name": "files",
        "url": "http://127.0.0.1:9/other",
        "headers": {"X-Api-Key": "k-123"},
        "secret_ref": "MCP_SECRET_FILES",
    }
    made = await call(api, "POST", "/api/mcp/servers", body)
    assert made.status == 201
    assert payload(made) == {
        "name": "files",
        "url": "http://127.0.0.1:9/other",
        "header_names": ["X-Api-Key"],
        "secret_ref": "MCP_SECRET_FILES",
        "enabled": True,
        "source": "client",
        "kind": None,
    }
    replaced = await call(
        api, "POST", "/api/mcp/servers", {**body, "enabled": False, "kind": "filesystem"}
    )
    assert replaced.status == 200 and payload(replaced)["enabled"] is False
    assert payload(replaced)["kind"] == "filesystem"
    bad = await call(api, "POST", "/api/mcp/servers", {**body, "kind": "bank"})
    assert bad.status == 422
    one = await call(api, "GET", "/api/mcp/servers/files")
    assert b"k-123" not in one.body and payload(one)["name"] == "files"

    status = payload(await call(api, "GET", "/api/mcp/status"))
    states = {s["name"]: s["state"] for s in status["servers"]}
    assert states["files"] == "disabled"

    assert (await call(api, "DELETE", "/api/mcp/servers/files")).status == 204
    assert (await call(api, "DELETE", "/api/mcp/servers/files")).status == 404
    gone = payload(await call(api, "GET", "/api/mcp/status"))
    assert [s["name"] for s in gone["servers"]] == ["vaults"]


async def test_the_default_server_cannot_be_deleted_but_can_be_shadowed(api: McpApi) -> None:
    refused = await call(api, "DELETE", "/api/mcp/servers/vaults")
    assert refused.status == 409 and payload(refused)["error"] == "read_only"
    off = {"name": "vaults", "url": "http://127.0.0.1:9/mcp", "enabled": False}
    assert (await call(api, "POST", "/api/mcp/servers", off)).status == 201
    [view] = payload(await call(api, "GET", "/api/mcp/servers"))["servers"]
    assert view["source"] == "client" and view["enabled"] is False


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"name": "a", "url": "http://10.0.0.1/mcp"}, 422, "url_refused"),
        ({"name": "a", "url": "gopher://127.0.0.1/"}, 422, "url_refused"),
        ({"name": "A!", "url": "http://127.0.0.1:9/mcp"}, 422, "invalid_body"),
        ({"url": "http://127.0.0.1:9/mcp"}, 422, "invalid_body"),
        (
            {"name": "a", "url": "http://127.0.0.1:9/", "secret_ref": "MODEL_API_KEY"},
            422,
            "invalid_body",
        ),
    ],
)
async def test_bad_bodies_get_a_clear_error(
    api: McpApi, body: dict[str, Any], status: int, error: str
) -> None:
    response = await call(api, "POST", "/api/mcp/servers", body)
    assert (response.status, payload(response)["error"]) == (status, error)
    assert payload(response)["detail"]


async def test_limits_and_methods(api: McpApi) -> None:
    for name in ("one", "two"):
        made = await call(
            api, "POST", "/api/mcp/servers", {"name": name, "url": "http://127.0.0.1:9/"}
        )
        assert made.status == 201
    third = await call(
        api, "POST", "/api/mcp/servers", {"name": "three", "url": "http://127.0.0.1:9/"}
    )
    assert third.status == 409 and payload(third)["error"] == "too_many"
    assert (await call(api, "PUT", "/api/mcp/servers")).status == 405
    assert (await call(api, "POST", "/api/mcp/status")).status == 405
    assert (await call(api, "GET", "/api/mcp/nothing")).status == 404
    assert (await call(api, "DELETE", "/api/mcp/servers")).status == 400
    too_big = HttpRequest(method="POST", path="/api/mcp/servers", body=b"{" + b" " * 40_000 + b"}")
    assert (await api.handle(too_big)).status == 413
