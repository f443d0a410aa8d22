"""Verified callers for tests that call a chat object's HTTP API in-process, as the object's
glue does once it has checked the session token."""

from __future__ import annotations

from albert.auth.tokens import Identity

# 2100-01-01: a session that does not expire during a test.
FAR_FUTURE = 4_102_444_800


def anonymous(client_id: str = "c_" + "t" * 24, tenant: str = "default") -> Identity:
    """An anonymous client's session."""
    return Identity(client_id=client_id, tenant=tenant, expires_at=FAR_FUTURE)
