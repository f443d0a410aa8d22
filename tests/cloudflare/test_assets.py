"""The adapter that sends a static asset with the worker's headers (the embedded chat).

Against the local runtime's ASSETS binding (its `_headers` applied, as the platform may
do) and against a stand-in of the SDK's fetcher answer (`status`, `headers` as an
`email.message.Message`, `await bytes()`): either way the page goes out with exactly the
headers the core decided, and a missing file is a 502, never the platform's page.
"""

from __future__ import annotations

import json
import sys
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from albert.cloudflare.assets import asset_with_headers
from albert.embed import PAGE_PATH
from albert.security_headers import embed_page_headers
from tests.cloudflare import fakes

PROJECT = Path(__file__).resolve().parents[2]
INDEX = (PROJECT / "web" / "index.html").read_bytes()
HEADERS = embed_page_headers("https://terminal.acme.com")
URL = "https://albert.example/embed?tenant=acme&host=https%3A%2F%2Fterminal.acme.com"


class SdkAnswer:
    """What `env.ASSETS.fetch(url)` resolves to under the SDK (workers.FetchResponse)."""

    def __init__(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.status = status
        self._body = body
        self.headers = Message()
        for name, value in headers.items():
            self.headers[name] = value

    async def bytes(self) -> bytes:
        return self._body


class SdkAssets:
    """The SDK's wrapped Fetcher binding over a folder, answering as Workers assets do."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fetched: list[str] = []

    async def fetch(self, url: str) -> SdkAnswer:
        self.fetched.append(url)
        path = url.split("://", 1)[1].split("/", 1)[1].split("?")[0]
        target = self.root / (path or "index.html")
        if not target.is_file():
            return SdkAnswer(404, b"", {})
        return SdkAnswer(
            200,
            target.read_bytes(),
            {"Content-Type": "text/html; charset=utf-8", "X-Frame-Options": "DENY"},
        )


def header_map(headers: Any) -> dict[str, str]:
    items = headers.items() if hasattr(headers, "items") else headers
    return {str(k).lower(): str(v) for k, v in items}


async def test_on_cloudflare_the_page_goes_out_with_the_cores_headers_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, module in fakes.modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    assets = SdkAssets(PROJECT / "web")
    response = await asset_with_headers(assets, URL, PAGE_PATH, HEADERS)
    assert assets.fetched == ["https://albert.example/"]
    assert response.status == 200 and response.body == INDEX
    assert header_map(response.headers) == {**HEADERS, "content-type": "text/html; charset=utf-8"}

    head = await asset_with_headers(assets, URL, PAGE_PATH, HEADERS, head=True)
    assert head.status == 200 and head.body is None

    missing = await asset_with_headers(assets, URL, "/nope.html", HEADERS)
    assert missing.status == 502
    assert json.loads(missing.body)["error"] == "asset_unavailable"
    assert "frame-ancestors 'none'" in header_map(missing.headers)["content-security-policy"]


async def test_in_the_local_runtime_the_binding_serves_the_same_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from miniflare import install_shims
    from miniflare.config import load_config
    from miniflare.runtime import LocalAssets, LocalRuntime

    install_shims()
    for name in ("js", "pyodide", "pyodide.ffi", "workers"):
        module = sys.modules.get(name)
        if module is not None and "shims" not in (getattr(module, "__file__", "") or ""):
            monkeypatch.delitem(sys.modules, name)
    runtime = LocalRuntime(load_config(PROJECT), tmp_path)
    assets = LocalAssets(runtime)
    # The binding applies _headers as static assets do; the adapter sends none of them.
    raw = await assets.fetch("http://127.0.0.1:8787/")
    assert raw.headers.get("x-frame-options") == "DENY"
    response = await asset_with_headers(assets, URL, PAGE_PATH, HEADERS)
    assert response.status == 200 and response.body == INDEX
    assert header_map(response.headers) == {**HEADERS, "content-type": "text/html; charset=utf-8"}
    assert (await asset_with_headers(assets, URL, "/nope.html", HEADERS)).status == 502
