"""The TENANTS setting's embed origins: exact browser origins only, loopback HTTP locally."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from albert.auth.tenants import MAX_EMBED_ORIGINS, parse_tenants
from albert.settings import Settings


def tenants_with(origins: list[str], *, local: bool = False) -> list[str]:
    raw = json.dumps({"acme": {"embed_origins": origins}})
    return parse_tenants(raw, local=local)["acme"].embed_origins


def test_exact_https_origins_are_kept_as_written() -> None:
    origins = ["https://terminal.acme.com", "https://app.acme.io:8443", "https://[2001:db8::1]"]
    assert tenants_with(origins) == origins


def test_a_tenant_without_embed_origins_lists_none() -> None:
    tenants = parse_tenants(json.dumps({"acme": {}}))
    assert tenants["acme"].embed_origins == [] and tenants["default"].embed_origins == []


@pytest.mark.parametrize(
    ("origin", "says"),
    [
        ("https://*.acme.com", "exact origin"),
        ("https://terminal.acme.com/", "trailing slash"),
        ("https://terminal.acme.com/app", "path"),
        ("https://terminal.acme.com?x=1", "query"),
        ("https://terminal.acme.com#top", "fragment"),
        ("https://user@terminal.acme.com", "user"),
        ("HTTPS://Terminal.Acme.com", "lower case"),
        ("terminal.acme.com", "exact origin"),
        ("*", "exact origin"),
        ("null", "exact origin"),
        ("https://terminal.acme.com:443", "default port"),
        ("https://terminal.acme.com:70000", "port out of range"),
        ("http://terminal.acme.com", "must use https://"),
        ("http://10.0.0.5:8080", "must use https://"),
        ("ftp://terminal.acme.com", "exact origin"),
        ("https://terminal.acme.com; script-src *", "exact origin"),
        ("https://a.com https://b.com", "exact origin"),
    ],
)
def test_anything_but_an_exact_origin_is_refused_with_a_reason(origin: str, says: str) -> None:
    with pytest.raises(ValidationError) as caught:
        tenants_with([origin], local=True)
    message = str(caught.value)
    assert "embed_origins" in message and says in message, message


@pytest.mark.parametrize(
    "origin", ["http://127.0.0.1:5173", "http://localhost:3000", "http://[::1]:8080"]
)
def test_loopback_http_only_in_local_mode(origin: str) -> None:
    assert tenants_with([origin], local=True) == [origin]
    with pytest.raises(ValidationError, match="local mode only"):
        tenants_with([origin], local=False)


def test_the_mode_comes_from_the_settings() -> None:
    raw = json.dumps({"acme": {"embed_origins": ["http://127.0.0.1:5173"]}})
    assert Settings(ALBERT_MODE="local", TENANTS=raw).tenants()["acme"].embed_origins
    with pytest.raises(ValidationError, match="local mode only"):
        Settings(ALBERT_MODE="production", TENANTS=raw).tenants()


def test_duplicates_and_too_many_are_refused() -> None:
    with pytest.raises(ValidationError, match="twice"):
        tenants_with(["https://a.example", "https://a.example"])
    many = [f"https://h{i}.example" for i in range(MAX_EMBED_ORIGINS + 1)]
    with pytest.raises(ValidationError, match="at most"):
        tenants_with(many)
    assert len(tenants_with(many[:MAX_EMBED_ORIGINS])) == MAX_EMBED_ORIGINS
