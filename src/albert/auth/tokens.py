"""Signed client tokens: HMAC-SHA256 over a small JSON payload, with expiry and key rotation.

A token is `<payload>.<signature>`, both base64url without padding. The payload names
the signing key (`kid`), so a rotated-out key keeps verifying its tokens until its
grace period ends. A key given without a kid gets one derived from the key itself, so
two keys never share a kid by accident; should they share one anyway (two explicit
`kid:secret` settings), every key with that kid is tried. The router verifies before
touching any Durable Object, and the object's name is derived from the verified
payload only.
"""

import base64
import hashlib
import hmac
import json
import re
import secrets
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field, ValidationError

TOKEN_VERSION = 1
# What new_client_id() makes; a token naming anything else is malformed.
CLIENT_ID_PATTERN = r"^c_[A-Za-z0-9_-]{16,64}$"
# A signed-in user's id (a host JWT's `sub`). It becomes part of a Durable Object name
# ("{tenant}/user/{sub}"), so only printable ASCII without `/`, spaces or controls: what
# identity providers use (UUIDs, `auth0|5f7c…`, `google-oauth2|1234`, e-mail addresses).
USER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@|+=~-]{0,199}$"
KID_PATTERN = r"^[A-Za-z0-9_-]{1,32}$"
# Kid that bare keys had before kids were derived; tokens naming it still verify.
LEGACY_BARE_KID = "k1"
MAX_TOKEN_CHARS = 1024
# Two base64url parts and nothing else: anything outside this alphabet (non-ASCII,
# padding, whitespace, a third part) is malformed before any decoding is tried.
_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")


def new_client_id() -> str:
    """An unguessable client id (matching CLIENT_ID_PATTERN)."""
    return "c_" + secrets.token_urlsafe(18)


class SigningKey(BaseModel):
    """One HMAC key; `valid_until` (Unix seconds) bounds a retired key's grace period."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    kid: str = Field(pattern=KID_PATTERN)
    secret: bytes = Field(min_length=16)
    valid_until: int | None = None
    legacy_kid: str | None = Field(
        None, description="Another kid this key's tokens may carry (bare keys: the old `k1`)"
    )

    def signs_kid(self, kid: str) -> bool:
        """True when a token naming `kid` may have been signed with this key."""
        return kid == self.kid or (self.legacy_kid is not None and kid == self.legacy_kid)


class Identity(BaseModel):
    """A verified client: who, in which tenant, until when; a signed-in user has `user_id`.

    `client_id` names the browser (empty for a request that carried the host's JWT
    itself); the object belongs to the user when there is one, else to the client.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    client_id: str
    tenant: str
    expires_at: int
    user_id: str | None = None
    # When the session was signed in (Unix milliseconds), kept across renewals, so a
    # revocation (albert.chat.sessions) covers every token the session ever had. None for
    # an identity that is not a session of ours (the host's JWT used as the bearer).
    # Tokens from before this field was signed read as 0: issued before any revocation.
    issued_at_ms: int | None = None
    # The host's JWT used as the bearer: when the host issued it (its `iat`, Unix ms;
    # None when it has none), which a revocation of the user also covers.
    host_token: bool = False
    host_issued_at_ms: int | None = None

    @property
    def object_name(self) -> str:
        """The Durable Object name: tenants never share an object, and neither do clients
        or users (a user's name has the `user/` segment, which no client id can take)."""
        if self.user_id is not None:
            return f"{self.tenant}/user/{self.user_id}"
        return f"{self.tenant}/{self.client_id}"

    @property
    def anonymous(self) -> bool:
        """True for an anonymous client session (no signed-in user)."""
        return self.user_id is None


class _Payload(BaseModel):
    # Unknown fields are ignored, not refused: only our own key signs a payload, so one
    # comes from a newer worker, and during a rolling deploy an older worker must still
    # take the sessions a newer one issued (the version `v` is for changes it may not).
    model_config = ConfigDict(extra="ignore", defer_build=True)

    v: int
    kid: str
    sub: str = Field(pattern=CLIENT_ID_PATTERN)
    ten: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")
    exp: int
    usr: str | None = Field(None, pattern=USER_ID_PATTERN)
    # Session start in Unix milliseconds: seconds would put a sign-in and a revocation
    # made in the same second on the same side of it. Optional, so version 1 tokens
    # signed before it keep verifying (read as 0).
    iat: int | None = Field(None, ge=0)


class TokenError(Exception):
    """The token is missing, malformed, forged or expired; `reason` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(secret: bytes, payload_b64: str) -> str:
    return _b64(hmac.new(secret, payload_b64.encode(), hashlib.sha256).digest())


def issue_token(
    key: SigningKey,
    *,
    client_id: str,
    tenant: str,
    expires_at: int,
    issued_at_ms: int,
    user_id: str | None = None,
) -> str:
    """A token for a client of a tenant (signed in as `user_id`, if given), signed with
    the current key; `issued_at_ms` is when the session began (a renewal keeps it)."""
    payload = _Payload(
        v=TOKEN_VERSION,
        kid=key.kid,
        sub=client_id,
        ten=tenant,
        exp=expires_at,
        usr=user_id,
        iat=issued_at_ms,
    )
    body = _b64(payload.model_dump_json(exclude_none=True).encode())
    return f"{body}.{_sign(key.secret, body)}"


def verify_token(token: str, keys: list[SigningKey], *, now: int) -> Identity:
    """The identity in a token, or TokenError; constant-time on the signature."""
    if not token:
        raise TokenError("missing token")
    identity, key, version = _signed(token, tuple(keys))
    if key.valid_until is not None and now >= key.valid_until:
        raise TokenError("token signed with a retired key")
    if version != TOKEN_VERSION:
        raise TokenError("unsupported token version")
    if now >= identity.expires_at:
        raise TokenError("token expired")
    return identity


# Every request of a session carries the same token, and both the router and the object
# check it: what does not depend on the time (shape, payload, signature) is worked out
# once per token and key set. Only answers are kept (lru_cache keeps no exception), so a
# token that fails is checked in full every time; expiry and key retirement are checked
# on every call, against its `now`.
VERIFIED_TOKENS_KEPT = 256


@lru_cache(maxsize=VERIFIED_TOKENS_KEPT)
def _signed(token: str, keys: tuple[SigningKey, ...]) -> tuple[Identity, SigningKey, int]:
    """The identity a token names, the key that signed it and its version; TokenError."""
    if len(token) > MAX_TOKEN_CHARS or not _TOKEN_SHAPE.fullmatch(token):
        raise TokenError("malformed token")
    body, _, signature = token.partition(".")
    try:
        payload = _Payload.model_validate(json.loads(_unb64(body)))
    except (ValueError, ValidationError, RecursionError):
        raise TokenError("malformed token") from None
    candidates = [k for k in keys if k.signs_kid(payload.kid)]
    if not candidates:
        raise TokenError("token signed with an unknown key")
    # Every candidate is tried (no early exit), so timing says nothing about which matched.
    given = signature.encode("ascii")
    matches = [k for k in candidates if hmac.compare_digest(_sign(k.secret, body).encode(), given)]
    if not matches:
        raise TokenError("bad signature")
    identity = Identity(
        client_id=payload.sub,
        tenant=payload.ten,
        expires_at=payload.exp,
        user_id=payload.usr,
        issued_at_ms=payload.iat or 0,
    )
    return identity, matches[0], payload.v


def derived_kid(secret: bytes) -> str:
    """The kid of a key given without one: a short hash of the key, so keys differ by kid."""
    return "h" + hashlib.sha256(b"albert-kid:" + secret).hexdigest()[:12]


def parse_key(spec: str, *, valid_until: int | None = None) -> SigningKey:
    """A key from its setting: `kid:secret`, or a bare secret whose kid is derived from it.

    A prefix before `:` that is not a valid kid is part of a bare secret.
    """
    kid, sep, rest = spec.partition(":")
    if sep and re.fullmatch(KID_PATTERN[1:-1], kid):
        return SigningKey(kid=kid, secret=rest.encode(), valid_until=valid_until)
    secret = spec.encode()
    return SigningKey(
        kid=derived_kid(secret),
        secret=secret,
        valid_until=valid_until,
        legacy_kid=LEGACY_BARE_KID,
    )
