"""What the edge (albert.router) and the user's object (albert.chat.sessions) both say
about the session API: its paths, its body bound, and the body of `GET /api/me`.

Both sides import it from here, so the object code never imports the router.
"""

from albert.auth.tenants import PublicTenant
from albert.auth.tokens import Identity
from albert.protocol.http import SessionResponse
from albert.settings import Settings

MAX_SESSION_BODY = 1_024
# Revokes every session of the caller's user (albert.chat.sessions): answered by the
# user's object, where the revocation is kept.
REVOKE_PATH = "/api/session/revoke"
# The router asks the user's object before renewing a signed-in session: 200, or 401
# `session_revoked`. Internal: the router forwards `/api/*` only.
SESSION_CHECK_PATH = "/internal/session/check"


def me(identity: Identity, settings: Settings) -> SessionResponse:
    """The body of `GET /api/me`: the verified session, without its token."""
    tenant = settings.tenants().get(identity.tenant)
    return SessionResponse(
        client_id=identity.client_id,
        token="",
        expires_at=identity.expires_at,
        tenant=PublicTenant(key=identity.tenant, name=tenant.name if tenant else "Albert"),
        user_id=identity.user_id,
    )
