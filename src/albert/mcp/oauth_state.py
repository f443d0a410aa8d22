"""The OAuth `state` of an MCP server's authorization: which object its callback goes to.

The authorization server sends the browser back to `/api/mcp/oauth/callback` with no
session token, so the worker learns the object from the state alone:
`<object id>.<nonce>.<mac>`. The object id is the platform's 64-hex Durable Object id
(a one-way name: the authorization server learns nothing of the client or user); the
nonce is the secret the object matches against its one waiting authorization; the MAC
(the worker's signing key) lets the router refuse made-up states before any object
wakes. Small and dependency-free: the router imports it on every callback.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence
from typing import NamedTuple

from albert.auth.tokens import SigningKey

CALLBACK_PATH = "/api/mcp/oauth/callback"
_DOMAIN = b"albert mcp oauth state\x00"
_STATE = re.compile(
    r"^(?P<object>[0-9a-f]{64})\.(?P<nonce>[A-Za-z0-9_-]{32,64})\.(?P<mac>[A-Za-z0-9_-]{22})$"
)


class CallbackState(NamedTuple):
    """A verified state: the object it belongs to and that object's nonce."""

    object_id: str
    nonce: str


def new_nonce() -> str:
    """A fresh secret for one authorization."""
    return secrets.token_urlsafe(32)


def seal(object_id: str, nonce: str, *, key: SigningKey) -> str:
    """The state to send to the authorization server."""
    return f"{object_id}.{nonce}.{_mac(object_id, nonce, key.secret)}"


def open_state(state: str, keys: Sequence[SigningKey]) -> CallbackState | None:
    """The state's object and nonce when one of our keys made it; None otherwise."""
    match = _STATE.match(state)
    if match is None:
        return None
    object_id, nonce, mac = match["object"], match["nonce"], match["mac"]
    for key in keys:
        if hmac.compare_digest(mac, _mac(object_id, nonce, key.secret)):
            return CallbackState(object_id, nonce)
    return None


def _mac(object_id: str, nonce: str, secret: bytes) -> str:
    digest = hmac.new(secret, _DOMAIN + f"{object_id}.{nonce}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest[:16]).decode().rstrip("=")
