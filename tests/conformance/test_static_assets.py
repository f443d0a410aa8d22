"""Static assets, their headers, the worker's own headers and `/embed`, on both runtimes.

Workers static assets serve `web/` before the worker runs, with `web/_headers` applied;
`run_worker_first` paths (/api/*, /healthz, /embed) go to the worker, which reads the
chat page through the ASSETS binding for `/embed` and sends it with headers of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from albert.security_headers import API_HEADERS, PAGE_HEADERS, embed_page_headers
from tests.support.runtime_process import RuntimeProcess

HOST = "https://terminal.acme.example"


@pytest.fixture(scope="module")
def runtime(
    tmp_path_factory: pytest.TempPathFactory, runtime_kind: str
) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp(f"assets-{runtime_kind}")
    variables = {
        "ALBERT_MODE": "local",
        "TENANTS": json.dumps({"acme": {"name": "Acme", "embed_origins": [HOST]}}),
    }
    with RuntimeProcess(state, variables, runtime=runtime_kind) as process:
        yield process


def test_assets_and_api_share_one_origin(runtime: RuntimeProcess) -> None:
    index = httpx.get(f"{runtime.url}/")
    assert index.status_code == 200
    assert index.headers["content-type"].startswith("text/html")
    assert "<title>" in index.text
    assert httpx.get(f"{runtime.url}/../pyproject.toml").status_code == 404
    assert httpx.get(f"{runtime.url}/healthz").json() == {"ok": True}
    session = httpx.post(f"{runtime.url}/api/session")
    assert session.status_code == 201 and session.json()["client_id"].startswith("c_")


@pytest.mark.parametrize(
    ("path", "location"),
    [("/index.html", "/"), ("/index", "/"), ("/index.html?a=1&b=%20", "/?a=1&b=%20")],
)
def test_other_spellings_of_the_page_redirect_to_it(
    runtime: RuntimeProcess, path: str, location: str
) -> None:
    response = httpx.get(runtime.url + path)
    assert response.status_code == 307
    assert response.headers["location"] == location
    assert response.headers["content-security-policy"] == PAGE_HEADERS["content-security-policy"]


@pytest.mark.parametrize("path", ["/css/", "/js", "/js/app", "/nope.html", "/js/app.js/"])
def test_a_path_that_names_no_file_goes_to_the_worker(runtime: RuntimeProcess, path: str) -> None:
    response = httpx.get(runtime.url + path)
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    assert response.headers["content-security-policy"] == API_HEADERS["content-security-policy"]


@pytest.mark.parametrize("path", ["/", "/js/app.js", "/js/boot.js", "/css/app.css"])
def test_every_page_and_asset_carries_the_policy(runtime: RuntimeProcess, path: str) -> None:
    response = httpx.get(runtime.url + path)
    assert response.status_code == 200
    for name, value in PAGE_HEADERS.items():
        assert response.headers[name] == value, name


def test_the_headers_file_itself_is_not_served(runtime: RuntimeProcess) -> None:
    assert httpx.get(runtime.url + "/_headers").status_code == 404


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/healthz"), ("POST", "/api/session"), ("GET", "/api/threads"), ("GET", "/api/x")],
)
def test_worker_responses_carry_the_api_headers(runtime: RuntimeProcess, method, path) -> None:
    response = httpx.request(method, runtime.url + path)
    for name, value in API_HEADERS.items():
        assert response.headers[name] == value, (path, name)


def test_the_embed_is_the_chat_page_framable_by_the_listed_host_only(
    runtime: RuntimeProcess,
) -> None:
    page = httpx.get(f"{runtime.url}/embed", params={"tenant": "acme", "host": HOST})
    assert page.status_code == 200, page.text
    assert page.text == httpx.get(f"{runtime.url}/").text
    assert page.headers["content-type"].startswith("text/html")
    for name, value in embed_page_headers(HOST).items():
        assert page.headers[name] == value, name
    # The static page's own headers are not mixed in: it may be framed by HOST.
    assert "x-frame-options" not in page.headers
    head = httpx.head(f"{runtime.url}/embed", params={"tenant": "acme", "host": HOST})
    assert head.status_code == 200 and head.content == b""

    other = httpx.get(f"{runtime.url}/embed", params={"tenant": "acme", "host": "https://x.test"})
    assert other.status_code == 403 and other.json()["error"] == "host_not_allowed"
    assert "frame-ancestors https://x.test" not in other.headers.get("content-security-policy", "")
    unknown = httpx.get(f"{runtime.url}/embed", params={"tenant": "nope", "host": HOST})
    assert unknown.status_code == 400 and unknown.json()["error"] == "unknown_tenant"


def test_an_oauth_callback_needs_a_state_our_key_made(runtime: RuntimeProcess) -> None:
    # No session token on this route: the state is all the router has, and a made-up one
    # stops there, before any object wakes (a real one is tested in tests/interop).
    callback = f"{runtime.url}/api/mcp/oauth/callback"
    made_up = httpx.get(callback, params={"state": f"{'a' * 64}.{'n' * 43}.{'m' * 22}"})
    assert made_up.status_code == 400 and made_up.json()["error"] == "invalid_state"
    assert httpx.get(callback).status_code == 400
    assert httpx.post(callback, params={"state": "x"}).status_code == 405
