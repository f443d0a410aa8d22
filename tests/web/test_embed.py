"""The chat embedded in a host product, in real Chromium: two loopback origins.

The host page is served by a second HTTP server on another port; it frames
`/embed?tenant=acme&host=<its origin>` and hands the chat a JWT signed with keys made
here (a real JWKS endpoint on loopback) over postMessage. A page of an origin the tenant
does not list cannot frame the chat, messages from another window or origin are ignored,
and sign-out returns the chat to a fresh anonymous session.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from albert.security_headers import API_HEADERS, PAGE_HEADERS
from tests.support.asgi_server import AsgiServer
from tests.support.identity_provider import AUDIENCE, ISSUER, IdentityProvider, new_key
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import ScriptedModelServer

TIMEOUT_MS = 10_000

# The host product's page: frames whatever `src` names, records every message from that
# frame, and lets the test post as the host (`post`), as another window of the host's
# origin (`postFromSibling`), or as a frame of another origin (`postFromStranger`).
HOST_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Host terminal</title></head>
<body>
<iframe id="chat" width="900" height="700"></iframe>
<iframe id="sibling" src="/blank"></iframe>
<iframe id="stranger"></iframe>
<script>
  const params = new URLSearchParams(location.search);
  const chat = document.getElementById("chat");
  const chatOrigin = new URL(params.get("src")).origin;
  window.received = [];
  window.addEventListener("message", (event) => {
    if (event.source === chat.contentWindow && event.origin === chatOrigin) {
      window.received.push(event.data);
    }
  });
  window.post = (message) => chat.contentWindow.postMessage(message, chatOrigin);
  window.postFromSibling = (message) => {
    const sibling = document.getElementById("sibling").contentWindow;
    // The sibling's own Function: the message is sent by that window, not by this one.
    new sibling.Function("target", "message", "origin", "target.postMessage(message, origin)")(
      chat.contentWindow, message, chatOrigin);
  };
  if (params.get("stranger")) document.getElementById("stranger").src = params.get("stranger");
  chat.src = params.get("src");
</script>
</body></html>
"""

# A frame of another origin inside the host page: posts to the chat frame, its sibling.
STRANGER_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"></head><body><script>
  const params = new URLSearchParams(location.search);
  window.addEventListener("message", (event) => {
    if (event.data && event.data.relay) {
      parent.frames[0].postMessage(event.data.relay, params.get("target"));
    }
  });
</script></body></html>
"""


async def pages(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The host's (and the stranger's) HTTP server."""
    if scope["type"] != "http":
        return
    body = {"/host": HOST_PAGE, "/stranger": STRANGER_PAGE}.get(scope["path"], "<!doctype html>")
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/html; charset=utf-8")],
        }
    )
    await send({"type": "http.response.body", "body": body.encode()})


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    with IdentityProvider(new_key("RS256", "rsa-1")) as provider:
        yield provider


@pytest.fixture(scope="module")
def host() -> Iterator[AsgiServer]:
    with AsgiServer(pages) as server:
        yield server


@pytest.fixture(scope="module")
def stranger() -> Iterator[AsgiServer]:
    """Another loopback origin, which the tenant does not list."""
    with AsgiServer(pages) as server:
        yield server


@pytest.fixture(scope="module")
def embed_runtime(
    tmp_path_factory: pytest.TempPathFactory,
    model: ScriptedModelServer,
    platform: AsgiServer,
    idp: IdentityProvider,
    host: AsgiServer,
) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("embed-runtime")
    tenants = {
        "acme": {
            "name": "Acme Terminal",
            "jwt_issuer": ISSUER,
            "jwt_audience": AUDIENCE,
            "jwks_url": idp.jwks_url,
            "embed_origins": [host.url],
        }
    }
    variables = {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": model.base_url,
        "MODEL_API_KEY": "test-key",
        "PLATFORM_API_URL": platform.url,
        "TENANTS": json.dumps(tenants),
        "MCP_CONNECT_WAIT_SECONDS": "0",
        "ANALYTICS_API_KEY": "",
    }
    with RuntimeProcess(state, variables) as process:
        yield process


def embed_url(runtime: RuntimeProcess, host_origin: str, tenant: str = "acme") -> str:
    return f"{runtime.url}/embed?tenant={tenant}&host={quote(host_origin, safe='')}"


def host_page_url(server: AsgiServer, src: str, stranger: str = "") -> str:
    url = f"{server.url}/host?src={quote(src, safe='')}"
    return url + (f"&stranger={quote(stranger, safe='')}" if stranger else "")


# --- what the server sends --------------------------------------------------------------


def test_the_embed_is_framable_by_the_listed_host_only(
    embed_runtime: RuntimeProcess, host: AsgiServer, stranger: AsgiServer
) -> None:
    page = httpx.get(embed_url(embed_runtime, host.url))
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.text == httpx.get(embed_runtime.url + "/").text  # the chat page itself
    policy = page.headers["content-security-policy"]
    assert policy == PAGE_HEADERS["content-security-policy"].replace(
        "frame-ancestors 'none'", f"frame-ancestors {host.url}"
    )
    assert "x-frame-options" not in page.headers
    assert page.headers["cache-control"] == "no-store"

    for url, status in [
        (embed_url(embed_runtime, stranger.url), 403),
        (embed_url(embed_runtime, host.url + "/"), 403),
        (embed_url(embed_runtime, host.url, tenant="default"), 403),
        (embed_url(embed_runtime, host.url, tenant="nobody"), 400),
        (f"{embed_runtime.url}/embed?tenant=acme", 400),
    ]:
        refused = httpx.get(url)
        assert refused.status_code == status, url
        for name, value in API_HEADERS.items():
            assert refused.headers[name] == value, (url, name)

    # Every other page keeps refusing every frame.
    for path in ("/", "/index.html", "/js/app.js"):
        response = httpx.get(embed_runtime.url + path)
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["content-security-policy"].endswith("frame-ancestors 'none'")
