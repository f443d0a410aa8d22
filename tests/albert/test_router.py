"""The router's decisions: health, sessions, signed tokens, rotation, tenants, origins."""

from __future__ import annotations

import json

from albert.auth.tokens import SigningKey, issue_token, new_client_id
from albert.router import Forward, route
from albert.settings import Settings
from albert.web import HttpRequest, HttpResponse

NOW = 1_800_000_000
KEY = "k2:" + "s" * 32
OLD = "k1:" + "o" * 32
SETTINGS = Settings.from_env(
    {
        "AUTH_SIGNING_KEY": KEY,
        "AUTH_PREVIOUS_SIGNING_KEY": OLD,
        "AUTH_PREVIOUS_KEY_VALID_UNTIL": str(NOW + 3600),
        "TENANTS": json.dumps({"acme": {"name": "Acme Terminal", "prompt_flavour": "Be terse."}}),
        "ALLOWED_ORIGINS": "https://terminal.example",
    }
)


def call(
    method: str, path: str, now: int = NOW, settings: Settings = SETTINGS, **kw
) -> HttpResponse | Forward:
    return route(HttpRequest(method=method, path=path, **kw), settings, now)


def session(tenant: str | None = None, token: str | None = None) -> dict:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    body = json.dumps({"tenant": tenant}).encode() if tenant else b""
    response = call("POST", "/api/session", headers=headers, body=body)
    assert isinstance(response, HttpResponse) and response.status == 201, response
    return json.loads(response.body)


def bearer(token: str) -> dict[str, dict[str, str]]:
    return {"headers": {"authorization": f"Bearer {token}"}}


def signed_in_token(issued_at_ms: int = NOW * 1000) -> str:
    """A session of acme's user auth0|9, as sign-in with a host JWT issues it."""
    return issue_token(
        SETTINGS.signing_keys()[0],
        client_id=new_client_id(),
        tenant="acme",
        expires_at=NOW + 600,
        issued_at_ms=issued_at_ms,
        user_id="auth0|9",
    )


def test_health_and_sessions_touch_no_object() -> None:
    assert isinstance(call("GET", "/healthz"), HttpResponse)
    assert call("GET", "/api/session").status == 405  # type: ignore[union-attr]
    issued = session()
    assert issued["client_id"].startswith("c_") and issued["tenant"] == {
        "key": "default",
        "name": "Albert",
    }
    assert issued["expires_at"] == NOW + SETTINGS.session_ttl_seconds


def test_a_valid_token_forwards_to_the_verified_object_only() -> None:
    issued = session()
    decision = call("GET", "/api/threads", **bearer(issued["token"]))
    assert isinstance(decision, Forward)
    assert decision.object_name == f"default/{issued['client_id']}"
    upgrade = {"upgrade": "websocket"}
    by_query = call("GET", "/api/chat", query={"token": issued["token"]}, headers=upgrade)
    assert isinstance(by_query, Forward) and by_query.identity == decision.identity


def test_a_query_token_counts_only_on_a_websocket_upgrade() -> None:
    token = session()["token"]
    for path in ("/api/threads", "/api/me", "/api/mcp/servers", "/api/chat"):
        assert _status(call("GET", path, query={"token": token})) == 401, path
    # Any spelling of the header counts; the value is compared without case.
    for value in ("websocket", "WebSocket", "WEBSOCKET"):
        upgrade = call("GET", "/api/chat", query={"token": token}, headers={"upgrade": value})
        assert isinstance(upgrade, Forward)


def _status(decision: HttpResponse | Forward) -> int:
    assert isinstance(decision, HttpResponse), "expected a refusal, got a forward"
    return decision.status


def test_missing_forged_and_expired_tokens_are_401() -> None:
    issued = session()
    token = issued["token"]
    body, _, signature = token.partition(".")
    assert _status(call("GET", "/api/threads")) == 401
    assert _status(call("GET", "/api/threads", **bearer("garbage"))) == 401
    # A payload naming another client, with the original signature.
    forged_body = body[:-2] + ("AA" if body[-2:] != "AA" else "BB")
    assert _status(call("GET", "/api/threads", **bearer(f"{forged_body}.{signature}"))) == 401
    # A token signed with a key the server does not have.
    stranger = SigningKey(kid="k2", secret=b"x" * 32)
    other = issue_token(
        stranger,
        client_id=new_client_id(),
        tenant="default",
        expires_at=NOW + 60,
        issued_at_ms=NOW * 1000,
    )
    assert _status(call("GET", "/api/threads", **bearer(other))) == 401
    expired = call("GET", "/api/threads", now=issued["expires_at"], **bearer(token))
    assert _status(expired) == 401
    assert b"expired" in expired.body  # type: ignore[union-attr]
    assert expired.headers["www-authenticate"] == "Bearer"  # type: ignore[union-attr]


def test_rotation_keeps_old_tokens_until_the_grace_period_ends() -> None:
    old_key = SigningKey(kid="k1", secret=b"o" * 32)
    old_token = issue_token(
        old_key,
        client_id=new_client_id(),
        tenant="default",
        expires_at=NOW + 86_400,
        issued_at_ms=NOW * 1000,
    )
    assert isinstance(call("GET", "/api/threads", **bearer(old_token)), Forward)
    after_grace = call("GET", "/api/threads", now=NOW + 3600, **bearer(old_token))
    assert _status(after_grace) == 401 and b"retired key" in after_grace.body  # type: ignore[union-attr]
    # Renewing with the old token keeps the client and signs with the current key.
    renewed = session(token=old_token)
    decision = call("GET", "/api/threads", now=NOW + 7200, **bearer(renewed["token"]))
    assert isinstance(decision, Forward)
    assert renewed["token"] != old_token


def test_renewal_keeps_the_client_and_tenants_never_share_objects() -> None:
    first = session()
    again = session(token=first["token"])
    assert again["client_id"] == first["client_id"]
    acme = session(tenant="acme", token=first["token"])
    assert acme["client_id"] != first["client_id"] and acme["tenant"]["name"] == "Acme Terminal"
    a = call("GET", "/api/threads", **bearer(first["token"]))
    b = call("GET", "/api/threads", **bearer(acme["token"]))
    assert isinstance(a, Forward) and isinstance(b, Forward)
    assert a.object_name.startswith("default/") and b.object_name.startswith("acme/")
    unknown = call("POST", "/api/session", body=b'{"tenant": "nobody"}')
    assert _status(unknown) == 400


def test_websocket_origins_are_checked_against_the_allow_list() -> None:
    token = session()["token"]
    upgrade = {"upgrade": "websocket", "authorization": f"Bearer {token}"}
    ok = call("GET", "/api/chat", headers={**upgrade, "origin": "https://terminal.example"})
    assert isinstance(ok, Forward)
    assert (
        _status(call("GET", "/api/chat", headers={**upgrade, "origin": "https://evil.example"}))
        == 403
    )
    local = Settings.from_env({"ALBERT_MODE": "local"})
    assert local.origin_allowed("http://127.0.0.1:8787") and not local.origin_allowed(
        "https://evil.example"
    )


def test_production_without_a_signing_key_issues_nothing() -> None:
    bare = Settings.from_env({})
    response = call("POST", "/api/session", settings=bare)
    assert _status(response) == 503


def test_client_ids_are_unique() -> None:
    assert len({new_client_id() for _ in range(1000)}) == 1000


def test_a_renewal_keeps_the_session_issue_time_and_revocation_goes_to_the_user() -> None:
    signed_in = signed_in_token(issued_at_ms=NOW * 1000 - 5_000)
    renewed = session(token=signed_in)
    later = call("GET", "/api/threads", now=NOW + 1, **bearer(renewed["token"]))
    assert isinstance(later, Forward)
    # Renewing never makes a session younger than its sign-in, so a revocation covers it.
    assert later.identity.issued_at_ms == NOW * 1000 - 5_000
    anonymous = session()
    fresh = call("GET", "/api/threads", **bearer(anonymous["token"]))
    assert isinstance(fresh, Forward) and fresh.identity.issued_at_ms == NOW * 1000

    revoke = call("POST", "/api/session/revoke", **bearer(signed_in))
    assert isinstance(revoke, Forward) and revoke.object_name == "acme/user/auth0|9"
    me = call("GET", "/api/me", **bearer(signed_in))
    assert isinstance(me, Forward)  # the user's object answers, after its revocation check
    assert _status(call("GET", "/api/session/revoke", **bearer(signed_in))) == 405
    refused = call("POST", "/api/session/revoke", **bearer(anonymous["token"]))
    assert isinstance(refused, HttpResponse) and refused.status == 403
    assert json.loads(refused.body)["error"] == "not_signed_in"
    assert _status(call("POST", "/api/session/revoke")) == 401
    assert isinstance(call("GET", "/api/me", **bearer(anonymous["token"])), HttpResponse)


def test_the_objects_internal_routes_are_never_forwarded_from_outside() -> None:
    signed_in = signed_in_token()
    for path in (
        "/internal/session/check",
        "/internal/claim/export",
        "/internal/claim/commit",
        "//internal/session/check",
    ):
        for method in ("GET", "POST"):
            answer = call(method, path, **bearer(signed_in))
            assert isinstance(answer, HttpResponse) and answer.status == 404, (method, path)
    # The revoke route is not a socket either.
    upgrade = {
        "authorization": f"Bearer {signed_in}",
        "upgrade": "websocket",
        "origin": "https://terminal.example",
    }
    assert _status(call("GET", "/api/session/revoke", headers=upgrade)) == 405
