"""`AESGCM`, named by `mcp.server.request_state` at import; refused when used."""

from ....standin import StandIn


class AESGCM(StandIn):
    """Stand-in for cryptography's AES-GCM."""
