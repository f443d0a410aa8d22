"""MCP authorization (OAuth 2.1) for remote servers, on the `mcp` SDK's public auth pieces.

A server answers 401: the connection stops (`needs_authorization`, no retry loop) and
keeps the challenge. When the user presses Authorize, `start` runs, in order:
protected-resource metadata (RFC 9728, the URL from the challenge first) →
authorization-server metadata (RFC 8414, its issuer checked) → dynamic client
registration (RFC 7591, once per authorization server and redirect URI, done again when
the server has forgotten it) → PKCE (S256), and gives back the authorization URL the
browser opens. The authorization server sends the browser to the worker's callback;
`finish` checks the state and `iss`, trades the code for tokens (with the resource
indicator, RFC 8707) and stores them in the object's SQLite. `access_token` gives the
connection its bearer, refreshed before it expires (or, with no refresh token, used until
it expires) and once more when the server refuses it.

Whatever an authorization server answers, a failure is an `AuthorizationFailed` in words a
user can act on: error bodies are parsed with a bounded depth and size, and a refresh that
fails for any reason drops the tokens, so the server waits in `needs_authorization` (with
the reason) instead of retrying.

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
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

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
from pydantic import AnyUrl, BaseModel, ConfigDict

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
from albert.protocol.display_text import clean_label

log = logging.getLogger(__name__)

# An authorization not finished within this long is refused at the callback.
PENDING_SECONDS = 600.0
# A token this close to its expiry is refreshed before it is sent.
REFRESH_MARGIN_SECONDS = 60.0
# Metadata, registrations and token answers are small; more is refused unread.
MAX_ANSWER_BYTES = 256 * 1024
# An error answer is a few fields; a longer one is not read for them.
MAX_ERROR_BYTES = 16 * 1024
REQUEST_SECONDS = 10.0
CLIENT_NAME = "Albert"
GRANT_TYPES = ["authorization_code", "refresh_token"]
# OIDC Core 11: a provider grants offline_access (so a refresh token) only with this prompt.
OFFLINE_SCOPE = "offline_access"
UNREADABLE = "the authorization server's answer could not be read"


class TokenRefused(AuthorizationFailed):
    """The token endpoint refused a request; `client_unknown` when it no longer knows our
    registration (`invalid_client`), which the next authorization then makes anew."""

    def __init__(self, message: str, *, client_unknown: bool) -> None:
        super().__init__(message)
        self.client_unknown = client_unknown


class OAuthError(BaseModel):
    """An OAuth error answer (RFC 6749 5.2, RFC 7591 3.2.2): the fields shown, if any."""

    model_config = ConfigDict(extra="ignore")

    error: str | None = None
    error_description: str | None = None


class RegistrationAccess(BaseModel):
    """Where a registration can be read back (RFC 7592), from the registration answer."""

    model_config = ConfigDict(extra="ignore")

    registration_client_uri: str | None = None
    registration_access_token: str | None = None


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
        try:
            return await self._start(name, url, redirect_uri, seal)
        except AuthorizationFailed:
            raise
        except Exception:
            # Metadata that passed its checks and still broke a step: the user gets words
            # (a 502 naming the cause), never a 500.
            log.exception("MCP server %s: the authorization could not begin", name)
            raise AuthorizationFailed(
                "the authorization server's metadata or answers could not be used"
            ) from None

    async def _start(
        self, name: str, url: str, redirect_uri: str, seal: Callable[[str], str]
    ) -> str:
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
                _challenge_scope(record.challenge), prm, metadata, _grant_types(metadata)
            )
            record = await self._client_info(http, record, metadata, redirect_uri, scope)
        client = OAuthClientInformationFull.model_validate(record.client)
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
            if OFFLINE_SCOPE in scope.split():
                # Without it a standard provider drops offline_access, so no refresh token.
                params["prompt"] = "consent"
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
        return authorization_url(str(metadata.authorization_endpoint), params)

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
    ) -> OAuthRecord:
        """The record with our registration at this authorization server: the stored one
        while the server still knows it, else a new one."""
        known = self._known_client(record, metadata, redirect_uri)
        if known is not None:
            # An authorization server that forgot a client shows the user an error page and
            # never calls back: the last authorization, made without tokens that would
            # prove the client known, never came back.
            unanswered = record.pending is not None and record.access_token is None
            if not unanswered and await self._still_registered(http, record):
                return record
            # Register anew, keeping this registration should that be refused.
            log.info("registering again at %s", _origin(str(metadata.issuer)))
        if metadata.registration_endpoint is None:
            if known is not None:
                return record
            raise AuthorizationFailed(
                "the authorization server offers no dynamic client registration"
            )
        await self._check(str(metadata.registration_endpoint))
        try:
            return await self._register(http, record, metadata, redirect_uri, scope)
        except AuthorizationFailed:
            if known is None:
                raise
            return record

    @staticmethod
    def _known_client(
        record: OAuthRecord, metadata: OAuthMetadata, redirect_uri: str
    ) -> OAuthClientInformationFull | None:
        """The stored registration, if it was made at this issuer for this redirect URI."""
        if record.client is None or record.issuer is None:
            return None
        known = OAuthClientInformationFull.model_validate(record.client)
        registered = {str(u) for u in known.redirect_uris or []}
        if issuers_match(record.issuer, str(metadata.issuer)) and redirect_uri in registered:
            return known
        return None

    async def _still_registered(self, http: httpx2.AsyncClient, record: OAuthRecord) -> bool:
        """False when the server says it no longer knows our registration (RFC 7592 read:
        401 or 404); True when it knows it, or offers no way to ask, or cannot answer now."""
        uri, token = record.registration_uri, record.registration_token
        if uri is None or token is None:
            return True
        try:
            await self._check(uri)
            request = http.build_request(
                "GET",
                uri,
                headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            )
            response = await self._send(http, request)
        except AuthorizationFailed:
            return True
        return response.status_code not in (401, 404)

    async def _register(
        self,
        http: httpx2.AsyncClient,
        record: OAuthRecord,
        metadata: OAuthMetadata,
        redirect_uri: str,
        scope: str | None,
    ) -> OAuthRecord:
        """A new registration (RFC 7591); without the scope when the server refuses it."""
        attempts = [scope, None] if scope else [None]
        for attempt, asked in enumerate(attempts):
            request = create_client_registration_request(
                metadata,
                OAuthClientMetadata(
                    redirect_uris=[AnyUrl(redirect_uri)],
                    grant_types=_grant_types(metadata),
                    response_types=["code"],
                    client_name=CLIENT_NAME,
                    scope=asked,
                    token_endpoint_auth_method=_auth_method(metadata),
                ),
                str(metadata.issuer),
            )
            response = await self._send(http, request)
            try:
                client = await handle_registration_response(response)
            except OAuthRegistrationError:
                error, description = oauth_error(response)
                log.warning(
                    "client registration refused (HTTP %s, %s: %s)",
                    response.status_code,
                    error,
                    description,
                )
                # A provider that lists no such scope refuses a registration asking for it
                # (scope is optional in RFC 7591): the same registration without it.
                if response.status_code == 400 and attempt + 1 < len(attempts):
                    continue
                raise AuthorizationFailed(
                    "the authorization server refused our registration "
                    + _status_words(response.status_code, error, description)
                ) from None
            access = _registration_access(response)
            return record.model_copy(
                update={
                    "client": client.model_dump(mode="json", exclude_none=True),
                    "registration_uri": access.registration_client_uri,
                    "registration_token": access.registration_access_token,
                }
            )
        raise AssertionError("unreachable: the last attempt raises or returns")

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
            reason = _shown(query.get("error_description") or query["error"], 200)
            raise AuthorizationFailed(
                f"the authorization server said: {reason}"
                if reason
                else "the authorization server refused the authorization"
            )
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
        try:
            token = await self._token_request(record, form, "to issue tokens")
        except TokenRefused as exc:
            if exc.client_unknown:
                self._store.save(
                    name, url, record.model_copy(update={"pending": None}).without_client()
                )
            raise
        except AuthorizationFailed:
            raise
        except Exception:
            log.exception("MCP server %s: the token answer could not be used", name)
            raise AuthorizationFailed(UNREADABLE) from None
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
        if expires_at is None or expires_at - self._now() >= REFRESH_MARGIN_SECONDS:
            return record.access_token
        if record.refresh_token is not None:
            return await self.refreshed(name, url, record.access_token)
        if expires_at > self._now():
            # Nothing to renew it with: it serves until it expires.
            return record.access_token
        self._store.save(
            name,
            url,
            record.without_tokens(
                "access expired, and the authorization server gave no refresh token to renew it"
            ),
        )
        return None

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
                self._store.save(
                    name,
                    url,
                    record.without_tokens(
                        "the server no longer accepts the access token, and there is no "
                        "refresh token to renew it"
                    ),
                )
                return None
            form = {
                "grant_type": "refresh_token",
                "refresh_token": record.refresh_token,
                "resource": record.resource or resource_url_from_server_url(url),
            }
            try:
                token = await self._token_request(record, form, "to renew access")
            except AuthorizationFailed as exc:
                log.warning("MCP server %s: token refresh refused: %s", name, exc)
                dropped = record.without_tokens(str(exc))
                if isinstance(exc, TokenRefused) and exc.client_unknown:
                    dropped = dropped.without_client()
                self._store.save(name, url, dropped)
                return None
            except Exception:
                # Whatever went wrong, the user can go on by authorizing again: never a
                # connection failure that retries for ever.
                log.exception("MCP server %s: token refresh failed", name)
                self._store.save(
                    name, url, record.without_tokens(f"renewing access failed: {UNREADABLE}")
                )
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
                "ended": None,
            }
        )

    async def _token_request(
        self, record: OAuthRecord, form: dict[str, str], purpose: str
    ) -> OAuthToken:
        """POST to the token endpoint; `purpose` names what was asked, in the refusal."""
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
            error, description = oauth_error(response)
            raise TokenRefused(
                f"the authorization server refused {purpose} "
                + _status_words(response.status_code, error, description),
                client_unknown=error == "invalid_client",
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


def oauth_error(response: httpx2.Response) -> tuple[str | None, str | None]:
    """The `error` and `error_description` of an OAuth error answer, as text fit to show.

    The body is parsed with a bounded depth (pydantic's JSON parser) and only up to
    MAX_ERROR_BYTES: a server answering 200,000 nested brackets gets no traceback out of
    us, only no reason."""
    body = response.content
    if len(body) > MAX_ERROR_BYTES:
        return None, None
    try:
        parsed = OAuthError.model_validate_json(body)
    except ValueError:
        return None, None
    return _shown(parsed.error, 60), _shown(parsed.error_description, 200)


def _shown(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    cleaned = clean_label(text[: limit * 4])[:limit]
    return cleaned or None


def _status_words(status: int, error: str | None, description: str | None) -> str:
    """`(HTTP 400, invalid_grant: grant request is invalid)`, from what the server said."""
    said = ": ".join(part for part in (error, description) if part)
    return f"(HTTP {status}, {said})" if said else f"(HTTP {status})"


def _grant_types(metadata: OAuthMetadata) -> list[str]:
    """The grants we register for: refresh only where the server lists it (a provider that
    issues no refresh token refuses a registration asking for that grant)."""
    supported = metadata.grant_types_supported
    return [g for g in GRANT_TYPES if supported is None or g in supported or g == GRANT_TYPES[0]]


def _registration_access(response: httpx2.Response) -> RegistrationAccess:
    try:
        return RegistrationAccess.model_validate_json(response.content)
    except ValueError:
        return RegistrationAccess()


def authorization_url(endpoint: str, params: dict[str, str]) -> str:
    """The authorization endpoint with our parameters in its query.

    The endpoint's own query is kept (RFC 6749 3.1) without any parameter of ours, so no
    value the metadata wrote can stand before ours; a fragment, which an endpoint must not
    have, is dropped, or the parameters would follow it and never reach the server."""
    parts = urlsplit(endpoint)
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in params]
    query = urlencode([*kept, *params.items()], quote_via=quote)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
