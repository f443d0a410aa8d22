"""What the data server says in public names no URL and no credential.

`/healthz` is open (probes call it without a key) and a tool's error reaches the model,
the user's tool chip and any other MCP client. Both used to carry the failing request's
text, and with it `TYPESENSE_URL` (which may hold `user:password@`), a chain RPC URL
(whose path often is the provider's key) or a source's URL. Here every URL becomes
`[URL]` and every configured secret `[redacted]`, however it is spelt in the text; the log
keeps the detail for the operator.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from albert.search import TypesenseConnectionError, TypesenseError
from data_server.settings import DataServerSettings

URL_SHOWN = "[URL]"
SECRET_SHOWN = "[redacted]"
# A scheme and what follows up to a space or quote: any URL a message may quote, whatever
# its scheme (http, https, postgresql, wss), userinfo included.
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s\"'<>`]*")
# Shorter secrets than this are words, not credentials (a user named "ts").
_MIN_SECRET = 4
# A URL's path segment or query value this long is taken for a key.
_MIN_KEY = 12


def settings_secrets(settings: DataServerSettings) -> list[str]:
    """Every credential the settings hold, and each URL with credentials as a whole."""
    urls = [
        settings.typesense_url,
        settings.database_url.get_secret_value(),
        *settings.chain_rpc_urls().values(),
    ]
    found = [settings.typesense_api_key.get_secret_value(), settings.api_key.get_secret_value()]
    for url in urls:
        if not url:
            continue
        found.append(url)
        parts = urlsplit(url)
        for part in (parts.username, parts.password):
            if part:
                found += [part, unquote(part)]
        # An RPC provider's key is a path segment or a query value (/v2/<key>, ?apikey=).
        pieces = [*parts.path.split("/"), *(v for _, _, v in _pairs(parts.query))]
        found += [p for p in pieces if len(p) >= _MIN_KEY]
    return [s for s in dict.fromkeys(found) if len(s) >= _MIN_SECRET]


def _pairs(query: str) -> Iterable[tuple[str, str, str]]:
    for pair in query.split("&"):
        yield pair.partition("=")


def public_text(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every URL and every given secret taken out.

    A secret counts where it stands alone, not inside a longer word: a database user named
    `postgres` is taken out, the backend's name `postgresql` stays.
    """
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= _MIN_SECRET:
            alone = re.compile(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])")
            text = alone.sub(SECRET_SHOWN, text)
    return _URL.sub(URL_SHOWN, text)


def public_body(body: Any, secrets: Iterable[str] = ()) -> Any:
    """A JSON body with `public_text` applied to every string in it, keys included."""
    kept = list(secrets)
    if isinstance(body, str):
        return public_text(body, kept)
    if isinstance(body, dict):
        return {public_body(k, kept): public_body(v, kept) for k, v in body.items()}
    if isinstance(body, list | tuple):
        return [public_body(v, kept) for v in body]
    return body


def public_json(
    endpoint: Callable[[Request], Awaitable[Response]], secrets: Iterable[str]
) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint, its JSON answer passed through `public_body` (same status)."""
    kept = list(secrets)

    async def answer(request: Request) -> Response:
        response = await endpoint(request)
        body = json.loads(bytes(response.body))
        return JSONResponse(public_body(body, kept), status_code=response.status_code)

    return answer


def index_unavailable(exc: TypesenseError) -> str:
    """Why the search index failed a tool, in words that quote nothing from the request."""
    if isinstance(exc, TypesenseConnectionError):
        timed_out = "timed out" in exc.message
        reason = "it did not answer in time" if timed_out else "it cannot be reached"
    else:
        reason = f"it answered HTTP {exc.status}"
    return f"the vault index is unavailable right now ({reason})"
