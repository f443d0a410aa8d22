"""Why a bearer token could not be checked at all (a refused token is a TokenError).

Here rather than in albert.auth.jwks: every request handler catches it, and only
requests with a host JWT import the JWKS machinery.
"""

from __future__ import annotations


class JwksUnavailable(Exception):
    """No usable key set: never fetched, or expired, and the endpoint cannot be reached."""

    def __init__(self, retry_after_seconds: float) -> None:
        super().__init__("the identity provider's signing keys are unavailable")
        self.retry_after_seconds = retry_after_seconds
