"""MCP authorization (OAuth 2.1) for remote servers, on the `mcp` SDK's public auth pieces.

A server answers 401: the connection stops (`needs_authorization`, no retry loop) and
keeps the challenge. When the user presses Authorize, `start` runs, in order:
protected-resource metadata (RFC 9728, the URL from the challenge first) →
authorization-server metadata (RFC 8414, its issuer checked) → dynamic client
registration (RFC 7591, once per authorization server and redirect URI) → PKCE (S256),
and gives back the authorization URL the browser opens. The authorization server sends
the browser to the worker's callback; `finish` checks the state and `iss`, trades the
code for tokens (with the resource indicator, RFC 8707) and stores them in the object's
SQLite. `tokens_for` gives the connection its bearer, refreshed before it expires and
once more when the server refuses it.

Every URL a server or its metadata names is checked as an MCP URL is (albert.mcp.ssrf),
each answer is read up to a small cap, and nothing of the tokens leaves the object but
in the Authorization header to the server's own origin and in the refresh request to
the token endpoint. Imported only when a server asks for authorization (it loads `mcp`).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import quote, urlencode, urlsplit

import httpx2
from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError, PKCEParameters
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_client_registration_request,
    create_oauth_metadata_request,
    extract_field_from_www_auth,
    get_client_metadata_scopes,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    handle_registration_response,
    handle_token_response_scopes,
    issuers_match,
    validate_authorization_response_iss,
)
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url
from pydantic import AnyUrl

from albert.clock import Clock
from albert.mcp.oauth_state import new_nonce
from albert.mcp.oauth_store import (
    UNKNOWN_AUTHORIZATION,
    AuthorizationFailed,
    OAuthRecord,
    OAuthStore,
    PendingAuthorization,
)
from albert.mcp.pinned_transport import transport_for
from albert.mcp.ssrf import ConnectCheck, Resolver, UrlRefused, check_url

log = logging.getLogger(__name__)

# An authorization not finished within this long is refused at the callback.
PENDING_SECONDS = 600.0
# A token this close to its expiry is refreshed before it is sent.
REFRESH_MARGIN_SECONDS = 60.0
# Metadata, registrations and token answers are small; more is refused unread.
MAX_ANSWER_BYTES = 256 * 1024
REQUEST_SECONDS = 10.0
CLIENT_NAME = "Albert"
GRANT_TYPES = ["authorization_code", "refresh_token"]


class OAuthFlow:
    """The OAuth of one object's MCP servers: start, finish, and tokens for connections."""

    def __init__(
        self,
        store: OAuthStore,
        clock: Clock,
        mode: Literal["local", "production"],
        resolver: Resolver,
    ) -> None:
        self._store = store
        self._clock = clock
        self._mode = mode
        self._resolver = resolver
        # One refresh at a time per server: two requests seeing the same stale token
        # must not spend the refresh token twice (rotating servers revoke on reuse).
        self._refreshing: dict[str, asyncio.Lock] = {}

    def _now(self) -> float:
        return self._clock.now_ms() / 1000

    # --- start: discovery, registration, the authorization URL ------------------------

    async def start(
        self, name: str, url: str, redirect_uri: str, seal: Callable[[str], str]
    ) -> str:
        """Discover, register if needed, and return the URL the user authorizes at."""
        record = self._store.get(name, url) or OAuthRecord()
        async with self._client() as http:
            prm = await self._resource_metadata(http, url, record.challenge)
            resource = resource_url_from_server_url(url)
            if prm is not None and not check_resource_allowed(resource, str(prm.resource)):
                raise AuthorizationFailed(
                    f"the server's metadata names another resource ({str(prm.resource)[:120]})"
                )
            issuer = str(prm.authorization_servers[0]) if prm is not None else None
            metadata = await self._server_metadata(http, issuer, url)
            if "S256" not in (metadata.code_challenge_methods_supported or []):
                raise AuthorizationFailed("the authorization server does not offer PKCE (S256)")
            await self._check(str(metadata.authorization_endpoint))
            scope = get_client_metadata_scopes(
                _challenge_scope(record.challenge), prm, metadata, GRANT_TYPES
            )
            client = await self._client_info(http, record, metadata, redirect_uri, scope)
        pkce = PKCEParameters.generate()
        nonce = new_nonce()
        params = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "state": seal(nonce),
            "code_challenge": pkce.code_challenge,
            "code_challenge_method": "S256",
            "resource": resource,
        }
        if scope:
            params["scope"] = scope
        # Tokens the server still takes are kept until the new ones arrive: an
        # authorization the user abandons costs nothing.
        self._store.save(
            name,
            url,
            record.model_copy(
                update={
                    "resource": resource,
                    "issuer": str(metadata.issuer),
                    "metadata": metadata.model_dump(mode="json", exclude_none=True),
                    "client": client.model_dump(mode="json", exclude_none=True),
                    "pending": PendingAuthorization(
                        nonce=nonce,
                        verifier=pkce.code_verifier,
                        redirect_uri=redirect_uri,
                        scope=scope,
                        created_at=self._now(),
                    ),
                }
            ),
        )
        endpoint = str(metadata.authorization_endpoint)
        joiner = "&" if urlsplit(endpoint).query else "?"
        return f"{endpoint}{joiner}{urlencode(params, quote_via=quote)}"

    async def _resource_metadata(
        self, http: httpx2.AsyncClient, url: str, challenge: str | None
    ) -> ProtectedResourceMetadata | None:
        hinted = _challenge_field(challenge, "resource_metadata")
        for candidate in build_protected_resource_metadata_discovery_urls(hinted, url):
            response = await self._get(http, candidate)
            if response is None:
                continue
            found = await handle_protected_resource_response(response)
            if found is not None:
                return found
        # A server of the 2025-03-26 revision: its own origin is the authorization server.
        return None

    async def _server_metadata(
        self, http: httpx2.AsyncClient, issuer: str | None, url: str
    ) -> OAuthMetadata:
        for candidate in build_oauth_authorization_server_metadata_discovery_urls(issuer, url):
            response = await self._get(http, candidate)
            if response is None:
                continue
            go_on, metadata = await handle_auth_metadata_response(response)
            if metadata is not None:
                expected = issuer or _origin(url)
                if not issuers_match(str(metadata.issuer), expected):
                    raise AuthorizationFailed(
                        "the authorization server's metadata names another issuer"
                    )
                return metadata
            if not go_on:
                break
        raise AuthorizationFailed("no authorization server metadata was found for this server")

    async def _client_info(
        self,
        http: httpx2.AsyncClient,
        record: OAuthRecord,
        metadata: OAuthMetadata,
        redirect_uri: str,
        scope: str | None,
    ) -> OAuthClientInformationFull:
        """Our registration at this authorization server: the stored one, or a new one."""
        if record.client is not None and record.issuer is not None:
            known = OAuthClientInformationFull.model_validate(record.client)
            registered = {str(u) for u in known.redirect_uris or []}
            if issuers_match(record.issuer, str(metadata.issuer)) and redirect_uri in registered:
                return known
        if metadata.registration_endpoint is None:
            raise AuthorizationFailed(
                "the authorization server offers no dynamic client registration"
            )
        await self._check(str(metadata.registration_endpoint))
        request = create_client_registration_request(
            metadata,
            OAuthClientMetadata(
                redirect_uris=[AnyUrl(redirect_uri)],
                grant_types=GRANT_TYPES,
                response_types=["code"],
                client_name=CLIENT_NAME,
                scope=scope,
                token_endpoint_auth_method=_auth_method(metadata),
            ),
            str(metadata.issuer),
        )
        response = await self._send(http, request)
        try:
            return await handle_registration_response(response)
        except OAuthRegistrationError as exc:
            log.warning("client registration refused: %s", str(exc)[:300])
            raise AuthorizationFailed(
                f"the authorization server refused our registration (HTTP {response.status_code})"
            ) from None

    # --- finish: the callback ---------------------------------------------------------

    async def finish(self, nonce: str, query: dict[str, str]) -> str:
        """Trade the callback's code for tokens; the server's name when it worked."""
        found = self._store.pending(nonce)
        if found is None:
            raise AuthorizationFailed(UNKNOWN_AUTHORIZATION)
        name, url, record = found
        pending = record.pending
        assert pending is not None  # found by its nonce
        self._store.save(name, url, record.model_copy(update={"pending": None}))
        if self._now() - pending.created_at > PENDING_SECONDS:
            raise AuthorizationFailed("this authorization expired: press Authorize again")
        if "error" in query:
            reason = query.get("error_description") or query["error"]
            raise AuthorizationFailed(f"the authorization server said: {reason[:200]}")
        code = query.get("code")
        if not code:
            raise AuthorizationFailed("the callback carried no authorization code")
        metadata = OAuthMetadata.model_validate(record.metadata)
        try:
            validate_authorization_response_iss(query.get("iss"), metadata)
        except OAuthFlowError:
            raise AuthorizationFailed("the callback came from another issuer") from None
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": pending.redirect_uri,
            "code_verifier": pending.verifier,
            "resource": record.resource or resource_url_from_server_url(url),
        }
        token = await self._token_request(record, form)
        self._store.save(name, url, self._with_token(record, token, pending.scope))
        log.info("MCP server %s: authorized", name)
        return name

    # --- tokens for the connection ----------------------------------------------------

    async def access_token(self, name: str, url: str) -> str | None:
        """The bearer to send now (refreshed when close to expiry); None without one."""
        record = self._store.get(name, url)
        if record is None or record.access_token is None:
            return None
        expires_at = record.expires_at
        if expires_at is not None and expires_at - self._now() < REFRESH_MARGIN_SECONDS:
            return await self.refreshed(name, url, record.access_token)
        return record.access_token

    async def refreshed(self, name: str, url: str, stale: str) -> str | None:
        """A new bearer for one the server refused (or that is expiring); None when none
        can be had (then the user must authorize again)."""
        lock = self._refreshing.setdefault(name, asyncio.Lock())
        async with lock:
            record = self._store.get(name, url)
            if record is None or record.access_token is None:
                return None
            if record.access_token != stale:
                return record.access_token  # refreshed by another request meanwhile
            if record.refresh_token is None or record.metadata is None:
                self._store.save(name, url, record.without_tokens())
                return None
            form = {
                "grant_type": "refresh_token",
                "refresh_token": record.refresh_token,
                "resource": record.resource or resource_url_from_server_url(url),
            }
            try:
                token = await self._token_request(record, form)
            except AuthorizationFailed as exc:
                log.warning("MCP server %s: token refresh refused: %s", name, exc)
                self._store.save(name, url, record.without_tokens())
                return None
            updated = self._with_token(record, token, record.scope)
            self._store.save(name, url, updated)
            log.info("MCP server %s: access token refreshed", name)
            return updated.access_token

    def bearer(self, name: str, url: str) -> httpx2.Auth | None:
        """The connection's auth when the server has tokens stored; None otherwise."""
        record = self._store.get(name, url)
        if record is None or record.access_token is None:
            return None
        return BearerAuth(self, name, url)

    # --- HTTP ------------------------------------------------------------------------

    def _with_token(self, record: OAuthRecord, token: OAuthToken, scope: str | None) -> OAuthRecord:
        return record.model_copy(
            update={
                "access_token": token.access_token,
                # A server that does not rotate keeps the refresh token we have.
                "refresh_token": token.refresh_token or record.refresh_token,
                "expires_at": None if token.expires_in is None else self._now() + token.expires_in,
                "scope": token.scope or scope,
                "challenge": None,
                "pending": None,
            }
        )

    async def _token_request(self, record: OAuthRecord, form: dict[str, str]) -> OAuthToken:
        metadata = OAuthMetadata.model_validate(record.metadata)
        client = OAuthClientInformationFull.model_validate(record.client)
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
        }
        form = {**form, "client_id": client.client_id}
        method = client.token_endpoint_auth_method
        if client.client_secret and method == "client_secret_basic":
            pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif client.client_secret and method in (None, "client_secret_post"):
            form["client_secret"] = client.client_secret
        endpoint = str(metadata.token_endpoint)
        await self._check(endpoint)
        async with self._client() as http:
            request = http.build_request("POST", endpoint, data=form, headers=headers)
            response = await self._send(http, request)
        if response.status_code != 200:
            error = _error_code(response)
            raise AuthorizationFailed(
                f"the token endpoint refused the request (HTTP {response.status_code}"
                + (f", {error})" if error else ")")
            )
        try:
            return await handle_token_response_scopes(response)
        except (OAuthTokenError, ValueError):
            raise AuthorizationFailed("the token endpoint's answer is not a bearer token") from None

    def _client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            transport=transport_for(ConnectCheck(self._mode, self._resolver)),
            timeout=REQUEST_SECONDS,
            follow_redirects=False,
            headers={"Accept-Encoding": "identity"},
        )

    async def _check(self, url: str) -> None:
        try:
            await check_url(url, self._mode, self._resolver)
        except UrlRefused as exc:
            raise AuthorizationFailed(f"refused an authorization URL: {exc}") from None

    async def _get(self, http: httpx2.AsyncClient, url: str) -> httpx2.Response | None:
        """A metadata document, or None when that URL cannot be read (try the next)."""
        try:
            await self._check(url)
            return await self._send(http, create_oauth_metadata_request(url))
        except AuthorizationFailed:
            return None

    async def _send(self, http: httpx2.AsyncClient, request: httpx2.Request) -> httpx2.Response:
        """Send, and read the answer up to MAX_ANSWER_BYTES (a full, re-readable response)."""
        try:
            response = await http.send(request, stream=True)
            try:
                body = bytearray()
                async for chunk in response.aiter_raw():
                    body += chunk
                    if len(body) > MAX_ANSWER_BYTES:
                        raise AuthorizationFailed(
                            f"an authorization answer from {_origin(str(request.url))} is too large"
                        )
            finally:
                await response.aclose()
        except httpx2.HTTPError as exc:
            raise AuthorizationFailed(
                f"could not reach {_origin(str(request.url))} ({type(exc).__name__})"
            ) from None
        if response.headers.get("content-encoding", "identity") not in ("identity", ""):
            raise AuthorizationFailed("an authorization answer came compressed")
        return httpx2.Response(
            response.status_code, headers=response.headers, content=bytes(body), request=request
        )


class BearerAuth(httpx2.Auth):
    """Sends the stored bearer to the server's own origin, and refreshes it once on a 401."""

    def __init__(self, flow: OAuthFlow, name: str, url: str) -> None:
        self._flow = flow
        self._name = name
        self._url = url
        self._origin = _origin(url)

    async def async_auth_flow(self, request: httpx2.Request) -> Any:
        if _origin(str(request.url)) != self._origin:
            # Never to another origin, whatever the server points us at.
            yield request
            return
        token = await self._flow.access_token(self._name, self._url)
        if token is not None:
            request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code != 401 or token is None:
            return
        fresh = await self._flow.refreshed(self._name, self._url, token)
        if fresh is not None and fresh != token:
            request.headers["Authorization"] = f"Bearer {fresh}"
            yield request


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def _challenge_field(challenge: str | None, field: str) -> str | None:
    if not challenge:
        return None
    return extract_field_from_www_auth(
        httpx2.Response(401, headers={"WWW-Authenticate": challenge}), field
    )


def _challenge_scope(challenge: str | None) -> str | None:
    return _challenge_field(challenge, "scope")


AuthMethod = Literal["none", "client_secret_post", "client_secret_basic"]


def _auth_method(metadata: OAuthMetadata) -> AuthMethod:
    """How we authenticate at the token endpoint: a secret when the server takes one."""
    offered = metadata.token_endpoint_auth_methods_supported or ["client_secret_basic"]
    if "client_secret_basic" in offered:
        return "client_secret_basic"
    if "client_secret_post" in offered:
        return "client_secret_post"
    return "none"


def _error_code(response: httpx2.Response) -> str | None:
    """The OAuth `error` of a refusal (RFC 6749 §5.2), bounded, if it has one."""
    try:
        body = response.json()
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error[:60] if isinstance(error, str) else None
