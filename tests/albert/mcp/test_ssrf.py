"""SSRF rules for MCP server URLs: production refuses every non-public address."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from albert.mcp.ssrf import UrlRefused, check_url, doh_resolver, resolver_for, system_resolver

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


# --- DNS over HTTPS (the production resolver: Workers have no system resolver) ------

FIXTURES = Path(__file__).parent / "fixtures"


def _doh(answers: dict[tuple[str, str], str | int]) -> httpx.AsyncClient:
    """A client whose DoH endpoint answers (name, type) from fixture files (or a status)."""

    def handle(request: httpx.Request) -> httpx.Response:
        assert request.headers["accept"] == "application/dns-json"
        key = (request.url.params["name"], request.url.params["type"])
        answer = answers.get(key, "doh_no_answer_aaaa.json")
        if isinstance(answer, int):
            return httpx.Response(answer)
        return httpx.Response(200, content=(FIXTURES / answer).read_bytes())

    return httpx.AsyncClient(transport=httpx.MockTransport(handle))


async def test_doh_resolves_public_names_and_they_pass() -> None:
    async with _doh({("example.com", "AAAA"): "doh_example_com_aaaa.json"}) as http:
        resolve = doh_resolver(http, "https://cloudflare-dns.com/dns-query")
        assert await resolve("example.com") == ["2606:2800:220:1:248:1893:25c8:1946"]
        await check_url("https://example.com/mcp", "production", resolve)


async def test_doh_name_pointing_at_loopback_is_refused() -> None:
    async with _doh({("rebind.example", "A"): "doh_loopback_a.json"}) as http:
        resolve = doh_resolver(http, "https://cloudflare-dns.com/dns-query")
        with pytest.raises(UrlRefused, match=r"resolves to 127\.0\.0\.1"):
            await check_url("https://rebind.example/mcp", "production", resolve)


@pytest.mark.parametrize("answer", ["doh_no_answer_aaaa.json", 400, 503])
async def test_doh_without_addresses_or_failing_refuses(answer: str | int) -> None:
    async with _doh({("gone.example", "A"): answer}) as http:
        resolve = doh_resolver(http, "https://cloudflare-dns.com/dns-query")
        with pytest.raises(UrlRefused, match="does not resolve"):
            await check_url("https://gone.example/mcp", "production", resolve)


def test_auto_uses_doh_in_production_and_the_system_resolver_locally() -> None:
    http = httpx.AsyncClient()
    assert resolver_for("auto", "local", http, "https://x/dns-query") is system_resolver
    assert resolver_for("system", "production", http, "https://x") is system_resolver
    assert resolver_for("auto", "production", http, "https://x") is not system_resolver
    assert resolver_for("doh", "local", http, "https://x") is not system_resolver


# --- IPv6 forms that carry an IPv4 address, and numbers that read as IPv4 -----------

NON_PUBLIC_V4 = [
    "127.0.0.1",
    "127.1.2.3",
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "192.0.0.8",
    "198.18.0.1",
]


def carrying_forms(v4: str) -> list[str]:
    """Every IPv6 spelling that carries `v4` by a transition mechanism."""
    import ipaddress

    n = int(ipaddress.IPv4Address(v4))
    hi, lo = n >> 16, n & 0xFFFF
    teredo_client = n ^ 0xFFFFFFFF
    forms = [
        f"::ffff:{v4}",
        f"::ffff:{hi:x}:{lo:x}",
        f"0:0:0:0:0:ffff:{v4}",
        f"::{v4}",  # IPv4-compatible
        f"::{hi:x}:{lo:x}",
        f"::ffff:0:{v4}",  # SIIT
        f"64:ff9b::{v4}",  # NAT64 well-known prefix
        f"64:ff9b::{hi:x}:{lo:x}",
        f"64:ff9b:1::{v4}",  # NAT64 local-use
        f"64:ff9b:1:{hi:x}:{lo:x}::",
        f"2002:{hi:x}:{lo:x}::",  # 6to4
        f"2002:{hi:x}:{lo:x}:1::1",
        # Teredo: server 65.54.227.120, client obfuscated in the low 32 bits
        f"2001:0:4136:e378:8000:63bf:{teredo_client >> 16:x}:{teredo_client & 0xFFFF:x}",
    ]
    return [f"http://[{form}]/mcp" for form in forms]


@pytest.mark.parametrize("url", [u for v4 in NON_PUBLIC_V4 for u in carrying_forms(v4)])
async def test_ipv6_forms_carrying_a_non_public_ipv4_are_refused_in_production(url) -> None:
    with pytest.raises(UrlRefused):
        await check_url(url, "production")


@pytest.mark.parametrize(
    "url",
    [
        "http://[::ffff:8.8.8.8]/mcp",
        "http://[64:ff9b::8.8.8.8]/mcp",
        "http://[2002:808:808::1]/mcp",
    ],
)
async def test_the_same_forms_carrying_a_public_ipv4_pass(url) -> None:
    await check_url(url, "production")


@pytest.mark.parametrize(
    "url",
    [u for v4 in ("10.0.0.1", "169.254.169.254") for u in carrying_forms(v4)],
)
async def test_local_mode_refuses_carried_private_addresses_too(url) -> None:
    with pytest.raises(UrlRefused):
        await check_url(url, "local")


@pytest.mark.parametrize(
    "host",
    [
        "2130706433",
        "0x7f000001",
        "0x7f.1",
        "0177.0.0.1",
        "0177.1",
        "127.1",
        "127.0.1",
        "127.000.000.001",
        "0x7F.0.0.1",
        "017700000001",
        "10.1",
        "1.2.3.4.5",
        "example.0x1",
        "localhost.123",
    ],
)
async def test_numbers_that_read_as_ipv4_are_refused(host: str) -> None:
    with pytest.raises(UrlRefused, match=r"dotted-decimal|not a public|non-public"):
        await check_url(f"http://{host}/mcp", "production", _never)


async def _never(host: str) -> list[str]:
    raise AssertionError(f"{host} should not be resolved")


@pytest.mark.parametrize(
    "url",
    [
        "http://１２７.０.０.１/mcp",  # full-width digits, mapped to 127.0.0.1 by IDNA
        "http://loc\u0430lhost/mcp",  # Cyrillic a
        "http://evil.example\\@127.0.0.1/mcp",
        "http://127.0.0.1\\.evil.example/mcp",
        "http://evil.example /mcp",
        "http://evil.example\t/mcp",
        "http://evil.example\x00.x/mcp",
        "http://@127.0.0.1/mcp",
        "http://[fe80::1%25eth0]/mcp",
        "http://exa_mple.com/mcp",
    ],
)
async def test_urls_a_parser_could_read_two_ways_are_refused(url: str) -> None:
    with pytest.raises(UrlRefused):
        await check_url(url, "production", _never)


SLOW_LOOKUPS = """
import asyncio, json, time
from albert.mcp.ssrf import system_resolver

async def main():
    loop = asyncio.get_running_loop()

    async def give_up(n):
        try:
            await asyncio.wait_for(system_resolver(f"mcp{n}.unanswered.test"), 0.2)
        except (TimeoutError, OSError):
            pass

    await asyncio.gather(*(give_up(n) for n in range(20)))
    started = time.monotonic()
    await loop.getaddrinfo("127.0.0.1", 80)  # the loop's own lookups, as a model connect's
    await asyncio.to_thread(lambda: None)
    print(json.dumps({"waited": time.monotonic() - started}))

asyncio.run(main())
"""


def test_lookups_of_unanswered_mcp_names_leave_the_loop_its_threads() -> None:
    """Twenty objects give up on a name whose lookup hangs 3 s: their lookups hold at most
    SYSTEM_LOOKUPS_AT_ONCE of the loop's threads, so its other work runs at once instead
    of queueing behind seconds of lookups."""
    project = Path(__file__).resolve().parents[3]
    slow = project / "tests" / "support" / "slow_dns"
    env = {
        **os.environ,
        "PYTHONPATH": f"{slow}:{project / 'src'}:{project}",
        "ALBERT_TEST_SLOW_DNS_SUFFIX": ".unanswered.test",
        "ALBERT_TEST_SLOW_DNS_SECONDS": "3",
    }
    done = subprocess.run(
        [sys.executable, "-c", SLOW_LOOKUPS], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # Queued behind the hanging lookups it would wait 3 s or more.
    assert json.loads(done.stdout)["waited"] < 1.5, done.stdout
