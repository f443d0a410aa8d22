"""Where a deployment secret may be sent: the MCP_SECRETS binding.

A client's MCP server config may name a secret (`secret_ref`) whose value is sent
as one header when connecting. The client chooses the URL, so a secret without a
binding would go wherever a client points it. MCP_SECRETS (a var, JSON) says, per
secret name, which origins it may be sent to and for which tenants:

    {"MCP_SECRET_VAULTS2": {"origins": ["https://mcp.example.com"], "tenants": ["acme"]}}

(`"tenants": ["*"]` allows every tenant; origins are always listed.) The binding is
checked when a config is saved and again before every connection, so a stored
config outlives neither a narrowed binding nor a removed secret. Every refusal
says the same thing, whether the name is unknown, bound elsewhere, bound to other
tenants or has no value in this environment: a client learns nothing about which
secrets exist.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Callable
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

log = logging.getLogger(__name__)

SECRET_NAME_PATTERN = r"^MCP_SECRET_[A-Z0-9_]{1,64}$"
ANY_TENANT = "*"
REFUSAL = "secret_ref refused: this deployment does not allow that secret for this server"
_DEFAULT_PORTS = {"http": 80, "https": 443}

RawSecretLookup = Callable[[str], str | None]


class SecretRefused(LookupError):
    """The secret may not be sent to this server; one message for every reason."""

    def __init__(self) -> None:
        super().__init__(REFUSAL)


def origin_of(url: str) -> str:
    """`scheme://host[:port]`, lower-cased, default port and trailing dot dropped.

    ValueError for anything that is not a plain http(s) origin (or a URL on one).
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or "@" in parts.netloc:
        raise ValueError(f"{url!r} is not an http(s) origin")
    host = parts.hostname.rstrip(".").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port or _DEFAULT_PORTS[scheme]
    suffix = "" if port == _DEFAULT_PORTS[scheme] else f":{port}"
    return f"{scheme}://{host}{suffix}"


class SecretRule(BaseModel):
    """Where one secret may go."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    origins: list[str] = Field(min_length=1, description="http(s) origins, no path")
    tenants: list[str] = Field(min_length=1, description=f"Tenant keys, or {ANY_TENANT!r}")

    @field_validator("origins")
    @classmethod
    def _plain_origins(cls, origins: list[str]) -> list[str]:
        out = []
        for origin in origins:
            parts = urlsplit(origin.strip())
            if parts.path not in ("", "/") or parts.query or parts.fragment:
                raise ValueError(f"{origin!r}: an origin has no path, query or fragment")
            out.append(origin_of(origin))
        return out

    def allows(self, url: str, tenant: str) -> bool:
        """True when this rule lets the secret go to `url` for `tenant`."""
        try:
            origin = origin_of(url)
        except ValueError:
            return False
        tenant_ok = ANY_TENANT in self.tenants or tenant in self.tenants
        return tenant_ok and origin in self.origins


@functools.cache
def _rules_adapter() -> TypeAdapter[dict[str, SecretRule]]:
    return TypeAdapter(dict[str, SecretRule])


def parse_secret_bindings(raw: str) -> dict[str, SecretRule]:
    """The MCP_SECRETS setting; ValueError when it is not valid."""
    if not raw.strip():
        return {}
    rules = _rules_adapter().validate_python(json.loads(raw))
    for name in rules:
        if not re.fullmatch(SECRET_NAME_PATTERN[1:-1], name):
            raise ValueError(f"{name!r}: bound secrets are named MCP_SECRET_*")
    return rules


class SecretBinding:
    """The secrets one tenant's object may send, each only to its bound origins."""

    def __init__(self, rules: dict[str, SecretRule], tenant: str, lookup: RawSecretLookup) -> None:
        self._rules = rules
        self._tenant = tenant
        self._lookup = lookup

    @classmethod
    def from_setting(cls, raw: str, tenant: str, lookup: RawSecretLookup) -> SecretBinding:
        """From the MCP_SECRETS text; a setting that does not parse binds nothing (logged)."""
        try:
            rules = parse_secret_bindings(raw)
        except ValueError as exc:
            log.error("MCP_SECRETS is not valid, so no secret may be sent: %s", exc)
            rules = {}
        return cls(rules, tenant, lookup)

    def check(self, name: str, url: str) -> None:
        """SecretRefused unless the secret is bound to `url`'s origin for this tenant and set."""
        self.value_for(name, url)

    def value_for(self, name: str, url: str) -> str:
        """The secret's value for a connection to `url`, or SecretRefused."""
        rule = self._rules.get(name)
        if rule is None or not rule.allows(url, self._tenant):
            raise SecretRefused()
        value = self._lookup(name)
        if not value:
            raise SecretRefused()
        return value
