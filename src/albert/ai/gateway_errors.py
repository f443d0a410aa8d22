"""What a model gateway's failure may tell the browser, and what only the log sees.

A gateway's error body is its own text: it may echo the request's credentials
(some answer a bad key with the key itself), internal hosts or account ids. The
browser gets a classified message (the status, what it means, whether a retry
can help); the body goes to the log (one line with the failed turn, written by
albert.chat.driver), with every configured secret and anything shaped like a
credential redacted. An error reported inside a stream adds the
provider's own message, redacted the same way and cut short: without it a user
cannot tell a content refusal from a broken provider.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from albert.ai.model import ModelError

MAX_LOGGED_CHARS = 2_000
_REDACTED = "[redacted]"
# Shapes of credentials a gateway might echo even when they are not ours.
_SCHEME_CREDENTIAL = re.compile(r"(?i)\b(bearer|basic)(\s+)[^\s\"',;]+")
_KEY_SHAPED = re.compile(r"\bsk-[A-Za-z0-9_-]{6,}")
_NAMED_CREDENTIAL = re.compile(
    r"(?i)\b(api[_-]?key|access[_-]?token|token|secret|password|authorization)"
    r"(\"?\s*[:=]\s*\"?)[^\s\"',;&]+"
)


def redact(text: str, secrets: Sequence[str]) -> str:
    """`text` with the given secrets and anything credential-shaped replaced."""
    for secret in sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, _REDACTED)
    text = _SCHEME_CREDENTIAL.sub(lambda m: f"{m.group(1)}{m.group(2)}{_REDACTED}", text)
    text = _KEY_SHAPED.sub(_REDACTED, text)
    return _NAMED_CREDENTIAL.sub(lambda m: f"{m.group(1)}{m.group(2)}{_REDACTED}", text)


def _meaning(status: int) -> str:
    if status in (401, 403):
        return "refused this deployment's credentials"
    if status == 404:
        return "does not know the configured model or endpoint"
    if status in (400, 413, 422):
        return "rejected the request"
    if status in (408, 425) or status >= 500:
        return "failed; trying again may help"
    return "refused the request"


def http_error(
    status: int, body: str, secrets: Sequence[str], retry_after: float | None = None
) -> ModelError:
    """The ModelError for a non-200 answer; the body (redacted) goes with it as
    `gateway_said`, for the log and the folded detail, never in its message."""
    said = redact(body[:MAX_LOGGED_CHARS], secrets)
    if status == 429:
        error = ModelError(
            "rate_limited",
            "the model gateway is rate limiting requests (HTTP 429)",
            status=429,
            retry_after=retry_after,
        )
    else:
        # 408/425 are worth a retry like a 5xx is: say so through the status we report.
        reported = 503 if status in (408, 425) else status
        error = ModelError(
            "http", f"the model gateway {_meaning(status)} (HTTP {status})", status=reported
        )
    error.gateway_said = said
    return error


_RETRYABLE_WORDS = ("rate", "overload", "capacity", "timeout", "unavailable", "busy")
# The provider's own reason, as much of it as an error frame shows.
MAX_REASON_CHARS = 200


def stream_error(detail: str, secrets: Sequence[str], reason: str = "") -> ModelError:
    """The ModelError for an error reported inside a stream: whether a retry can help, and
    the provider's own `reason` (its message), redacted, on one line, cut short. The whole
    `detail` (redacted) goes with it as `gateway_said`, for the log."""
    logged = redact(detail[:MAX_LOGGED_CHARS], secrets)
    said = " ".join(redact(reason, secrets).split())
    if len(said) > MAX_REASON_CHARS:
        said = said[: MAX_REASON_CHARS - 1] + "…"
    suffix = f": {said}" if said else ""
    lowered = detail.lower()
    if any(word in lowered for word in _RETRYABLE_WORDS):
        error = ModelError(
            "http",
            "the model gateway stopped the answer (overloaded or limited; trying again may "
            f"help){suffix}",
            status=503,
        )
    else:
        message = f"the model gateway stopped the answer with an error{suffix}"
        error = ModelError("http", message, status=502)
    error.gateway_said = logged
    return error
