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
from tests.albert.mcp.test_manager import wait_state
from tests.support.mcp_test_server import InProcessMcpServer


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
        "secret_header": "Authorization",
        "secret_prefix": "Bearer ",
        "enabled": True,
        "source": "client",
        "kind": None,
    }
    # Where the secret goes is shown (never its value), so an edit can send it back.
    custom = {**body, "secret_header": "X-Files-Key", "secret_prefix": ""}
    shown = payload(await call(api, "POST", "/api/mcp/servers", custom))
    assert (shown["secret_header"], shown["secret_prefix"]) == ("X-Files-Key", "")
    assert payload(await call(api, "POST", "/api/mcp/servers", body))["secret_header"] == (
        "Authorization"
    )
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


async def test_a_refused_body_says_which_field_is_at_fault(api: McpApi) -> None:
    bad_name = await call(api, "POST", "/api/mcp/servers", {"name": "A!", "url": "http://x/"})
    fields = payload(bad_name)["fields"]
    assert [f["field"] for f in fields] == ["name"]
    assert "lower-case letters" in fields[0]["message"]
    private = {"name": "a", "url": "http://10.0.0.1/mcp"}
    refused = payload(await call(api, "POST", "/api/mcp/servers", private))
    assert refused["fields"] == [{"field": "url", "message": refused["detail"]}]
    reserved = {"name": "a", "url": "http://127.0.0.1:9/", "headers": {"Host": "h"}}
    header = payload(await call(api, "POST", "/api/mcp/servers", reserved))
    assert [f["field"] for f in header["fields"]] == ["headers"]
    assert "set by the client itself" in header["fields"][0]["message"]
    # An error that is not about a body has no `fields` at all.
    missing = payload(await call(api, "GET", "/api/mcp/servers/nothing"))
    assert missing == {"error": "not_found", "detail": "no such MCP server"}


async def test_reconnect_starts_afresh_and_an_unknown_server_is_404(api: McpApi) -> None:
    body = {"name": "down", "url": "http://127.0.0.1:9/mcp"}
    assert (await call(api, "POST", "/api/mcp/servers", body)).status == 201
    manager = api.manager
    before = manager._servers["down"]
    answer = await call(api, "POST", "/api/mcp/servers/down/reconnect")
    assert answer.status == 202
    assert payload(answer)["name"] == "down"
    assert payload(answer)["state"] in ("connecting", "reconnecting", "failed")
    assert manager._servers["down"] is not before
    assert manager._servers["down"].recovery.attempts == 0
    # The deployment's server can be reconnected too.
    assert (await call(api, "POST", "/api/mcp/servers/vaults/reconnect")).status == 202
    unknown = await call(api, "POST", "/api/mcp/servers/nothing/reconnect")
    assert (unknown.status, payload(unknown)["error"]) == (404, "not_found")
    wrong = await call(api, "GET", "/api/mcp/servers/down/reconnect")
    assert wrong.status == 405


def stored_headers(api: McpApi, name: str) -> dict[str, str]:
    config = api._store.get(name)
    assert config is not None
    return dict(config.headers)


async def test_keep_headers_keeps_stored_values_only_on_the_same_origin(api: McpApi) -> None:
    body = {
        "name": "keyed",
        "url": "http://127.0.0.1:9/mcp",
        "headers": {"X-Api-Key": "k-123", "X-Team": "blue"},
    }
    assert (await call(api, "POST", "/api/mcp/servers", body)).status == 201
    # An edit on the same origin keeps one value unseen, drops one, adds one.
    edit = {
        "name": "keyed",
        "url": "http://127.0.0.1:9/other",
        "headers": {"X-Extra": "e"},
        "keep_headers": ["x-api-key"],
    }
    edited = await call(api, "POST", "/api/mcp/servers", edit)
    assert edited.status == 200, edited.body
    assert payload(edited)["header_names"] == ["X-Api-Key", "X-Extra"]
    assert b"k-123" not in edited.body
    assert stored_headers(api, "keyed") == {"X-Api-Key": "k-123", "X-Extra": "e"}
    # Another origin (host, port or scheme): no stored value goes there.
    for url in ("http://localhost:9/mcp", "http://127.0.0.1:10/mcp", "https://127.0.0.1:9/"):
        moved = await call(api, "POST", "/api/mcp/servers", {**edit, "url": url})
        error = payload(moved)
        assert (moved.status, error["error"]) == (422, "headers_not_kept"), url
        assert error["fields"][0]["field"] == "keep_headers"
        assert "origin changed" in error["detail"]
    assert stored_headers(api, "keyed") == {"X-Api-Key": "k-123", "X-Extra": "e"}
    # A name not stored, one both kept and given, or no stored server: refused.
    for keep, headers, name in (
        (["X-Gone"], {}, "keyed"),
        (["X-Extra"], {"x-extra": "new"}, "keyed"),
        (["X-Api-Key"], {}, "fresh"),
        (["X-Api-Key"], {}, "vaults"),
    ):
        answer = await call(
            api,
            "POST",
            "/api/mcp/servers",
            {"name": name, "url": "http://127.0.0.1:9/", "headers": headers, "keep_headers": keep},
        )
        assert answer.status == 422, (keep, name)
        assert payload(answer)["fields"][0]["field"] == "keep_headers"
    # Without keep_headers an edit replaces every header, as before.
    plain = {"name": "keyed", "url": "http://127.0.0.1:9/mcp"}
    assert (await call(api, "POST", "/api/mcp/servers", plain)).status == 200
    assert stored_headers(api, "keyed") == {}


async def test_a_ready_server_lists_its_tools_under_their_offered_names(
    api: McpApi, vaults: InProcessMcpServer
) -> None:
    body = {"name": "mine", "url": vaults.url}
    assert (await call(api, "POST", "/api/mcp/servers", body)).status == 201
    await wait_state(api.manager, "mine", "ready")
    # A turn's offer names them: the platform's names are taken, so those are renamed.
    await api.manager.tools_for_turn()
    [mine] = [
        s
        for s in payload(await call(api, "GET", "/api/mcp/status"))["servers"]
        if s["name"] == "mine"
    ]
    assert "mine__search_vaults" in mine["tool_names"]
    assert "search_vaults" not in mine["tool_names"]
    assert "search_vaults → mine__search_vaults" in mine["renamed"]
    assert len(mine["tool_names"]) == mine["tools"] - len(mine["quarantined"])
    # A server that is not ready lists none.
    down = {"name": "down", "url": "http://127.0.0.1:9/mcp"}
    assert (await call(api, "POST", "/api/mcp/servers", down)).status == 201
    statuses = payload(await call(api, "GET", "/api/mcp/status"))["servers"]
    assert next(s for s in statuses if s["name"] == "down")["tool_names"] == []
