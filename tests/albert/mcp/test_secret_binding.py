"""The MCP_SECRETS binding: origins compared exactly, tenants, one refusal for all."""

from __future__ import annotations

import json

import pytest

from albert.mcp.secret_binding import (
    REFUSAL,
    SecretBinding,
    SecretRefused,
    origin_of,
    parse_secret_bindings,
)

RULES = parse_secret_bindings(
    json.dumps(
        {
            "MCP_SECRET_A": {"origins": ["https://mcp.example.com"], "tenants": ["acme"]},
            "MCP_SECRET_ANY": {"origins": ["http://127.0.0.1:9000/"], "tenants": ["*"]},
        }
    )
)
VALUES = {"MCP_SECRET_A": "a-value", "MCP_SECRET_ANY": "any-value"}.get


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://MCP.Example.com/mcp", "https://mcp.example.com"),
        ("https://mcp.example.com:443/x", "https://mcp.example.com"),
        ("https://mcp.example.com./mcp", "https://mcp.example.com"),
        ("http://mcp.example.com:80", "http://mcp.example.com"),
        ("https://mcp.example.com:8443/", "https://mcp.example.com:8443"),
        ("http://[::1]:9/", "http://[::1]:9"),
    ],
)
def test_origins_are_normalised(url: str, origin: str) -> None:
    assert origin_of(url) == origin


@pytest.mark.parametrize(
    "url",
    [
        "https://mcp.example.com/mcp",
        "https://MCP.EXAMPLE.COM:443/other/path?q=1",
    ],
)
def test_a_bound_origin_gets_the_secret(url: str) -> None:
    assert SecretBinding(RULES, "acme", VALUES).value_for("MCP_SECRET_A", url) == "a-value"


@pytest.mark.parametrize(
    ("name", "url", "tenant"),
    [
        ("MCP_SECRET_A", "http://mcp.example.com/mcp", "acme"),  # another scheme
        ("MCP_SECRET_A", "https://mcp.example.com:8443/mcp", "acme"),  # another port
        ("MCP_SECRET_A", "https://evil.mcp.example.com/mcp", "acme"),  # a subdomain
        ("MCP_SECRET_A", "https://mcp.example.com.evil.example/mcp", "acme"),
        ("MCP_SECRET_A", "https://mcp.example.com/mcp", "default"),  # another tenant
        ("MCP_SECRET_ANY", "http://127.0.0.1:9001/mcp", "acme"),
        ("MCP_SECRET_ANY", "http://localhost:9000/mcp", "acme"),  # same place, other origin
        ("MCP_SECRET_NONE", "https://mcp.example.com/mcp", "acme"),  # not bound
        ("MODEL_API_KEY", "https://mcp.example.com/mcp", "acme"),
    ],
)
def test_everything_else_is_the_same_refusal(name: str, url: str, tenant: str) -> None:
    with pytest.raises(SecretRefused) as refused:
        SecretBinding(RULES, tenant, VALUES).value_for(name, url)
    assert str(refused.value) == REFUSAL


def test_a_bound_secret_without_a_value_is_the_same_refusal() -> None:
    with pytest.raises(SecretRefused, match=REFUSAL):
        SecretBinding(RULES, "acme", lambda _n: None).value_for(
            "MCP_SECRET_A", "https://mcp.example.com/"
        )


@pytest.mark.parametrize(
    "raw",
    [
        '{"MODEL_API_KEY": {"origins": ["https://x.example"], "tenants": ["*"]}}',
        '{"MCP_SECRET_A": {"origins": [], "tenants": ["*"]}}',
        '{"MCP_SECRET_A": {"origins": ["https://x.example"], "tenants": []}}',
        '{"MCP_SECRET_A": {"origins": ["https://x.example/path"], "tenants": ["*"]}}',
        '{"MCP_SECRET_A": {"origins": ["ftp://x.example"], "tenants": ["*"]}}',
        '{"MCP_SECRET_A": {"origins": ["https://u@x.example"], "tenants": ["*"]}}',
        '{"MCP_SECRET_A": {"origins": ["https://x.example"], "tenants": ["*"], "extra": 1}}',
        "not json",
    ],
)
def test_a_binding_that_does_not_parse_binds_nothing(raw: str) -> None:
    with pytest.raises(ValueError):
        parse_secret_bindings(raw)
    binding = SecretBinding.from_setting(raw, "acme", lambda _n: "value")
    with pytest.raises(SecretRefused):
        binding.value_for("MCP_SECRET_A", "https://x.example/mcp")
