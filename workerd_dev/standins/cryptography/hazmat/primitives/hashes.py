"""`SHA256`, named by `mcp.server.request_state` at import; refused when used."""

from ...standin import StandIn


class SHA256(StandIn):
    """Stand-in for cryptography's SHA-256 hash algorithm."""
