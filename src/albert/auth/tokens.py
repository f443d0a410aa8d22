"""Signed client tokens: HMAC-SHA256 over a small JSON payload, with expiry and key rotation.

A token is `<payload>.<signature>`, both base64url without padding. The payload names
the signing key (`kid`), so a rotated-out key keeps verifying its tokens until its
grace period ends. The router verifies before touching any Durable Object, and the
object's name is derived from the verified payload only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError

TOKEN_VERSION = 1
# What new_client_id() makes; a token naming anything else is malformed.
CLIENT_ID_PATTERN = r"^c_[A-Za-z0-9_-]{16,64}$"


class SigningKey(BaseModel):
    """One HMAC key; `valid_until` (Unix seconds) bounds a retired key's grace period."""

    model_config = ConfigDict(frozen=True)

    kid: str = Field(pattern=r"^[A-Za-z0-9_-]{1,32}$")
    secret: bytes = Field(min_length=16)
    valid_until: int | None = None


class Identity(BaseModel):
    """A verified client: who, in which tenant, until when."""

    model_config = ConfigDict(frozen=True)

    client_id: str
    tenant: str
    expires_at: int

    @property
    def object_name(self) -> str:
        """The Durable Object name: tenants never share an object, and neither do clients."""
        return f"{self.tenant}/{self.client_id}"


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    v: int
    kid: str
    sub: str = Field(pattern=CLIENT_ID_PATTERN)
    ten: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")
    exp: int


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


def issue_token(key: SigningKey, *, client_id: str, tenant: str, expires_at: int) -> str:
    """A token for a client of a tenant, signed with the current key."""
    payload = _Payload(v=TOKEN_VERSION, kid=key.kid, sub=client_id, ten=tenant, exp=expires_at)
    body = _b64(payload.model_dump_json().encode())
    return f"{body}.{_sign(key.secret, body)}"


def verify_token(token: str, keys: list[SigningKey], *, now: int) -> Identity:
    """The identity in a token, or TokenError; constant-time on the signature."""
    if not token or len(token) > 1024:
        raise TokenError("missing token")
    body, dot, signature = token.partition(".")
    if not dot or not body or not signature:
        raise TokenError("malformed token")
    try:
        payload = _Payload.model_validate(json.loads(_unb64(body)))
    except (ValueError, ValidationError):
        raise TokenError("malformed token") from None
    key = next((k for k in keys if k.kid == payload.kid), None)
    if key is None:
        raise TokenError("token signed with an unknown key")
    if not hmac.compare_digest(_sign(key.secret, body), signature):
        raise TokenError("bad signature")
    if key.valid_until is not None and now >= key.valid_until:
        raise TokenError("token signed with a retired key")
    if payload.v != TOKEN_VERSION:
        raise TokenError("unsupported token version")
    if now >= payload.exp:
        raise TokenError("token expired")
    return Identity(client_id=payload.sub, tenant=payload.ten, expires_at=payload.exp)


def parse_key(spec: str, *, valid_until: int | None = None) -> SigningKey:
    """A key from its setting: `kid:secret` (or a bare secret, kid `k1`)."""
    kid, sep, secret = spec.partition(":")
    if not sep:
        kid, secret = "k1", spec
    return SigningKey(kid=kid, secret=secret.encode(), valid_until=valid_until)
