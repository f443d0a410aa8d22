"""panva's `oidc-provider` (npm, pinned) guarding an MCP server, both on loopback.

The authorization server is `tests/support/oidc_provider.mjs` under the Node.js that
package.json brings, as a child process on a free port (restartable on the same port: it
keeps everything in memory, so a restart forgets every client and grant). The MCP server is
an `MCPServer` of the `mcp` SDK with `AuthSettings`, checking each bearer with the
provider's introspection endpoint (RFC 7662) as its resource server client, the token's
audience against its own URL and its scope `mcp`.

`browser_authorizes` plays the user: opens the authorization URL, signs in on the
provider's development login page, approves on its consent page, and follows the redirect
to the worker's callback.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from pydantic import AnyHttpUrl

from child_processes import ChildProcess, free_port
from tests.support.asgi_server import AsgiServer

PROJECT_DIR = Path(__file__).resolve().parents[2]

SCRIPT = Path(__file__).with_name("oidc_provider.mjs")
NODE = PROJECT_DIR / "node_modules" / ".bin" / "node"
PACKAGE = PROJECT_DIR / "node_modules" / "oidc-provider"
RESOURCE_CLIENT = "mcp-resource-server"
RESOURCE_SECRET = "introspection-secret-of-the-resource-server"
SCOPE = "mcp"
GUARDED_ANSWER = "oidc-guarded vault: 6.5% APY"
_FORM = re.compile(r'<form[^>]*action="(?P<action>[^"]+)"[^>]*>(?P<body>.*?)</form>', re.S)
_PROMPT = re.compile(r'name="prompt" value="(?P<prompt>[a-z]+)"')


def installed() -> bool:
    """Node.js and the package are there (scripts/bootstrap installs both)."""
    return NODE.exists() and (PACKAGE / "package.json").exists()


class OidcProvider:
    """The provider as a child process on its own port."""

    def __init__(
        self, resource: str, log_dir: Path, *, access_seconds: int, offline: bool = True
    ) -> None:
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self._env = {
            "PORT": str(self.port),
            "RESOURCE": resource,
            "INTROSPECTION_SECRET": RESOURCE_SECRET,
            "ACCESS_TOKEN_TTL": str(access_seconds),
            "OFFLINE": "1" if offline else "0",
        }
        self._log = log_dir / f"oidc-provider-{self.port}.log"
        self._child: ChildProcess | None = None

    def start(self) -> OidcProvider:
        self._child = ChildProcess(
            [str(NODE), str(SCRIPT)],
            name="oidc-provider",
            env=self._env,
            log_path=self._log,
        ).start()
        self._child.wait_ready(self._listening, timeout=30, port=self.port)
        return self

    def _listening(self) -> bool:
        try:
            return httpx.get(f"{self.issuer}/test/events", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            child.stop()

    def restart(self) -> None:
        """The same provider on the same port, with nothing it knew before."""
        self.stop()
        time.sleep(0.2)
        self.start()

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        """What the provider reported since it started, oldest first."""
        found = httpx.get(f"{self.issuer}/test/events", timeout=5).json()
        return [e for e in found if kind is None or e["event"] == kind]

    def revoke_everything(self) -> None:
        """The user withdraws every grant at the provider."""
        httpx.post(f"{self.issuer}/test/revoke", timeout=5).raise_for_status()


class IntrospectingVerifier:
    """The MCP server's token check: the provider's introspection, audience and scope."""

    def __init__(self, issuer: str, resource: str) -> None:
        self._endpoint = f"{issuer}/token/introspection"
        self._resource = resource

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx.AsyncClient(timeout=5) as http:
            try:
                answer = await http.post(
                    self._endpoint,
                    data={"token": token},
                    auth=(RESOURCE_CLIENT, RESOURCE_SECRET),
                )
            except httpx.HTTPError:
                return None  # the provider is down: nothing can be checked
        if answer.status_code != 200:
            return None
        body = answer.json()
        audience = body.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if not body.get("active") or self._resource not in audiences:
            return None
        return AccessToken(
            token=token,
            client_id=str(body.get("client_id")),
            scopes=str(body.get("scope") or "").split(),
            expires_at=body.get("exp"),
            resource=self._resource,
        )


@dataclass
class OidcGuarded:
    """The running pair: the provider and the MCP server it guards."""

    provider: OidcProvider
    mcp_url: str


@contextmanager
def oidc_guarded(
    log_dir: Path, *, access_seconds: int = 3600, offline: bool = True
) -> Iterator[OidcGuarded]:
    """oidc-provider and an MCP server that takes only its tokens, both running."""
    mcp_port = free_port()
    mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"
    provider = OidcProvider(mcp_url, log_dir, access_seconds=access_seconds, offline=offline)
    server = MCPServer(
        "oidc-guarded",
        token_verifier=IntrospectingVerifier(provider.issuer, mcp_url),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(provider.issuer),
            resource_server_url=AnyHttpUrl(mcp_url),
            required_scopes=[SCOPE],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def guarded_yield() -> str:
        """The yield only an authorized client may read."""
        return GUARDED_ANSWER

    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    provider.start()
    try:
        with AsgiServer(app, mcp_port, lifespan="on", graceful_shutdown_seconds=1):
            yield OidcGuarded(provider, mcp_url)
    finally:
        provider.stop()


async def browser_authorizes(url: str, callback_prefix: str, *, within: int = 8) -> str:
    """Sign in and consent at the provider as a user would; the callback URL it sends the
    browser to (not followed)."""
    async with httpx.AsyncClient(timeout=10) as browser:
        answer = await browser.get(url)
        for _ in range(within):
            if answer.is_redirect:
                location = urljoin(str(answer.url), answer.headers["location"])
                if location.startswith(callback_prefix):
                    return location
                answer = await browser.get(location)
                continue
            form = _FORM.search(answer.text)
            assert answer.status_code == 200 and form is not None, (
                answer.status_code,
                answer.text[:500],
            )
            prompt = _PROMPT.search(form["body"])
            assert prompt is not None, form["body"]
            fields = {"prompt": prompt["prompt"]}
            if prompt["prompt"] == "login":
                fields |= {"login": "alice", "password": "anything"}
            action = urljoin(str(answer.url), unescape(form["action"]))
            answer = await browser.post(action, data=fields)
    raise AssertionError(f"no redirect to the callback within {within} steps")
