"""`/embed`: which requests get the framable chat page, and the headers of each answer."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, quote

import pytest

from albert.embed import EmbedPage, embed_page
from albert.security_headers import API_HEADERS, PAGE_HEADERS, embed_page_headers
from albert.settings import Settings
from albert.web import HttpRequest, HttpResponse

HOST = "https://terminal.acme.com"
OTHER = "https://partner.acme.com"


@pytest.fixture
def settings() -> Settings:
    tenants = {
        "acme": {"embed_origins": [HOST, OTHER]},
        "plain": {"name": "Plain"},
    }
    return Settings(ALBERT_MODE="production", TENANTS=json.dumps(tenants))


def request(query: dict[str, str], method: str = "GET") -> HttpRequest:
    return HttpRequest(method=method, path="/embed", query=query)


def test_a_listed_host_gets_the_page_framable_by_it_alone(settings: Settings) -> None:
    page = embed_page(request({"tenant": "acme", "host": HOST}), settings)
    assert isinstance(page, EmbedPage)
    assert (page.tenant, page.host_origin) == ("acme", HOST)
    policy = page.headers["content-security-policy"]
    assert policy.endswith(f"frame-ancestors {HOST}") and OTHER not in policy
    assert "x-frame-options" not in page.headers
    # Everything else of the page policy is as strict as on every other page.
    assert (
        policy.replace(f"frame-ancestors {HOST}", "frame-ancestors 'none'")
        == (PAGE_HEADERS["content-security-policy"])
    )
    for name in ("x-content-type-options", "referrer-policy", "permissions-policy"):
        assert page.headers[name] == PAGE_HEADERS[name]
    assert page.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(
    ("query", "status", "error"),
    [
        ({"tenant": "acme", "host": "https://evil.example"}, 403, "host_not_allowed"),
        ({"tenant": "acme", "host": HOST + "/"}, 403, "host_not_allowed"),
        ({"tenant": "acme", "host": HOST.upper()}, 403, "host_not_allowed"),
        ({"tenant": "acme", "host": f"{HOST}; frame-ancestors *"}, 403, "host_not_allowed"),
        ({"tenant": "acme"}, 400, "bad_request"),
        ({"tenant": "plain", "host": HOST}, 403, "host_not_allowed"),
        ({"host": HOST}, 403, "host_not_allowed"),  # the default tenant lists none
        ({"tenant": "nobody", "host": HOST}, 400, "unknown_tenant"),
    ],
)
def test_anything_else_is_an_error_no_page_may_frame(
    settings: Settings, query: dict[str, str], status: int, error: str
) -> None:
    answer = embed_page(request(query), settings)
    assert isinstance(answer, HttpResponse)
    assert answer.status == status and json.loads(answer.body)["error"] == error


def test_only_get_and_head(settings: Settings) -> None:
    answer = embed_page(request({"tenant": "acme", "host": HOST}, method="POST"), settings)
    assert isinstance(answer, HttpResponse) and answer.status == 405
    head = embed_page(request({"tenant": "acme", "host": HOST}, method="HEAD"), settings)
    assert isinstance(head, EmbedPage)


def test_every_other_response_stays_unframable() -> None:
    assert PAGE_HEADERS["x-frame-options"] == API_HEADERS["x-frame-options"] == "DENY"
    assert PAGE_HEADERS["content-security-policy"].endswith("frame-ancestors 'none'")
    assert "frame-ancestors 'none'" in API_HEADERS["content-security-policy"]
    headers = embed_page_headers(HOST)
    assert set(headers) == (set(PAGE_HEADERS) - {"x-frame-options"}) | {"cache-control"}


@pytest.mark.parametrize(
    "query_string",
    [
        f"tenant=plain&tenant=acme&host={quote(HOST, safe='')}",
        f"tenant=&tenant=acme&host={quote(HOST, safe='')}",
        f"tenant=acme&host=https%3A%2F%2Fevil.example&host={quote(HOST, safe='')}",
        f"tenant=acme&host&host={quote(HOST, safe='')}",
    ],
)
def test_a_repeated_tenant_or_host_is_refused(settings: Settings, query_string: str) -> None:
    # The page reads the first value of a parameter and the query dict keeps the last:
    # served, the page would trust a host, or run as a tenant, that was never checked.
    answer = embed_page(
        HttpRequest(
            method="GET",
            path="/embed",
            query=dict(parse_qsl(query_string)),
            query_string=query_string,
        ),
        settings,
    )
    assert isinstance(answer, HttpResponse)
    assert answer.status == 400 and json.loads(answer.body)["error"] == "bad_request"
