"""Security headers: the browser chat's pages and every response the worker makes.

The pages are static assets, which the platform serves before the worker runs, so
their headers live in `web/_headers` (Workers static assets apply that file; the
local runtime does too). PAGE_HEADERS is the same set, as the tests compare it to
that file. Worker responses (JSON, errors) get API_HEADERS.

The page policy allows nothing inline and nothing from another origin: scripts,
styles and connections (fetch and the chat WebSocket) are same-origin only.

No page may be framed (`frame-ancestors 'none'`, and `X-Frame-Options: DENY` for old
browsers) except the embedded chat (`/embed`, albert.embed), which the worker serves
with EMBED headers naming the one host origin that may frame it. X-Frame-Options cannot
name an origin, so that response alone goes without it.
"""

from __future__ import annotations

PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "content-security-policy": PAGE_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
}
API_HEADERS = {
    "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


def embed_page_headers(host_origin: str) -> dict[str, str]:
    """The embedded chat page's headers: the page policy, framable by `host_origin` only.

    `host_origin` must be a validated embed origin (albert.auth.tenants), which holds no
    character that could end the directive or the header.
    """
    policy = PAGE_POLICY.replace("frame-ancestors 'none'", f"frame-ancestors {host_origin}")
    headers = {k: v for k, v in PAGE_HEADERS.items() if k != "x-frame-options"}
    # Per host and tenant, decided on each request: never kept by a cache.
    return {**headers, "content-security-policy": policy, "cache-control": "no-store"}


def with_api_headers(headers: dict[str, str]) -> dict[str, str]:
    """`headers` plus API_HEADERS (a header the response set itself wins)."""
    present = {k.lower() for k in headers}
    return {**headers, **{k: v for k, v in API_HEADERS.items() if k not in present}}
