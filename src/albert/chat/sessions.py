"""Revoking a user's sessions, the object's side: one mark in the user's own object.

Every request and socket of a signed-in user reaches the user's object
(`"{tenant}/user/{sub}"`), so that is where a revocation lives: the time up to which
sessions are revoked (`sessions_revoked_up_to_ms` in `object_meta`), one row however
often the host revokes. A session token carries when its session was signed in
(albert.auth.tokens, kept across renewals); one signed in at or before the mark is
refused with 401 `session_revoked`, its sockets are closed with 4003, and a sign-in
after the mark works. Tokens from before the issue time was signed count as issued at 0:
any revocation covers them. A request bearing the host's JWT itself is the host
speaking and is never refused here; a socket opened with it counts as issued when it
was opened.

Routes (in albert.chat.routes; the router forwards the public one,
albert.auth.session_api.REVOKE_PATH, to the caller's user's object; the internal one only
the router calls):
- `POST /api/session/revoke`: the host's JWT for the user, or one of the user's own
  sessions ("sign out everywhere"), revokes every session of the user issued up to now:
  sockets closed, running turns cancelled (stored as `cancelled`). Idempotent.
- `POST /internal/session/check`: 200, or the 401 above; the router asks before renewing.
- `GET /api/me` of a signed-in session is answered by the object, after the check.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from albert.auth.session_api import MAX_SESSION_BODY
from albert.auth.tokens import Identity
from albert.chat.socket_policy import SocketPolicy
from albert.clock import Clock
from albert.protocol.http import RevokeRequest, RevokeResponse
from albert.storage.meta import ObjectMeta
from albert.storage.ports import SqlStorage
from albert.web import HttpRequest, HttpResponse, parse_body

REVOKED_UP_TO = "sessions_revoked_up_to_ms"


class SessionRevocations:
    """The revocation mark of one object, the refusals it implies and the revocation."""

    def __init__(
        self,
        sql: SqlStorage,
        clock: Clock,
        sockets: SocketPolicy,
        cancel_turns: Callable[[], Awaitable[int]],
    ) -> None:
        self._meta = ObjectMeta(sql)
        self._clock = clock
        self._sockets = sockets
        self._cancel_turns = cancel_turns
        # Read on every request; only a revocation here ever changes it.
        raw = self._meta.get(REVOKED_UP_TO)
        self._mark = int(raw) if raw is not None else None
        sockets.revoked_up_to_ms = self._mark

    @property
    def revoked_up_to_ms(self) -> int | None:
        """Sessions signed in at or before this (Unix ms) are revoked; None: none is."""
        return self._mark

    def revoked(self, identity: Identity) -> bool:
        """True when the mark covers the identity: a session of ours signed in at or before
        it, or a host JWT issued at or before it (or with no `iat` to tell)."""
        if self._mark is None:
            return False
        if identity.host_token:
            issued = identity.host_issued_at_ms
            return issued is None or issued <= self._mark
        return identity.issued_at_ms is not None and identity.issued_at_ms <= self._mark

    def refusal(self, identity: Identity) -> HttpResponse | None:
        """401 `session_revoked` for a revoked session; None for any other."""
        if not self.revoked(identity):
            return None
        return HttpResponse.error(
            401,
            "session_revoked",
            "this session was signed out by the host or the user; sign in again",
            headers={"www-authenticate": 'Bearer error="invalid_token"'},
        )

    async def handle_revoke(self, request: HttpRequest, identity: Identity) -> HttpResponse:
        """`POST /api/session/revoke` from a verified caller the mark does not cover: a
        signed-in user's sessions revoked, for the tenant its body names (if it names one).
        Raises BadRequest for a body that is not a RevokeRequest."""
        if identity.anonymous or identity.user_id is None:
            return HttpResponse.error(
                403, "not_signed_in", "only a signed-in user's sessions can be revoked"
            )
        body = parse_body(request, RevokeRequest, MAX_SESSION_BODY)
        if body.tenant is not None and body.tenant != identity.tenant:
            return HttpResponse.error(
                403, "tenant_mismatch", "this token was issued for another tenant's users"
            )
        return HttpResponse.json(await self.revoke(identity.user_id))

    async def revoke(self, user_id: str) -> RevokeResponse:
        """Revoke every session issued up to now: record the mark, close their sockets,
        cancel running turns (each stored as `cancelled` by the driver)."""
        now = self._clock.now_ms()
        # Never moved back: a repeat (or a clock step back) revokes nothing less.
        mark = now if self._mark is None else max(self._mark, now)
        self._meta.set(REVOKED_UP_TO, str(mark))
        self._mark = mark
        self._sockets.revoked_up_to_ms = mark
        closed = self._sockets.close_ended()
        # Every running turn was started by a socket the mark covers: none may go on
        # answering a signed-out user.
        cancelled = await self._cancel_turns()
        return RevokeResponse(
            user_id=user_id,
            revoked_up_to=mark,
            sockets_closed=closed,
            turns_cancelled=cancelled,
        )
