"""Signed tokens: kids that differ per key, rotation with bare keys, and malformed input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert.auth.tokens import (
    TokenError,
    derived_kid,
    issue_token,
    parse_key,
    verify_token,
)

NOW = 1_800_000_000
CLIENT = "c_" + "a" * 24
A = "first-bare-signing-key-aaaaaaaaaaaa"
B = "second-bare-signing-key-bbbbbbbbbbb"


def test_bare_keys_get_kids_derived_from_the_key() -> None:
    a, b = parse_key(A), parse_key(B)
    assert a.kid == derived_kid(A.encode()) and b.kid == derived_kid(B.encode())
    assert a.kid != b.kid
    assert parse_key(A).kid == a.kid  # stable across restarts


def test_a_prefix_that_is_no_kid_belongs_to_a_bare_secret() -> None:
    key = parse_key("not a kid:rest-of-the-secret-0123456789")
    assert key.secret == b"not a kid:rest-of-the-secret-0123456789"
    explicit = parse_key("k7:" + "x" * 20)
    assert (explicit.kid, explicit.secret) == ("k7", b"x" * 20)


def test_rotating_bare_keys_keeps_old_tokens_valid() -> None:
    old = issue_token(
        parse_key(A),
        client_id=CLIENT,
        tenant="default",
        expires_at=NOW + 60,
        issued_at_ms=NOW * 1000,
    )
    keys = [parse_key(B), parse_key(A, valid_until=NOW + 30)]
    assert verify_token(old, keys, now=NOW).client_id == CLIENT
    with pytest.raises(TokenError, match="retired"):
        verify_token(old, keys, now=NOW + 30)


def test_two_explicit_keys_sharing_a_kid_are_both_tried() -> None:
    first, second = parse_key("k1:" + "1" * 20), parse_key("k1:" + "2" * 20)
    token = issue_token(
        first, client_id=CLIENT, tenant="default", expires_at=NOW + 60, issued_at_ms=NOW * 1000
    )
    assert verify_token(token, [second, first], now=NOW).client_id == CLIENT
    with pytest.raises(TokenError, match="bad signature"):
        verify_token(token, [second], now=NOW)


def test_tokens_of_bare_keys_from_before_derived_kids_still_verify() -> None:
    legacy = parse_key("k1:" + A)  # the shape a bare key used to sign with
    legacy = legacy.model_copy(update={"secret": A.encode()})
    token = issue_token(
        legacy, client_id=CLIENT, tenant="default", expires_at=NOW + 60, issued_at_ms=NOW * 1000
    )
    assert verify_token(token, [parse_key(A)], now=NOW).client_id == CLIENT


def _valid() -> str:
    return issue_token(
        parse_key(A),
        client_id=CLIENT,
        tenant="default",
        expires_at=NOW + 60,
        issued_at_ms=NOW * 1000,
    )


@pytest.mark.parametrize(
    "mutate",
    [
        lambda t: t + "\u00e9",  # the probe's .%C3%A9
        lambda t: t[:-1] + "\u00e9",
        lambda t: t.replace(".", ".\u0661"),  # Arabic-Indic digit one
        lambda t: t + "=",
        lambda t: t + " ",
        lambda t: " " + t,
        lambda t: t + "\x00",
        lambda t: t + ".x",
        lambda t: t.replace(".", ".."),
        lambda t: t.split(".")[0] + ".",
        lambda t: "." + t.split(".")[1],
        lambda t: t + "\ud800",  # a lone surrogate
        lambda t: t.replace("a", "\uff41"),  # full-width a
        lambda t: t + "A" * 2000,
    ],
)
def test_malformed_tokens_are_token_errors(mutate) -> None:
    with pytest.raises(TokenError):
        verify_token(mutate(_valid()), [parse_key(A)], now=NOW)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=300) | st.from_regex(r"[A-Za-z0-9_.\-]{0,200}", fullmatch=True))
def test_any_string_is_an_identity_or_a_token_error(token: str) -> None:
    try:
        verify_token(token, [parse_key(A)], now=NOW)
    except TokenError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_payload_under_a_valid_signature_is_an_identity_or_a_token_error(raw: bytes) -> None:
    import base64
    import hashlib
    import hmac

    body = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    if not body:
        return
    key = parse_key(A)
    signature = base64.urlsafe_b64encode(
        hmac.new(key.secret, body.encode(), hashlib.sha256).digest()
    ).decode()
    try:
        verify_token(f"{body}.{signature.rstrip('=')}", [key], now=NOW)
    except TokenError:
        pass


def test_a_token_checked_before_is_still_checked_against_the_time_and_the_keys() -> None:
    """Signatures are worked out once per token and key set; nothing else is remembered."""
    key = parse_key(A)
    token = issue_token(
        key, client_id=CLIENT, tenant="default", expires_at=NOW + 60, issued_at_ms=NOW * 1000
    )
    for _ in range(3):  # the second and third answers come from what the first worked out
        assert verify_token(token, [key], now=NOW).client_id == CLIENT
    with pytest.raises(TokenError, match="expired"):
        verify_token(token, [key], now=NOW + 60)
    with pytest.raises(TokenError, match="retired"):
        verify_token(token, [parse_key(A, valid_until=NOW + 10)], now=NOW + 10)
    with pytest.raises(TokenError, match="unknown key"):
        verify_token(token, [parse_key(B)], now=NOW)
    body, _, signature = token.partition(".")
    forged = f"{body}.{signature[:-2]}{'AA' if signature[-2:] != 'AA' else 'BB'}"
    for _ in range(2):  # a refusal is not remembered as anything: refused each time
        with pytest.raises(TokenError, match="bad signature"):
            verify_token(forged, [key], now=NOW)
    assert verify_token(token, [key], now=NOW + 59).expires_at == NOW + 60


def _signed_payload(payload: dict[str, object]) -> str:
    """A token of an exact payload, signed as issue_token signs (for shapes it no longer
    makes)."""
    import base64
    import hashlib
    import hmac
    import json

    key = parse_key(A)
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    signature = hmac.new(key.secret, body.encode(), hashlib.sha256).digest()
    return body + "." + base64.urlsafe_b64encode(signature).decode().rstrip("=")


def test_a_token_carries_its_session_issue_time_in_milliseconds() -> None:
    key = parse_key(A)
    token = issue_token(
        key,
        client_id=CLIENT,
        tenant="default",
        expires_at=NOW + 60,
        issued_at_ms=NOW * 1000 + 123,
        user_id="auth0|1",
    )
    identity = verify_token(token, [key], now=NOW)
    assert identity.issued_at_ms == NOW * 1000 + 123 and identity.user_id == "auth0|1"


def test_a_token_from_before_issue_times_reads_as_issued_at_zero() -> None:
    key = parse_key(A)
    old = {"v": 1, "kid": key.kid, "sub": CLIENT, "ten": "default", "exp": NOW + 60}
    identity = verify_token(_signed_payload(old), [key], now=NOW)
    assert identity.client_id == CLIENT and identity.issued_at_ms == 0
    with pytest.raises(TokenError, match="malformed"):
        verify_token(_signed_payload({**old, "iat": -1}), [key], now=NOW)


def test_a_field_this_worker_does_not_know_is_ignored_under_a_valid_signature() -> None:
    # A newer worker's token reaching this one during a rolling deploy.
    key = parse_key(A)
    newer = {"v": 1, "kid": key.kid, "sub": CLIENT, "ten": "default", "exp": NOW + 60}
    identity = verify_token(_signed_payload({**newer, "iat": 5, "dev": "x"}), [key], now=NOW)
    assert identity.client_id == CLIENT and identity.issued_at_ms == 5
    # What it knows is still checked.
    with pytest.raises(TokenError, match="malformed"):
        verify_token(_signed_payload({**newer, "dev": "x", "ten": "No Tenant"}), [key], now=NOW)
