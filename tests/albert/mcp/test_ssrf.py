"""SSRF rules for MCP server URLs: production refuses every non-public address."""

from __future__ import annotations

import pytest

from albert.mcp.ssrf import UrlRefused, check_url

REFUSED_IN_PRODUCTION = [
    "http://127.0.0.1:8080/mcp",
    "http://127.8.9.10/mcp",
    "http://10.0.0.1/mcp",
    "http://10.255.255.254/mcp",
    "http://172.16.0.1/mcp",
    "http://172.31.255.254/mcp",
    "http://192.168.1.10/mcp",
    "http://169.254.169.254/latest/meta-data",
    "http://[::1]:9000/mcp",
    "http://[fc00::1]/mcp",
    "http://[fd12:3456::1]/mcp",
    "http://[fe80::1]/mcp",
    "http://[::ffff:127.0.0.1]/mcp",
    "http://[::ffff:10.0.0.1]/mcp",
    "http://0.0.0.0/mcp",
    "http://localhost:8080/mcp",  # a DNS name that resolves to loopback
]


@pytest.mark.parametrize("url", REFUSED_IN_PRODUCTION)
async def test_production_refuses_non_public_addresses(url: str) -> None:
    with pytest.raises(UrlRefused) as err:
        await check_url(url, "production")
    assert "public" in str(err.value)


@pytest.mark.parametrize(
    "url", ["https://8.8.8.8/mcp", "http://172.32.0.1/mcp", "https://[2606:4700::1111]/"]
)
async def test_production_accepts_public_literals(url: str) -> None:
    await check_url(url, "production")


async def test_a_name_resolving_to_a_private_address_is_refused() -> None:
    async def resolver(host: str) -> list[str]:
        return {"internal.example": ["93.184.216.34", "10.1.2.3"]}[host]

    with pytest.raises(UrlRefused, match=r"'internal.example' resolves to 10\.1\.2\.3"):
        await check_url("https://internal.example/mcp", "production", resolver)


async def test_a_name_that_does_not_resolve_is_refused() -> None:
    async def resolver(host: str) -> list[str]:
        raise OSError("no such host")

    with pytest.raises(UrlRefused, match="does not resolve"):
        await check_url("https://nowhere.example/mcp", "production", resolver)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/mcp", "http://localhost:9/mcp", "http://[::1]:9/"]
)
async def test_local_mode_allows_loopback(url: str) -> None:
    await check_url(url, "local")


@pytest.mark.parametrize(
    "url", ["http://10.0.0.1/mcp", "http://192.168.0.2/", "http://169.254.1.1/"]
)
async def test_local_mode_still_refuses_private_networks(url: str) -> None:
    with pytest.raises(UrlRefused):
        await check_url(url, "local")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://8.8.8.8/mcp", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("https://user:pw@8.8.8.8/mcp", "credentials"),
        ("https:///mcp", "no host"),
        ("https://8.8.8.8:99999/mcp", "not a valid URL"),
    ],
)
async def test_malformed_urls_are_refused_with_a_reason(url: str, reason: str) -> None:
    with pytest.raises(UrlRefused, match=reason):
        await check_url(url, "production")
