"""The chat embedded in a host product, in real Chromium: two loopback origins.

The host page is served by a second HTTP server on another port; it frames
`/embed?tenant=acme&host=<its origin>` and hands the chat a JWT signed with keys made
here (a real JWKS endpoint on loopback) over postMessage. A page of an origin the tenant
does not list cannot frame the chat, messages from another window or origin are ignored,
and sign-out returns the chat to a fresh anonymous session.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from albert.security_headers import API_HEADERS, PAGE_HEADERS
from tests.support.asgi_server import AsgiServer
from tests.support.identity_provider import IdentityProvider, new_key
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer

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
    tenants = {"acme": idp.tenant(embed_origins=[host.url])}
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


def test_no_variant_of_the_embed_url_is_framable_by_anyone_else(
    embed_runtime: RuntimeProcess, host: AsgiServer, stranger: AsgiServer
) -> None:
    query = embed_url(embed_runtime, host.url).split("?", 1)[1]
    host_param = quote(host.url, safe="")
    stranger_param = quote(stranger.url, safe="")
    # Other spellings of the path: none is the worker's embed, so each must be an error
    # or a page that refuses every frame.
    for path in ("/embed/", "//embed", "/EMBED", "/%65mbed", "/%2fembed", "/embed;x", "/embed."):
        for method in ("GET", "HEAD"):
            response = httpx.request(method, f"{embed_runtime.url}{path}?{query}")
            assert response.status_code != 500, (path, method)
            assert response.headers.get("x-frame-options") == "DENY", (path, method)
            policy = response.headers["content-security-policy"]
            assert policy.endswith("frame-ancestors 'none'"), (path, method)
    # A parameter given twice: the server checks one value, the page would use another.
    for repeated in (
        f"tenant=default&tenant=acme&host={host_param}",
        f"tenant=acme&host={stranger_param}&host={host_param}",
    ):
        refused = httpx.get(f"{embed_runtime.url}/embed?{repeated}")
        assert refused.status_code == 400, repeated
        assert refused.headers["x-frame-options"] == "DENY"
    # Other methods are refused, with headers no page may frame.
    refused = httpx.post(embed_url(embed_runtime, host.url))
    assert refused.status_code == 405 and refused.headers["x-frame-options"] == "DENY"
    # Nor did any other answer become framable: errors, health, unknown files, OPTIONS.
    for method, path in [
        ("GET", "/nope"),
        ("GET", "/js/nope.js"),
        ("GET", "/api/nope"),
        ("GET", "/healthz"),
        ("OPTIONS", "/"),
        ("OPTIONS", "/embed"),
        ("DELETE", "/api/session"),
    ]:
        response = httpx.request(method, embed_runtime.url + path)
        assert response.status_code != 500, (method, path)
        assert response.headers.get("x-frame-options") == "DENY", (method, path)


# --- in the browser ---------------------------------------------------------------------


class HostTab:
    """The host page in a tab, and the chat frame inside it."""

    def __init__(self, context: Any, url: str) -> None:
        self.page = context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.goto(url)

    @property
    def chat(self) -> Any:
        frame = None
        for candidate in self.page.frames:
            if "/embed" in candidate.url:
                frame = candidate
        assert frame is not None, [f.url for f in self.page.frames]
        return frame

    def received(self) -> list[dict[str, Any]]:
        return list(self.page.evaluate("window.received"))

    def wait_received(self, count: int) -> list[dict[str, Any]]:
        self.page.wait_for_function(f"window.received.length >= {count}")
        return self.received()

    def threads(self) -> list[str]:
        return list(
            self.chat.eval_on_selector_all(
                "#thread-list .thread-open", "els => els.map(e => e.textContent)"
            )
        )

    def wait_threads(self, count: int) -> None:
        """Until the list shows `count` threads. (A selector, not wait_for_function: the
        frame's policy forbids the string evaluation that would poll it.)"""
        if count == 0:
            self.chat.wait_for_selector("#thread-list .thread", state="detached")
        else:
            self.chat.wait_for_selector(f"#thread-list .thread:nth-child({count})")
        assert len(self.threads()) == count

    def wait_session(self, kind: str) -> None:
        self.chat.wait_for_selector(f'body[data-session="{kind}"]')
        self.chat.wait_for_selector('#conn[data-state="live"]')

    def wait_ready(self) -> None:
        """Until the chat frame told the host it is ready and its page is up."""
        assert self.wait_received(1) == [{"type": "albert:ready"}]
        self.chat.wait_for_selector("body[data-ready=true]")

    def sign_in(self, jwt: str, user: str) -> None:
        """Post the host's JWT; the chat's next message says `user` is signed in."""
        seen = len(self.received())
        self.page.evaluate("t => window.post({type: 'albert:session', token: t})", jwt)
        replied = self.wait_received(seen + 1)[seen]
        assert replied == {"type": "albert:signed-in", "user_id": user}
        self.wait_session("user")


def user_threads(runtime: RuntimeProcess, jwt: str, make: str | None = None) -> list[str]:
    """The user's thread titles over the API (as another device), after making one."""
    with httpx.Client(base_url=runtime.url, timeout=20) as http:
        signed = http.post("/api/session", headers={"authorization": f"Bearer {jwt}"})
        assert signed.status_code == 201, signed.text
        auth = {"authorization": f"Bearer {signed.json()['token']}"}
        if make is not None:
            made = http.post("/api/threads", json={"title": make}, headers=auth)
            assert made.status_code in (200, 201), made.text
        listed = http.get("/api/threads", headers=auth)
        assert listed.status_code == 200, listed.text
        return [t["title"] for t in listed.json()["threads"]]


@pytest.mark.browser
def test_the_host_signs_the_user_in_and_out_over_post_message(
    browser: Any,
    embed_runtime: RuntimeProcess,
    model: ScriptedModelServer,
    idp: IdentityProvider,
    host: AsgiServer,
    stranger: AsgiServer,
) -> None:
    assert user_threads(embed_runtime, idp.token("auth0|trader-7"), make="Vault ideas") == [
        "Vault ideas"
    ]
    stranger_frame = f"{stranger.url}/stranger?target={quote(embed_runtime.url, safe='')}"
    context = browser.new_context()
    try:
        tab = HostTab(
            context, host_page_url(host, embed_url(embed_runtime, host.url), stranger_frame)
        )
        assert tab.wait_received(1) == [{"type": "albert:ready"}]
        tab.wait_session("anonymous")
        assert tab.threads() == []

        # Anonymous work in the frame, to be claimed at sign-in.
        model.script(Reply(text=["Anonymous ", "answer."]))
        tab.chat.fill("#input", "Before signing in")
        tab.chat.press("#input", "Enter")
        tab.chat.wait_for_selector('#turns > li.turn:nth-child(1)[data-state="done"]')
        assert len(tab.threads()) == 1

        # Ignored: a sibling window of the host's own origin, a frame of another origin,
        # and messages from the host of unknown shapes. Each carries a valid JWT of
        # another user, so taking any of them would show.
        intruder = idp.token("auth0|intruder")
        tab.page.evaluate(
            "m => window.postFromSibling(m)", {"type": "albert:session", "token": intruder}
        )
        tab.page.evaluate(
            "m => document.getElementById('stranger').contentWindow.postMessage(m, '*')",
            {"relay": {"type": "albert:session", "token": intruder}},
        )
        for odd in (
            {"type": "albert:session", "token": intruder, "extra": 1},
            {"type": "albert:session", "token": 42},
            {"type": "albert:session", "token": "not a jwt"},
            {"type": "albert:unknown", "token": intruder},
            [{"type": "albert:session", "token": intruder}],
            f'{{"type": "albert:session", "token": "{intruder}"}}',
        ):
            tab.page.evaluate("m => window.post(m)", odd)

        # The host's own message signs the user in: their threads, and the claimed one.
        jwt = idp.token("auth0|trader-7")
        tab.page.evaluate("t => window.post({type: 'albert:session', token: t})", jwt)
        replies = tab.wait_received(2)
        assert replies[1] == {"type": "albert:signed-in", "user_id": "auth0|trader-7"}
        tab.wait_session("user")
        tab.wait_threads(2)
        assert "Vault ideas" in tab.threads()
        tab.page.wait_for_timeout(500)  # room for a late (wrongly accepted) message
        assert tab.received() == replies[:2]

        # The JWT went nowhere but the one request: not to storage, not into the URL.
        stored = tab.chat.evaluate("JSON.stringify({...localStorage, ...sessionStorage})")
        assert jwt not in stored and jwt.split(".")[1] not in stored
        assert (
            jwt not in tab.chat.url and jwt.split(".")[1] not in embed_runtime.log_path.read_text()
        )

        # The conversation goes on in the account, over the socket.
        model.script(Reply(text=["Signed-in ", "answer."]))
        tab.chat.click("#new-thread")
        tab.chat.fill("#input", "After signing in")
        tab.chat.press("#input", "Enter")
        tab.chat.wait_for_selector('#turns > li.turn:nth-child(1)[data-state="done"]')
        assert "Signed-in answer." in tab.chat.inner_text("#turns")

        # A renewal keeps the user and the chat; a refused token says why.
        tab.page.evaluate(
            "t => window.post({type: 'albert:session', token: t})", idp.token("auth0|trader-7")
        )
        assert tab.wait_received(3)[2] == {"type": "albert:signed-in", "user_id": "auth0|trader-7"}
        assert "Signed-in answer." in tab.chat.inner_text("#turns")  # no switch, no reload
        forged = idp.token("auth0|trader-7", key=new_key("RS256", "rsa-1"))
        tab.page.evaluate("t => window.post({type: 'albert:session', token: t})", forged)
        failed = tab.wait_received(4)[3]
        assert failed["type"] == "albert:sign-in-failed" and failed["error"] == "unauthorized"
        assert len(tab.threads()) == 3

        # Sign-out: a fresh anonymous session, none of the user's threads.
        tab.page.evaluate("window.post({type: 'albert:sign-out'})")
        assert tab.wait_received(5)[4] == {"type": "albert:signed-out"}
        tab.wait_session("anonymous")
        tab.wait_threads(0)
        assert tab.errors == []
    finally:
        context.close()

    # The user's account kept everything: the claimed thread and the two of the frame;
    # the intruder was never signed in.
    assert len(user_threads(embed_runtime, idp.token("auth0|trader-7"))) == 3
    assert user_threads(embed_runtime, intruder) == []


def framing_refusal(page: Any, url: str) -> str:
    """Open a host page whose chat frame the browser must refuse; what it said."""
    with page.expect_console_message(
        lambda m: "frame-ancestors" in m.text, timeout=TIMEOUT_MS
    ) as message:
        page.goto(url)
    return str(message.value.text)


@pytest.mark.browser
def test_a_page_of_another_origin_cannot_frame_the_chat(
    browser: Any, embed_runtime: RuntimeProcess, host: AsgiServer, stranger: AsgiServer
) -> None:
    context = browser.new_context()
    try:
        cases = [
            # Names the listed host, framed by another origin: refused by the browser.
            (stranger, embed_url(embed_runtime, host.url), f"frame-ancestors {host.url}"),
            # Names itself: not listed, so the server's refusal, which nobody may frame.
            (stranger, embed_url(embed_runtime, stranger.url), "frame-ancestors 'none'"),
            # The standalone chat, even for the listed host.
            (stranger, embed_runtime.url + "/", "frame-ancestors 'none'"),
            (host, embed_runtime.url + "/", "frame-ancestors 'none'"),
        ]
        for server, src, directive in cases:
            page = context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            said = framing_refusal(page, host_page_url(server, src))
            assert "blocked" in said and f'"{directive}"' in said, (src, said)
            assert not [f for f in page.frames if f.url.startswith(embed_runtime.url)], src
            assert page.evaluate("window.received") == [], src
            page.close()
        # The same page of the listed host frames the embed (what the refusals differ in).
        HostTab(context, host_page_url(host, embed_url(embed_runtime, host.url))).wait_ready()
    finally:
        context.close()


@pytest.mark.browser
def test_an_ended_sign_in_asks_the_host_for_a_new_token(
    browser: Any, embed_runtime: RuntimeProcess, idp: IdentityProvider, host: AsgiServer
) -> None:
    context = browser.new_context()
    try:
        tab = HostTab(context, host_page_url(host, embed_url(embed_runtime, host.url)))
        tab.wait_ready()
        # A JWT about to end: the session made from it ends with it, and cannot be renewed
        # without the host.
        short = idp.token("auth0|short-lived", lifetime=7)
        tab.sign_in(short, "auth0|short-lived")
        expires = json.loads(idp_payload(short))["exp"]
        tab.page.wait_for_function(f"Date.now() / 1000 > {expires} - 5", polling=200)
        tab.chat.click("#new-thread")
        assert tab.wait_received(3)[2] == {"type": "albert:session-expired"}
        assert tab.threads() == []
        # The host's next token carries on as the same user.
        tab.sign_in(idp.token("auth0|short-lived"), "auth0|short-lived")
        tab.chat.click("#new-thread")
        tab.wait_threads(1)
        assert tab.received()[4:] == []
    finally:
        context.close()


@pytest.mark.browser
def test_a_revoked_sign_in_asks_the_host_again_and_shows_nothing_of_the_user(
    browser: Any, embed_runtime: RuntimeProcess, idp: IdentityProvider, host: AsgiServer
) -> None:
    context = browser.new_context()
    try:
        tab = HostTab(context, host_page_url(host, embed_url(embed_runtime, host.url)))
        tab.wait_ready()
        user = "auth0|revoked-in-frame"
        tab.sign_in(idp.token(user), user)
        tab.chat.click("#new-thread")
        tab.wait_threads(1)

        # The host signs the user out everywhere; the frame's socket is closed with 4003.
        revoked = httpx.post(
            f"{embed_runtime.url}/api/session/revoke",
            headers={"authorization": f"Bearer {idp.token(user)}"},
            timeout=20,
        )
        assert revoked.status_code == 200, revoked.text
        assert tab.wait_received(3)[2] == {"type": "albert:session-revoked"}
        tab.chat.wait_for_selector('body[data-session="revoked"]')
        tab.chat.wait_for_selector('#conn[data-state="paused"]')
        tab.wait_threads(0)
        # Nothing goes out as the user meanwhile, and the host is asked once, not again.
        tab.chat.click("#new-thread")
        tab.chat.wait_for_timeout(500)
        assert tab.threads() == [] and tab.received()[3:] == []
        # `iat` counts seconds: only a JWT issued after the revocation's second is new.
        time.sleep(max(0.0, revoked.json()["revoked_up_to"] / 1000 // 1 + 1 - time.time()) + 0.05)
        assert user_threads(embed_runtime, idp.token(user)) == ["New chat"]

        # The host still has the user signed in: its next JWT brings the account back.
        tab.sign_in(idp.token(user), user)
        tab.wait_threads(1)
        assert tab.errors == []
    finally:
        context.close()


def idp_payload(jwt: str) -> str:
    """The JSON payload of a JWT (for its `exp`)."""
    part = jwt.split(".")[1]
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode()
