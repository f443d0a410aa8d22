"""The embedded chat: `GET /embed?tenant=<key>&host=<origin>`, the chat framed by a host.

A tenant lists the host origins that may frame its chat (`embed_origins` in TENANTS).
The worker answers `/embed` itself, not the static assets, because its headers depend on
the request: the page's Content-Security-Policy names exactly the `host` origin in
`frame-ancestors`, so the browser refuses to render it in any other parent. The page
then trusts that origin for the postMessage hand-off (web/js/embed.js). A host that is
not listed, or a tenant with none, gets an error that no page may frame.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import parse_qsl

from albert.auth.tenants import DEFAULT_TENANT
from albert.security_headers import embed_page_headers
from albert.settings import Settings
from albert.web import HttpRequest, HttpResponse

EMBED_PATH = "/embed"
# The file the embed serves: the chat page itself, which finds out from its own URL that
# it is embedded. `/`, not `/index.html`: Workers assets redirect the latter to the former.
PAGE_PATH = "/"


class EmbedPage(NamedTuple):
    """Serve the chat page with these headers."""

    tenant: str
    host_origin: str
    headers: dict[str, str]


def embed_page(request: HttpRequest, settings: Settings) -> EmbedPage | HttpResponse:
    """The embedded page for this request's tenant and host, or why there is none."""
    if request.method not in ("GET", "HEAD"):
        return HttpResponse.error(405, "method_not_allowed", "use GET")
    repeated = _repeated(request.query_string, ("tenant", "host"))
    if repeated:
        # The page reads the first of a repeated parameter (URLSearchParams.get), the
        # query dict holds the last: checked here with one value, the page could run as
        # another tenant or trust another host than the ones checked.
        return HttpResponse.error(400, "bad_request", f"{repeated}: give it once")
    tenant_key = request.query.get("tenant") or DEFAULT_TENANT
    tenant = settings.tenants().get(tenant_key)
    if tenant is None:
        return HttpResponse.error(400, "unknown_tenant", f"no tenant named {tenant_key!r}")
    host = request.query.get("host", "")
    if not host:
        return HttpResponse.error(400, "bad_request", "host: the embedding page's origin")
    # Exact comparison with validated origins: nothing of the parameter reaches a
    # header unless it equals one of them.
    if host not in tenant.embed_origins:
        return HttpResponse.error(
            403, "host_not_allowed", "this origin may not embed this tenant's chat"
        )
    return EmbedPage(tenant=tenant_key, host_origin=host, headers=embed_page_headers(host))


def _repeated(query_string: str, names: tuple[str, ...]) -> str | None:
    """The first of `names` the query gives more than once (blank values count)."""
    seen: set[str] = set()
    for name, _ in parse_qsl(query_string, keep_blank_values=True):
        if name in names:
            if name in seen:
                return name
            seen.add(name)
    return None
