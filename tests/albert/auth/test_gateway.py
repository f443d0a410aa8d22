"""The router with host JWTs, against a real JWKS endpoint on loopback: each case's answer
(status and body) as a browser or the host product sees it."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from albert.auth.gateway import route_request
from albert.auth.identify import Authenticator
from albert.auth.jwks import JwksRegistry
from albert.router import Forward
from albert.settings import Settings
from albert.web import HttpRequest, HttpResponse
from tests.support.identity_provider import (
    AUDIENCE,
    ISSUER,
    SHARED_SECRET,
    IdentityProvider,
    new_key,
    unsigned_token,
)

SIGNING_KEY = "k2:" + "s" * 32


@pytest.fixture
def idp() -> Iterator[IdentityProvider]:
    with IdentityProvider(new_key("RS256", "old"), new_key("ES256", "ec")) as provider:
        yield provider


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def authenticator(idp: IdentityProvider, http: httpx.AsyncClient, **env: str) -> Authenticator:
    tenants = {
        "acme": {
            "name": "Acme",
            "jwt_issuer": ISSUER,
            "jwt_audience": AUDIENCE,
            "jwt_hs256_secret": "AUTH_JWT_SECRET",
        }
    }
    settings = Settings.from_env(
        {
            "ALBERT_MODE": "local",
            "AUTH_SIGNING_KEY": SIGNING_KEY,
            "AUTH_JWKS_URL": idp.jwks_url,
            "AUTH_JWKS_MIN_REFRESH_SECONDS": "0",
            "TENANTS": json.dumps(tenants),
            **env,
        }
    )
    return Authenticator(settings, http, registry=JwksRegistry())


async def send(
    auth: Authenticator, token: str, path: str = "/api/session", method: str = "POST"
) -> HttpResponse | Forward:
    request = HttpRequest(
        method=method, path=path, headers={"authorization": f"Bearer {token}"}, body=b""
    )
    return await route_request(request, int(time.time()), auth)


async def refusal(auth: Authenticator, token: str) -> tuple[int, dict]:
    answer = await send(auth, token)
    assert isinstance(answer, HttpResponse)
    return answer.status, json.loads(answer.body)


async def test_sign_in_gives_a_session_of_the_user_on_every_device(idp, http) -> None:
    auth = authenticator(idp, http)
    answer = await send(auth, idp.token("auth0|42"))
    assert isinstance(answer, HttpResponse) and answer.status == 201
    first = json.loads(answer.body)
    assert first["user_id"] == "auth0|42" and first["tenant"]["key"] == "acme"
    assert first["token"].count(".") == 1  # a session token of ours, not the JWT
    second = json.loads((await send(auth, idp.token("auth0|42"))).body)  # type: ignore[union-attr]
    assert second["client_id"] != first["client_id"]  # another browser
    for session in (first, second):
        decision = await send(auth, session["token"], "/api/threads", "GET")
        assert isinstance(decision, Forward) and decision.object_name == "acme/user/auth0|42"
    # The JWT itself is a bearer too (the host may call the API directly).
    decision = await send(auth, idp.token("auth0|42"), "/api/threads", "GET")
    assert isinstance(decision, Forward) and decision.object_name == "acme/user/auth0|42"
    # A signed-in session's /api/me is the user's object's to answer (it knows revocations).
    me = await send(auth, first["token"], "/api/me", "GET")
    assert isinstance(me, Forward) and me.object_name == "acme/user/auth0|42"


async def test_a_rotated_key_is_fetched_on_its_first_token(idp, http) -> None:
    auth = authenticator(idp, http)
    assert (await refusal(auth, idp.token()))[0] == 201
    new = idp.publish(new_key("RS256", "new"))
    assert (await refusal(auth, idp.token(key=new)))[0] == 201
    assert idp.endpoint.requests == 2
    idp.retire("old")
    old_token = idp.token(key=new_key("RS256", "old"))  # a key nobody publishes now
    assert await refusal(auth, old_token) == (
        401,
        {"error": "unauthorized", "detail": "bad signature"},
    )


@pytest.mark.parametrize(
    ("case", "detail"),
    [
        ("bad signature", "bad signature"),
        ("unknown kid", "unknown key id"),
        ("wrong issuer", "wrong issuer"),
        ("wrong audience", "wrong audience"),
        ("expired", "token expired"),
        ("not yet valid", "token not yet valid"),
        ("alg none", "algorithm not allowed"),
        ("alg RS512", "algorithm not allowed"),
        ("ES256 under an RSA kid", "algorithm not allowed for this key"),
        ("HS256 without a shared secret", "algorithm not allowed for this tenant"),
    ],
)
async def test_each_bad_token_is_refused_with_its_reason(idp, http, case, detail) -> None:
    auth = authenticator(idp, http)
    now = time.time()
    tokens = {
        "bad signature": lambda: idp.token(key=new_key("RS256", "old")),
        "unknown kid": lambda: idp.token(key=new_key("RS256", "nobody")),
        "wrong issuer": lambda: idp.token(iss="https://evil.example/"),
        "wrong audience": lambda: idp.token(aud="someone-else"),
        "expired": lambda: idp.token(now=now - 7200),
        "not yet valid": lambda: idp.token(nbf=int(now) + 600),
        "alg none": lambda: unsigned_token(
            {"iss": ISSUER, "aud": AUDIENCE, "sub": "u", "exp": int(now) + 60}, {"alg": "none"}
        ),
        "alg RS512": lambda: _sign_as(idp, "RS512", "old"),
        "ES256 under an RSA kid": lambda: idp.token(key=idp.keys["ec"], kid="old"),
        "HS256 without a shared secret": lambda: idp.hs256_token(),
    }
    status, body = await refusal(auth, tokens[case]())
    assert (status, body) == (401, {"error": "unauthorized", "detail": detail})
    # Not on the session route only: every API route refuses it the same way.
    answer = await send(auth, tokens[case](), "/api/threads", "GET")
    assert isinstance(answer, HttpResponse) and answer.status == 401


async def test_hs256_with_the_shared_secret_signs_in(idp, http) -> None:
    auth = authenticator(idp, http, AUTH_JWT_SECRET=SHARED_SECRET)
    answer = await send(auth, idp.hs256_token("u-7"))
    assert answer.status == 201 and json.loads(answer.body)["user_id"] == "u-7"  # type: ignore[union-attr]
    status, body = await refusal(auth, idp.hs256_token(secret="x" * 40))
    assert (status, body["detail"]) == (401, "bad signature")


async def test_jwks_down_cached_keys_still_work_and_no_keys_is_a_clear_503(idp, http) -> None:
    auth = authenticator(idp, http)
    assert (await refusal(auth, idp.token()))[0] == 201
    idp.endpoint.status = 502
    assert (await refusal(auth, idp.token()))[0] == 201  # the cached set

    cold = authenticator(idp, http)  # a fresh isolate: nothing cached
    answer = await send(cold, idp.token())
    assert isinstance(answer, HttpResponse) and answer.status == 503
    body = json.loads(answer.body)
    assert body["error"] == "auth_unavailable" and "signing keys" in body["detail"]
    assert int(answer.headers["retry-after"]) >= 1
    # An anonymous session is unaffected by the outage.
    anonymous = await route_request(
        HttpRequest(method="POST", path="/api/session"), int(time.time()), cold
    )
    assert isinstance(anonymous, HttpResponse) and anonymous.status == 201


async def test_a_deployment_without_host_sign_in_says_so(idp, http) -> None:
    auth = authenticator(idp, http, TENANTS="{}")
    assert await refusal(auth, idp.token()) == (
        401,
        {"error": "unauthorized", "detail": "this deployment does not accept host tokens"},
    )


def _sign_as(idp: IdentityProvider, algorithm: str, kid: str) -> str:
    import jwt

    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "u", "exp": int(time.time()) + 60}
    return jwt.encode(claims, idp.keys[kid].private, algorithm=algorithm, headers={"kid": kid})


async def test_a_jwt_past_its_exp_within_the_leeway_signs_in_no_session(idp, http) -> None:
    auth = authenticator(idp, http)
    now = time.time()
    # Issued an hour ago, expired 10 s ago: inside the 30 s leeway, so it is a valid
    # bearer still, but a session made from it would have ended before it began.
    late = idp.token("u-late", now=now - 3600, exp=int(now) - 10)
    status, body = await refusal(auth, late)
    assert (status, body["detail"]) == (401, "token expired")
    fresh = await send(auth, idp.token("u-late"))
    assert isinstance(fresh, HttpResponse) and fresh.status == 201
    assert json.loads(fresh.body)["expires_at"] > now
