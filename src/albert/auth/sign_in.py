"""`POST /api/session` with the host product's JWT: a session for the signed-in user.

The JWT (the bearer) is verified (albert.auth.host_jwt) and exchanged for a session
token of ours that names the user, so the object is `"{tenant}/user/{sub}"` on every
device. The session lives no longer than the JWT: a host that signs a user out stops
issuing tokens, and Albert's session ends with the last one.

With `claim_token` (this browser's anonymous session token, verified like any other),
the anonymous object's threads and MCP servers move into the user's object once
(albert.auth.claim); the browser keeps its client id. A claim that cannot be made
(another tenant, a bad token) is reported in the response; the sign-in still succeeds.
"""

from __future__ import annotations

from albert.auth.bearer import bearer_token
from albert.auth.claim import ChatObjects, claim_anonymous_work
from albert.auth.errors import JwksUnavailable
from albert.auth.identify import Authenticator, refusal
from albert.auth.session_api import MAX_SESSION_BODY, SESSION_CHECK_PATH
from albert.auth.tenants import PublicTenant
from albert.auth.tokens import Identity, TokenError, issue_token, new_client_id, verify_token
from albert.protocol.http import ClaimOutcome, SessionRequest, SessionResponse
from albert.web import BadRequest, HttpRequest, HttpResponse, parse_body


async def sign_in(
    request: HttpRequest, now: int, auth: Authenticator, objects: ChatObjects | None
) -> HttpResponse:
    """Issue a signed-in session for a verified host JWT, claiming anonymous work if asked."""
    settings = auth.settings
    keys = settings.signing_keys()
    if not keys:
        return HttpResponse.error(503, "not_configured", "session signing is not configured")
    try:
        body = parse_body(request, SessionRequest, MAX_SESSION_BODY)
    except BadRequest as exc:
        return HttpResponse.error(exc.status, exc.error, exc.detail)
    try:
        user = await auth.host_jwt.verify(bearer_token(request), now=now)
    except (TokenError, JwksUnavailable) as exc:
        return refusal(exc)
    if body.tenant is not None and body.tenant != user.tenant:
        return HttpResponse.error(
            403, "tenant_mismatch", "this token was issued for another tenant's users"
        )
    if user.expires_at <= now:
        # Accepted within the clock leeway, but a session from it would be over already.
        return refusal(TokenError("token expired"))
    if objects is not None:
        revoked = await _revoked_by_user(objects, user, bearer_token(request))
        if revoked is not None:
            return revoked
    anonymous, refused = _claimable(body.claim_token, user, auth, now)
    client_id = anonymous.client_id if anonymous else new_client_id()
    expires_at = min(user.expires_at, now + settings.session_ttl_seconds)
    # Sessions signed in before a revocation of the user are refused (albert.chat.sessions);
    # this one starts now, so a sign-in after a revocation works.
    issued_at_ms = auth.now_ms()
    session = Identity(
        client_id=client_id,
        tenant=user.tenant,
        expires_at=expires_at,
        user_id=user.user_id,
        issued_at_ms=issued_at_ms,
    )
    token = issue_token(
        keys[0],
        client_id=client_id,
        tenant=user.tenant,
        expires_at=expires_at,
        issued_at_ms=issued_at_ms,
        user_id=user.user_id,
    )
    claim = refused
    if anonymous is not None and body.claim_token:
        if objects is None:
            claim = ClaimOutcome(status="pending", detail="claiming is not available here")
        else:
            claim = await claim_anonymous_work(
                objects,
                anonymous=anonymous,
                anonymous_token=body.claim_token,
                user=session,
                user_token=token,
            )
    tenant = settings.tenants()[user.tenant]
    return HttpResponse.json(
        SessionResponse(
            client_id=client_id,
            token=token,
            expires_at=expires_at,
            tenant=PublicTenant(key=user.tenant, name=tenant.name),
            user_id=user.user_id,
            claim=claim,
        ),
        status=201,
    )


async def _revoked_by_user(objects: ChatObjects, user: Identity, jwt: str) -> HttpResponse | None:
    """The user's object's refusal of a JWT its last revocation covers (issued at or before
    it); None when the object takes it. The object verifies the JWT itself."""
    status, body = await objects.post(user.object_name, SESSION_CHECK_PATH, token=jwt, body=b"{}")
    if status != 401:
        return None
    return HttpResponse(
        status=status,
        body=body,
        headers={
            "content-type": "application/json",
            "www-authenticate": 'Bearer error="invalid_token"',
        },
    )


def _claimable(
    claim_token: str | None, user: Identity, auth: Authenticator, now: int
) -> tuple[Identity | None, ClaimOutcome | None]:
    """The anonymous session to claim, or why there is none to claim."""
    if not claim_token:
        return None, None
    try:
        anonymous = verify_token(claim_token, auth.settings.signing_keys(), now=now)
    except TokenError as exc:
        return None, ClaimOutcome(status="refused", detail=f"claim_token: {exc.reason}")
    if not anonymous.anonymous:
        return None, ClaimOutcome(status="refused", detail="claim_token is a signed-in session")
    if anonymous.tenant != user.tenant:
        return None, ClaimOutcome(status="refused", detail="claim_token is of another tenant")
    return anonymous, None
