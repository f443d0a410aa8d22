"""A host product's identity provider for tests: signing keys, a real JWKS endpoint, tokens.

The JWKS is served over real HTTP on loopback (uvicorn in a thread). Keys can be added
and retired (rotation), the endpoint can answer errors or be stopped, and every request
is counted, so tests see exactly when the worker fetched.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from tests.support.asgi_server import AsgiServer

ISSUER = "https://id.terminal.example/"
AUDIENCE = "albert"
SHARED_SECRET = "host-shared-secret-for-hs256-tokens-0123456789"


@dataclass
class SigningKey:
    """One key pair of the provider."""

    kid: str
    algorithm: str
    private: Any

    @property
    def jwk(self) -> dict[str, Any]:
        public = self.private.public_key()
        tool = RSAAlgorithm if self.algorithm == "RS256" else ECAlgorithm
        data = json.loads(tool.to_jwk(public))
        data.update(kid=self.kid, use="sig", alg=self.algorithm)
        return data


def new_key(algorithm: str = "RS256", kid: str | None = None) -> SigningKey:
    """A fresh RSA-2048 (RS256) or P-256 (ES256) key."""
    if algorithm == "RS256":
        private: Any = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    else:
        private = ec.generate_private_key(ec.SECP256R1())
    return SigningKey(kid=kid or f"k-{secrets.token_hex(4)}", algorithm=algorithm, private=private)


@dataclass
class JwksEndpoint:
    """What the JWKS endpoint serves; tests change it while it runs."""

    keys: list[dict[str, Any]] = field(default_factory=list)
    cache_control: str | None = "max-age=300"
    status: int = 200
    raw_body: bytes | None = None
    requests: int = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.requests += 1
        body = self.raw_body if self.raw_body is not None else json.dumps({"keys": self.keys})
        if isinstance(body, str):
            body = body.encode()
        headers = [(b"content-type", b"application/json")]
        if self.cache_control is not None:
            headers.append((b"cache-control", self.cache_control.encode()))
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class IdentityProvider:
    """Keys, a served JWKS and token minting, as a host product's login service."""

    def __init__(self, *keys: SigningKey, issuer: str = ISSUER, audience: str = AUDIENCE) -> None:
        self.issuer = issuer
        self.audience = audience
        self.keys: dict[str, SigningKey] = {}
        self.endpoint = JwksEndpoint()
        self._server = AsgiServer(self.endpoint)
        for key in keys or (new_key("RS256", "rsa-1"),):
            self.publish(key)

    @property
    def jwks_url(self) -> str:
        return f"{self._server.url}/.well-known/jwks.json"

    def tenant(self, name: str = "Acme Terminal", **settings: Any) -> dict[str, Any]:
        """A tenant's config that signs its users in with this provider's tokens."""
        return {
            "name": name,
            "jwt_issuer": self.issuer,
            "jwt_audience": self.audience,
            "jwks_url": self.jwks_url,
            **settings,
        }

    def publish(self, key: SigningKey) -> SigningKey:
        """Add a key to the served set (the first step of a rotation)."""
        self.keys[key.kid] = key
        self._serve()
        return key

    def retire(self, kid: str) -> None:
        """Drop a key from the served set (the last step of a rotation)."""
        del self.keys[kid]
        self._serve()

    def _serve(self) -> None:
        self.endpoint.keys = [k.jwk for k in self.keys.values()]

    def token(
        self,
        sub: str = "user-1",
        *,
        key: SigningKey | None = None,
        kid: str | bool | None = True,
        lifetime: int = 3600,
        now: float | None = None,
        **claims: Any,
    ) -> str:
        """A token signed with `key` (the first published by default); claims override."""
        key = key or next(iter(self.keys.values()))
        issued = int(time.time() if now is None else now)
        payload: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": sub,
            "iat": issued,
            "exp": issued + lifetime,
        }
        payload.update(claims)
        payload = {k: v for k, v in payload.items() if v is not None}
        headers: dict[str, Any] = {}
        if kid is True:
            headers["kid"] = key.kid
        elif isinstance(kid, str):
            headers["kid"] = kid
        return jwt.encode(payload, key.private, algorithm=key.algorithm, headers=headers)

    def hs256_token(self, sub: str = "user-1", secret: str = SHARED_SECRET, **claims: Any) -> str:
        """A token signed with the shared secret."""
        now = int(time.time())
        payload = {"iss": self.issuer, "aud": self.audience, "sub": sub, "exp": now + 3600}
        payload.update(claims)
        return jwt.encode(payload, secret, algorithm="HS256")

    def start(self) -> IdentityProvider:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> IdentityProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def unsigned_token(payload: dict[str, Any], header: dict[str, Any]) -> str:
    """A token built by hand (for `alg: none` and other forgeries)."""
    import base64

    def part(value: dict[str, Any]) -> str:
        raw = json.dumps(value, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    return f"{part(header)}.{part(payload)}."
