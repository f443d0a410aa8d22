"""A client-only stand-in for `cryptography` on workerd offline (never uploaded).

The `mcp` SDK's client imports `mcp.server` on its way in (`mcp.client` → `_memory` →
`mcp.server` → `request_state`), and `request_state` imports four names of
`cryptography` at load to seal a *server's* request state. A client never seals
anything, so these names only need to exist. Each of them, used, says so on stderr
with the marker STANDIN_CALLED and raises StandInCalled: the conformance suite fails
a run whose log holds the marker. Nothing else of `cryptography` is here, so a module
that imports more of it (PyJWT's RS256/ES256 support) finds it missing, as before.
"""


def __getattr__(name: str) -> object:
    # `from cryptography import x509` (PyJWT's probe) must fail as a missing module does,
    # the one failure PyJWT takes for "cryptography is not installed": a missing name of a
    # package would be an ImportError it does not catch.
    if name.startswith("__"):
        raise AttributeError(name)
    raise ModuleNotFoundError(
        f"cryptography.{name} is not part of the client-only stand-in on workerd offline",
        name=f"cryptography.{name}",
    )
