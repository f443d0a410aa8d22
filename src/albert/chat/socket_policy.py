"""What an open chat socket may do: how many a client keeps, how long, how often it sends.

- Cap: at most MAX_SOCKETS_PER_CLIENT open sockets per object; opening one more
  closes the oldest with 4008, so a client cannot pile up connections.
- Expiry: a socket lives no longer than the token it was opened with. It is
  checked on every frame the socket sends and whenever the object sends to its
  sockets; an expired one is closed with 4001 and the browser reconnects with a
  fresh token.
- Revocation: a socket of a session signed in at or before the user's revocation
  (albert.chat.sessions) is closed with 4003, checked where expiry is, so no frame of
  a turn reaches it after the revocation.
- Frames: every frame counts against one per-object budget (pings, resumes,
  cancels and malformed frames too, not only chat messages). Over budget, the
  first frame gets a rate_limited error frame and later ones are dropped unanswered
  until the budget refills, so a flood cannot make the object answer in kind.

A socket's meta (opened at, token expiry, session issue time) rides in its attachment,
which outlives hibernation.
"""

import functools
import logging
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, ValidationError

from albert.clock import Clock
from albert.limits.client_rates import RateLimiter
from albert.ports import ChatSocket, SocketHub
from albert.protocol.frames import ErrorFrame

log = logging.getLogger(__name__)

CLOSE_TOKEN_EXPIRED = 4001
CLOSE_SESSION_REVOKED = 4003
# The close reason names the error code the HTTP API answers with, so a browser tells it
# from an expiry (4001) without another request.
REVOKED_REASON = "session_revoked: this session was signed out; sign in again"
CLOSE_TOO_MANY_SOCKETS = 4008


class SocketMeta(BaseModel):
    """Kept with each accepted socket."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    opened_at_ms: int
    expires_at: int  # Unix seconds: the expiry of the token the socket was opened with
    # Unix milliseconds: when its session was signed in (for a socket opened with the
    # host's JWT itself, when it was opened). None: sockets from before revocation existed,
    # which a revocation closes too.
    issued_at_ms: int | None = None

    def encode(self) -> str:
        """The attachment text."""
        return self.model_dump_json()


def socket_meta(socket: ChatSocket) -> SocketMeta | None:
    """The meta of a socket, or None for one without (tests, sockets of other hosts)."""
    read = getattr(socket, "attachment", None)
    if read is None:
        return None
    raw = read()
    return _parse_meta(raw) if raw else None


# Sized for every socket one process holds: the local runtime keeps all objects in one
# process, and with 1,000 clients a smaller cache missed on every read (each socket's text
# is its own), which parsed each meta again on every frame (~2% of a turn's CPU). An entry
# is ~0.5 KiB.
@functools.lru_cache(maxsize=8192)
def _parse_meta(raw: str) -> SocketMeta | None:
    # Read on every send to every socket: a socket's attachment never changes, so each
    # text is parsed once.
    try:
        return SocketMeta.model_validate_json(raw)
    except ValidationError:
        return None


class SocketPolicy:
    """The object's socket hub with the cap and the expiry applied."""

    def __init__(self, hub: SocketHub, clock: Clock, max_sockets: int) -> None:
        self._hub = hub
        self._clock = clock
        self._max = max_sockets
        # Set by albert.chat.sessions from the object's revocation mark.
        self.revoked_up_to_ms: int | None = None

    def ended(self, socket: ChatSocket) -> bool:
        """True when the socket's token has expired or its session was revoked (and the
        socket is now closed)."""
        meta = socket_meta(socket)
        if meta is None:
            return False
        if self.revoked_up_to_ms is not None and (meta.issued_at_ms or 0) <= self.revoked_up_to_ms:
            socket.close(CLOSE_SESSION_REVOKED, REVOKED_REASON)
            return True
        if self._clock.now_ms() < meta.expires_at * 1000:
            return False
        socket.close(CLOSE_TOKEN_EXPIRED, "token expired: renew the session and reconnect")
        return True

    def sockets(self) -> Sequence[ChatSocket]:
        """Every open socket whose token is still valid; expired and revoked ones are closed
        here."""
        return [s for s in self._hub.sockets() if not self.ended(s)]

    def close_ended(self) -> int:
        """Close every socket whose token expired or whose session was revoked; how many."""
        return sum(1 for s in list(self._hub.sockets()) if self.ended(s))

    def admit_newest(self) -> int:
        """After accepting a socket: close the oldest beyond the cap; returns how many."""
        open_sockets = list(self.sockets())
        excess = len(open_sockets) - self._max
        if excess <= 0:
            return 0
        # Oldest first; sockets without meta count as oldest, list order breaks ties.
        ranked = sorted(
            enumerate(open_sockets),
            key=lambda item: ((m.opened_at_ms if (m := socket_meta(item[1])) else 0), item[0]),
        )
        for _, socket in ranked[:excess]:
            socket.close(
                CLOSE_TOO_MANY_SOCKETS,
                f"too many connections: at most {self._max} per client; this one was the oldest",
            )
        log.info("closed %d socket(s) over the cap of %d", excess, self._max)
        return excess


class FrameGate:
    """One frame budget per object: every incoming frame spends a token."""

    def __init__(self, allowed: int, clock: Clock, window_seconds: float) -> None:
        self._limiter = RateLimiter(allowed, clock, window_seconds)
        self._told = False

    def admit(self, socket: ChatSocket) -> bool:
        """True when the frame may be handled; otherwise it is refused (told once)."""
        wait = self._limiter.take()
        if wait is None:
            self._told = False
            return True
        if not self._told:
            self._told = True
            socket.send(
                ErrorFrame(
                    code="rate_limited",
                    message=f"too many frames; wait {wait:g} s (frames are dropped until then)",
                    retryable=True,
                    retry_after_seconds=wait,
                ).model_dump_json()
            )
        return False
