"""Per-client server configs in the object's SQLite, and what the browser may see of them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from albert.cloudflare.sql import WorkersSql
from albert.mcp.config_store import McpConfigStore
from albert.mcp.configs import McpServerIn, McpServerView, MissingSecret
from albert.mcp.secret_binding import SecretBinding, SecretRule
from tests.albert.mcp.conftest import fast_settings, now_ms


def test_configs_survive_a_new_store_on_the_same_database(sql: WorkersSql) -> None:
    store = McpConfigStore(sql, fast_settings(), now_ms)
    store.put(McpServerIn(name="files", url="http://127.0.0.1:9/mcp", headers={"X-Team": "a"}))
    again = McpConfigStore(sql, fast_settings(), now_ms)  # migrations are applied once
    [config] = again.all()
    assert (config.name, config.url, config.headers, config.enabled) == (
        "files",
        "http://127.0.0.1:9/mcp",
        {"X-Team": "a"},
        True,
    )
    store.put(McpServerIn(name="files", url="http://127.0.0.1:10/mcp", enabled=False))
    [config] = again.all()
    assert config.url.endswith(":10/mcp") and not config.enabled
    assert again.delete("files") and not again.delete("files")
    assert again.all() == [] and not again.has_any()


def test_the_default_server_comes_from_settings_and_a_client_config_shadows_it(
    sql: WorkersSql,
) -> None:
    settings = fast_settings(
        MCP_DEFAULT_SERVER_URL="http://127.0.0.1:7/mcp", MCP_DEFAULT_SERVER_NAME="vaults"
    )
    store = McpConfigStore(sql, settings, now_ms)
    [default] = store.all()
    assert default.source == "default" and store.has_any()
    store.put(McpServerIn(name="vaults", url="http://127.0.0.1:8/mcp", enabled=False))
    [own] = store.all()
    assert own.source == "client" and own.url.endswith(":8/mcp") and not own.enabled


def test_secret_is_referenced_by_name_and_filled_in_only_when_connecting(sql: WorkersSql) -> None:
    store = McpConfigStore(sql, fast_settings(), now_ms)
    config = store.put(
        McpServerIn(
            name="paid",
            url="http://127.0.0.1:9/mcp",
            headers={"X-Plan": "pro"},
            secret_ref="MCP_SECRET_PAID",
        )
    )
    stored = sql.execute("SELECT * FROM mcp_servers")
    assert "s3cret" not in str(stored)
    rule = SecretRule(origins=["http://127.0.0.1:9"], tenants=["default"])
    bound = SecretBinding({"MCP_SECRET_PAID": rule}, "default", {"MCP_SECRET_PAID": "s3cret"}.get)
    headers = config.request_headers(bound)
    assert headers == {"X-Plan": "pro", "Authorization": "Bearer s3cret"}
    with pytest.raises(MissingSecret):
        config.request_headers(SecretBinding({"MCP_SECRET_PAID": rule}, "default", dict().get))
    view = McpServerView.of(config).model_dump_json()
    assert "s3cret" not in view and "pro" not in view
    assert McpServerView.of(config).header_names == ["X-Plan"]


@pytest.mark.parametrize(
    "body",
    [
        {"name": "Bad Name", "url": "http://127.0.0.1:9/mcp"},
        {"name": "ok", "url": "http://127.0.0.1:9/mcp", "secret_ref": "MODEL_API_KEY"},
        {"name": "ok", "url": "http://127.0.0.1:9/mcp", "headers": {"Content-Type": "x"}},
        {"name": "ok", "url": "http://127.0.0.1:9/mcp", "headers": {"X-A": "a\r\nb"}},
        {"name": "ok", "url": "http://127.0.0.1:9/mcp", "surprise": 1},
        {
            "name": "ok",
            "url": "http://127.0.0.1:9/mcp",
            "headers": {"authorization": "x"},
            "secret_ref": "MCP_SECRET_A",
        },
    ],
)
def test_invalid_bodies_are_refused(body: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        McpServerIn.model_validate(body)
