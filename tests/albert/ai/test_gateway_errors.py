"""Gateway errors: classified for the browser, redacted for the log."""

from __future__ import annotations

import pytest

from albert.ai.gateway_errors import http_error, redact, stream_error

KEY = "sk-proj-9f8e7d6c5b4a"


@pytest.mark.parametrize(
    "body",
    [
        f"Incorrect API key provided: Bearer {KEY}",
        f'{{"error": {{"message": "bad key {KEY}"}}}}',
        '{"error": "Authorization: Bearer abc.def.ghi is invalid"}',
        "api_key=zzz-unknown-key-1 rejected",
        '{"api-key": "another-one-2"}',
        "token: t0k3n-value-3",
        "sk-someone-elses-key-4",
        "Basic dXNlcjpwYXNz",
    ],
)
def test_credentials_never_survive_redaction(body: str) -> None:
    cleaned = redact(body, [KEY])
    for secret in (KEY, "abc.def.ghi", "zzz-unknown-key-1", "another-one-2", "t0k3n-value-3"):
        assert secret not in cleaned
    assert "sk-someone" not in cleaned and "dXNlcjpwYXNz" not in cleaned
    assert "[redacted]" in cleaned


@pytest.mark.parametrize(
    ("status", "retryable", "words"),
    [
        (400, False, "rejected the request"),
        (401, False, "credentials"),
        (403, False, "credentials"),
        (404, False, "model or endpoint"),
        (408, True, "trying again"),
        (429, True, "rate limiting"),
        (500, True, "trying again"),
        (503, True, "trying again"),
        (418, False, "refused"),
    ],
)
def test_statuses_are_classified_without_the_body(status, retryable, words) -> None:
    error = http_error(status, f"echo {KEY} and some internal host db-7.internal", [KEY])
    assert error.retryable is retryable
    assert words in str(error) and f"HTTP {status}" in str(error)
    assert KEY not in str(error) and "db-7" not in str(error)


def test_stream_errors_say_whether_to_retry_and_the_providers_reason_redacted() -> None:
    detail = f'{{"message": "Overloaded, key {KEY}"}}'
    overloaded = stream_error(detail, [KEY], f"Overloaded, key {KEY}")
    assert overloaded.retryable and KEY not in str(overloaded)
    assert str(overloaded).endswith(": Overloaded, key [redacted]")
    other = stream_error('{"message": "x"}', [], "content policy:\n  " + "refused " * 60)
    assert "content policy: refused refused" in str(other)
    assert "\n" not in str(other) and len(str(other).split(": ", 1)[1]) == 200
