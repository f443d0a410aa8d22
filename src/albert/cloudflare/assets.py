"""Serving a static asset from the worker, with headers the worker decides.

Workers static assets apply `web/_headers` to what they serve before the worker runs.
A page whose headers depend on the request (the embedded chat, albert.embed) is routed
to the worker instead (`run_worker_first`), which reads the file through the assets
binding and sends it with its own headers only, whatever the platform added.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin

from albert.cloudflare.http import to_response
from albert.web import HttpResponse


async def asset_with_headers(
    assets: Any, request_url: str, path: str, headers: dict[str, str], *, head: bool = False
) -> Any:
    """The asset at `path` of the request's origin, sent with exactly `headers`."""
    from workers import Response

    answer = await assets.fetch(urljoin(request_url, path))
    if int(answer.status) != 200:
        return to_response(
            HttpResponse.error(
                502, "asset_unavailable", f"the page could not be read ({answer.status})"
            )
        )
    body = b"" if head else bytes(await answer.bytes())
    content_type = answer.headers.get("content-type") or "text/html; charset=utf-8"
    return Response(body or None, status=200, headers={**headers, "content-type": content_type})
