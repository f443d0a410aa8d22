"""A model failure in plain words: what happened and what to do next, the technical detail
apart (the browser shows it folded, the log gets it on one line).

Nothing here may carry a secret: the host is named without its user info or path, the
detail is redacted again with the configured key before it leaves, and the gateway's own
error body (`ModelError.gateway_said`) stays in the log, never in the detail.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit

from albert.ai.gateway_errors import redact
from albert.ai.model import ModelError

# The technical detail is short: one line under the message.
MAX_DETAIL_CHARS = 400
# A host is a name of letters, digits, dots and hyphens, or an IPv6 literal: anything else
# in it ("gw.example.com;key=…") is not a host to show.
_HOST_NAME = re.compile(r"[\w.-]+")
_IPV6 = re.compile(r"[0-9a-f:.]+")
# A wait longer than a day is no wait to tell.
MAX_WAIT_SECONDS = 86_400


class PlainError(NamedTuple):
    """What the user reads, and the detail shown folded under it."""

    message: str
    detail: str


def _split(base_url: str) -> SplitResult:
    """The endpoint's address in parts, read as a host where it has no scheme."""
    return urlsplit(base_url if "//" in base_url else f"//{base_url}")


def endpoint_host(base_url: str) -> str:
    """The host (and port) of a model endpoint, without user info, path or query: safe to
    show ("" when there is none)."""
    if not base_url:
        return ""
    try:
        parts = _split(base_url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return ""
    if not host:
        return ""
    if ":" in host:  # an IPv6 literal
        if not _IPV6.fullmatch(host):
            return ""
        host = f"[{host}]"
    elif not _HOST_NAME.fullmatch(host):
        return ""
    return f"{host}:{port}" if port else host


def explain_model_error(
    exc: ModelError, *, base_url: str, model_name: str, secrets: tuple[str, ...] = ()
) -> PlainError:
    """The plain message and the technical detail of a failed model step."""
    host = endpoint_host(base_url)
    at = f" at {host}" if host else ""
    service = f"the model service{at}"
    message = _message(exc, service=service, host=host, model_name=model_name)
    detail = f"{exc.kind}"
    if exc.status is not None:
        detail += f", HTTP {exc.status}"
    if host:
        detail += f", {host}"
    detail += f": {exc}"
    detail = redact(detail, (*secrets, *_url_secrets(base_url)))
    if len(detail) > MAX_DETAIL_CHARS:
        detail = detail[: MAX_DETAIL_CHARS - 1] + "…"
    return PlainError(message, detail)


def _url_secrets(base_url: str) -> tuple[str, ...]:
    """The parts of the endpoint's address that may hold a credential (the address itself,
    its user info, path and query values), to redact wherever an error repeats them."""
    if not base_url:
        return ()
    try:
        parts = _split(base_url)
        found = [base_url, parts.username or "", parts.password or "", parts.path]
        found += [parts.query, parts.fragment, *(v for _, v in parse_qsl(parts.query))]
    except ValueError:
        return (base_url,)
    found += [pair.partition("=")[2] for pair in parts.query.split("&")]
    return tuple({*found, *map(unquote, found)} - {""})


def _message(exc: ModelError, *, service: str, host: str, model_name: str) -> str:
    status = exc.status
    if exc.kind == "network":
        where = f"the model service at {host}" if host else "the model service"
        return (
            f"Albert could not reach {where}. Check MODEL_BASE_URL (the address, and that "
            "the service is running), then try again."
        )
    if exc.kind == "timeout":
        return (
            f"{_cap(service)} did not answer in time. Try again; if it keeps happening, "
            "check that MODEL_BASE_URL points at a working service."
        )
    if exc.kind == "rate_limited":
        after = exc.retry_after
        wait = " a moment"
        if after is not None and math.isfinite(after) and 0 < after <= MAX_WAIT_SECONDS:
            wait = f" about {after:g} s"
        if status == 429:
            return f"{_cap(service)} is limiting requests right now. Wait{wait} and try again."
        return f"The model's budget is used up for now. Wait{wait} and try again."
    if exc.kind == "stream_cut":
        return "The model's answer broke off. Try again."
    if exc.kind == "bad_response":
        return (
            f"{_cap(service)} sent an answer Albert could not read. Try again; if it keeps "
            "happening, check that MODEL_BASE_URL is an OpenAI-compatible endpoint and "
            f'MODEL_NAME ("{model_name}") is a chat model.'
        )
    return _status_message(status, service=service, model_name=model_name)


def _status_message(status: int | None, *, service: str, model_name: str) -> str:
    """An HTTP answer of the gateway (None: no model is configured at all)."""
    if status is None:
        return (
            "No model is set up. Set MODEL_BASE_URL, MODEL_API_KEY and MODEL_NAME (or run "
            "locally, where the demo planner answers without a model)."
        )
    if status in (401, 403):
        return f"{_cap(service)} refused Albert's key. Check MODEL_API_KEY."
    if status == 404:
        return (
            f'{_cap(service)} does not know the model "{model_name}". Check MODEL_NAME, '
            "and that MODEL_BASE_URL ends where the API starts (often /v1)."
        )
    if status in (400, 413, 422):
        return (
            f"{_cap(service)} rejected the request. Try again; if it keeps happening, "
            f'start a new conversation or check MODEL_NAME ("{model_name}").'
        )
    if status == 502:
        return "The model stopped the answer with an error. Try again, or ask differently."
    if status >= 500:
        return f"{_cap(service)} had a problem. Try again in a moment."
    return f"{_cap(service)} refused the request. Check MODEL_BASE_URL and MODEL_API_KEY."


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]
