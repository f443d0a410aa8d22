"""`HKDF`, named by `mcp.server.request_state` at import; refused when used."""

from ....standin import StandIn


class HKDF(StandIn):
    """Stand-in for cryptography's HKDF."""
