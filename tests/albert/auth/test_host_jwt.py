"""Host JWTs against a real JWKS endpoint on loopback: rotation, the cache, every refusal.

The router's answers (status and body) for each case are in test_gateway.py; here the
verifier itself, with a clock the test moves.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from cryptography.hazmat.primitives import serialization

from albert.auth.host_jwt import HostJwtVerifier
from albert.auth.jwks import JwksRegistry, JwksUnavailable, parse_cache_control, parse_jwk
from albert.auth.tokens import TokenError
from albert.settings import Settings
from tests.support.identity_provider import (
    AUDIENCE,
    ISSUER,
    SHARED_SECRET,
    IdentityProvider,
    new_key,
    unsigned_token,
)


class Clock:
    """Time the test moves by hand."""

    def __init__(self) -> None:
        self.now = float(int(time.time()))

    def __call__(self) -> float:
        return self.now


def settings_for(idp: IdentityProvider, **extra: str) -> Settings:
    tenants = {
        "acme": {
            "name": "Acme",
            "jwt_issuer": ISSUER,
            "jwt_audience": AUDIENCE,
            "jwks_url": idp.jwks_url,
            # Acme opts in to HS256 with this secret (when the deployment sets it).
            "jwt_hs256_secret": "AUTH_JWT_SECRET",
        },
        "other": {"jwt_issuer": "https://id.other.example/", "jwt_audience": "albert"},
    }
    return Settings.from_env(
        {"ALBERT_MODE": "local", "TENANTS": json.dumps(tenants), "AUTH_JWKS_URL": "", **extra}
    )


@pytest.fixture
def idp() -> Iterator[IdentityProvider]:
    with IdentityProvider(new_key("RS256", "rsa-1"), new_key("ES256", "ec-1")) as provider:
        yield provider


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
def clock() -> Clock:
    return Clock()


def verifier(idp: IdentityProvider, http: httpx.AsyncClient, clock: Clock, **env: str):
    return HostJwtVerifier(
        settings_for(idp, **env), http, registry=JwksRegistry(clock), clock=clock
    )


async def refused(check: HostJwtVerifier, token: str, clock: Clock) -> str:
    with pytest.raises(TokenError) as caught:
        await check.verify(token, now=int(clock()))
    return caught.value.reason


# --- keys, algorithms, rotation ---------------------------------------------------------


async def test_rs256_and_es256_tokens_name_the_user_object(idp, http, clock) -> None:
    check = verifier(idp, http, clock)
    for kid in ("rsa-1", "ec-1"):
        token = idp.token("auth0|5f7c8ec7", key=idp.keys[kid], now=clock())
        identity = await check.verify(token, now=int(clock()))
        assert identity.user_id == "auth0|5f7c8ec7" and identity.tenant == "acme"
        assert identity.object_name == "acme/user/auth0|5f7c8ec7"
        assert identity.expires_at == int(clock()) + 3600
    assert idp.endpoint.requests == 1  # one fetch, cached for both


async def test_rotation_refreshes_on_an_unknown_kid_and_drops_retired_keys(
    idp, http, clock
) -> None:
    check = verifier(idp, http, clock)
    old = idp.token("u1", key=idp.keys["rsa-1"], now=clock())
    assert (await check.verify(old, now=int(clock()))).user_id == "u1"
    assert idp.endpoint.requests == 1
    # The host adds a new key and starts signing with it: the unknown kid makes the
    # worker fetch once, within the cache's max-age.
    new = idp.publish(new_key("RS256", "rsa-2"))
    clock.now += 31  # past the refresh interval, well within max-age
    fresh = idp.token("u1", key=new, now=clock())
    assert (await check.verify(fresh, now=int(clock()))).user_id == "u1"
    assert idp.endpoint.requests == 2
    # Both keys are served: tokens of either verify without another fetch.
    assert (await check.verify(old, now=int(clock()))).user_id == "u1"
    assert idp.endpoint.requests == 2
    # The host retires the old key; once the cached set is past its max-age the worker
    # refetches and the old key's tokens stop.
    idp.retire("rsa-1")
    clock.now += 300
    assert await refused(check, old, clock) == "unknown key id"
    assert (await check.verify(fresh, now=int(clock()))).user_id == "u1"


async def test_a_flood_of_unknown_kids_costs_the_endpoint_one_request_per_interval(
    idp, http, clock
) -> None:
    check = verifier(idp, http, clock)
    await check.verify(idp.token(now=clock()), now=int(clock()))
    clock.now += 31
    stranger = new_key("RS256")
    for n in range(40):
        token = idp.token(key=stranger, kid=f"made-up-{n}", now=clock())
        assert await refused(check, token, clock) == "unknown key id"
    assert idp.endpoint.requests == 2  # the first lookup plus one refresh for them all
    clock.now += 31
    assert await refused(check, idp.token(key=stranger, kid="x", now=clock()), clock) == (
        "unknown key id"
    )
    assert idp.endpoint.requests == 3


async def test_a_signature_by_another_key_under_a_known_kid_is_refused(idp, http, clock) -> None:
    check = verifier(idp, http, clock)
    forged = idp.token(key=new_key("RS256"), kid="rsa-1", now=clock())
    assert await refused(check, forged, clock) == "bad signature"
    tampered = idp.token(now=clock())
    head, _payload, signature = tampered.split(".")
    other = idp.token(sub="admin", now=clock()).split(".")[1]
    assert await refused(check, f"{head}.{other}.{signature}", clock) == "bad signature"


async def test_algorithms_are_pinned_to_the_key(idp, http, clock) -> None:
    check = verifier(idp, http, clock)
    now = int(clock())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "u1", "exp": now + 60}
    # alg none, with or without a kid.
    for header in ({"alg": "none"}, {"alg": "none", "kid": "rsa-1"}, {"alg": "None"}):
        assert await refused(check, unsigned_token(claims, header), clock) == (
            "algorithm not allowed"
        )
    # HS256 signed with the RSA key's public PEM as the "secret": the classic confusion.
    pem = (
        idp.keys["rsa-1"]
        .private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    confused = _hmac_token(claims, pem, kid="rsa-1")
    assert await refused(check, confused, clock) == "algorithm not allowed for this tenant"
    with_secret = verifier(idp, http, clock, AUTH_JWT_SECRET=SHARED_SECRET)
    assert await refused(with_secret, confused, clock) == "bad signature"
    # RS256 naming the EC key, ES256 naming the RSA key.
    rs_on_ec = idp.token(key=idp.keys["rsa-1"], kid="ec-1", now=clock())
    assert await refused(check, rs_on_ec, clock) == "algorithm not allowed for this key"
    es_on_rsa = idp.token(key=idp.keys["ec-1"], kid="rsa-1", now=clock())
    assert await refused(check, es_on_rsa, clock) == "algorithm not allowed for this key"
    # Algorithms host tokens never use, even with a valid-looking signature.
    for alg in ("HS384", "RS512", "PS256", "ES384", "EdDSA"):
        token = unsigned_token(claims, {"alg": alg, "kid": "rsa-1"}) + "c2ln"
        assert await refused(check, token, clock) == "algorithm not allowed"


async def test_a_key_declaring_another_algorithm_verifies_nothing(idp, http, clock) -> None:
    declared = new_key("RS256", "rsa-512")
    jwk = declared.jwk | {"alg": "RS512"}
    idp.endpoint.keys = [*idp.endpoint.keys, jwk]
    check = verifier(idp, http, clock)
    token = idp.token(key=declared, now=clock())
    assert await refused(check, token, clock) == "algorithm not allowed for this key"


def test_jwks_entries_that_may_not_verify_are_skipped() -> None:
    rsa = new_key("RS256", "r").jwk
    assert parse_jwk(rsa) is not None and parse_jwk(rsa).algorithm == "RS256"  # type: ignore[union-attr]
    assert parse_jwk(rsa | {"use": "enc"}) is None
    assert parse_jwk(rsa | {"key_ops": ["encrypt"]}) is None
    assert parse_jwk(rsa | {"d": "private"}) is None
    assert parse_jwk({"kty": "oct", "k": "c2VjcmV0", "kid": "h"}) is None
    ec = new_key("ES256", "e").jwk
    assert parse_jwk(ec | {"crv": "P-384"}) is None
    small = {
        "kty": "RSA",
        "kid": "s",
        "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdg"
        "WMmKJzOg2d3xDWKw4y9dxYxGnNJ6l9fqvXEGY0QqVSGkdY3SvLS-dGBfZnjnXP-jDH1aA0bU",
        "e": "AQAB",
    }
    assert parse_jwk(small) is None  # under 2048 bits
    assert parse_jwk("not a key") is None


@pytest.mark.filterwarnings("ignore::jwt.InsecureKeyLengthWarning")
async def test_hs256_with_the_shared_secret(idp, http, clock) -> None:
    check = verifier(idp, http, clock, AUTH_JWT_SECRET=SHARED_SECRET)
    identity = await check.verify(idp.hs256_token("u9"), now=int(time.time()))
    assert identity.user_id == "u9" and identity.tenant == "acme"
    wrong = idp.hs256_token("u9", secret="another-secret-of-enough-length-0123456789")
    assert await refused(check, wrong, clock) == "bad signature"
    short = verifier(idp, http, clock, AUTH_JWT_SECRET="too-short")
    token = idp.hs256_token("u9", secret="too-short")
    assert await refused(short, token, clock) == "algorithm not allowed for this tenant"
    assert idp.endpoint.requests == 0  # HS256 never asks the JWKS


# --- claims -----------------------------------------------------------------------------


async def test_issuer_and_audience_pick_the_tenant_and_must_match(idp, http, clock) -> None:
    check = verifier(idp, http, clock)
    assert await refused(check, idp.token(iss="https://evil.example/", now=clock()), clock) == (
        "wrong issuer"
    )
    assert await refused(check, idp.token(aud="someone-else", now=clock()), clock) == (
        "wrong audience"
    )
    listed = idp.token(aud=["someone-else", AUDIENCE], now=clock())
    assert (await check.verify(listed, now=int(clock()))).tenant == "acme"
    # The other tenant's issuer with this provider's key: its tenant has no JWKS of its own
    # and none is set globally, so RS256 is not allowed there.
    other = idp.token(iss="https://id.other.example/", now=clock())
    assert await refused(check, other, clock) == "algorithm not allowed for this tenant"
    for claim in ("iss", "aud"):
        assert await refused(check, idp.token(now=clock(), **{claim: None}), clock) in (
            "wrong issuer",
            "wrong audience",
        )


async def test_expiry_and_not_before_with_leeway(idp, http, clock) -> None:
    check = verifier(idp, http, clock)  # leeway 30 s
    now = clock()
    assert await refused(check, idp.token(now=now - 3700), clock) == "token expired"
    within = idp.token(now=now - 3610)  # expired 10 s ago: within the leeway
    assert (await check.verify(within, now=int(now))).user_id == "user-1"
    assert await refused(check, idp.token(nbf=int(now) + 120, now=now), clock) == (
        "token not yet valid"
    )
    assert (await check.verify(idp.token(nbf=int(now) + 10, now=now), now=int(now))).user_id
    assert await refused(check, idp.token(now=now + 600), clock) == "token not yet valid"  # iat
    assert await refused(check, idp.token(exp=None, now=now), clock) == "missing claim: exp"
    assert await refused(check, idp.token(exp="tomorrow", now=now), clock) in (
        "malformed claim: exp",
        "malformed token",
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("exp", float("nan")),
        ("exp", float("inf")),
        ("exp", 10**40),
        ("iat", float("nan")),
        ("nbf", float("-inf")),
    ],
)
async def test_time_claims_that_are_no_time_are_malformed(
    idp, http, clock, name: str, value: float
) -> None:
    # The JSON decoder reads NaN and Infinity; they pass comparisons and fail int().
    check = verifier(idp, http, clock)
    token = idp.token(now=clock(), **{name: value})
    assert await refused(check, token, clock) == f"malformed claim: {name}"


@pytest.mark.parametrize(
    "sub",
    ["a/b", "../x", "", " user", "user name", "ü-user", "x" * 201, "line\nbreak", "-lead"],
)
async def test_the_subject_must_be_safe_in_an_object_name(idp, http, clock, sub: str) -> None:
    check = verifier(idp, http, clock)
    assert (await refused(check, idp.token(sub, now=clock()), clock)).startswith("invalid subject")


@pytest.mark.parametrize(
    "sub",
    [
        "auth0|5f7c8ec7c33c6c004bbafe82",
        "google-oauth2|1043",
        "ann@example.com",
        "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "x" * 200,
    ],
)
async def test_subjects_identity_providers_use_are_accepted(idp, http, clock, sub: str) -> None:
    check = verifier(idp, http, clock)
    assert (await check.verify(idp.token(sub, now=clock()), now=int(clock()))).user_id == sub


async def test_missing_subject(idp, http, clock) -> None:
    check = verifier(idp, http, clock)
    assert await refused(check, idp.token(sub=None, now=clock()), clock) == "missing claim: sub"


@pytest.mark.parametrize(
    "token",
    ["a.b.c", "....", "x" * 9000, "eyJhbGciOiJSUzI1NiJ9.e30", "é.é.é", "a.b.c d"],
)
async def test_malformed_tokens(idp, http, clock, token: str) -> None:
    check = verifier(idp, http, clock)
    with pytest.raises(TokenError) as caught:
        await check.verify(token, now=int(clock()))
    assert caught.value.reason in ("malformed token",)


# --- the endpoint: cache lifetime, outages ------------------------------------------------


def test_cache_control_is_read() -> None:
    assert parse_cache_control("public, max-age=600") == (600, None)
    assert parse_cache_control("max-age=60, stale-if-error=3600") == (60, 3600)
    assert parse_cache_control("no-store") == (0, None)
    assert parse_cache_control("max-age=abc") == (None, None)
    assert parse_cache_control("") == (None, None)


async def test_the_cached_set_lives_as_long_as_cache_control_says(idp, http, clock) -> None:
    idp.endpoint.cache_control = "public, max-age=120"
    check = verifier(idp, http, clock)
    await check.verify(idp.token(now=clock()), now=int(clock()))
    clock.now += 119
    await check.verify(idp.token(now=clock()), now=int(clock()))
    assert idp.endpoint.requests == 1
    clock.now += 2
    await check.verify(idp.token(now=clock()), now=int(clock()))
    assert idp.endpoint.requests == 2


async def test_cached_keys_outlive_an_outage_until_they_expire(idp, http, clock) -> None:
    idp.endpoint.cache_control = "max-age=60, stale-if-error=600"
    check = verifier(idp, http, clock)
    await check.verify(idp.token(now=clock()), now=int(clock()))
    idp.endpoint.status = 503
    clock.now += 300  # stale, and the endpoint fails: the cached keys still verify
    assert (await check.verify(idp.token(now=clock()), now=int(clock()))).user_id == "user-1"
    assert idp.endpoint.requests == 2
    # A burst while it is down asks it at most once per refresh interval.
    for _ in range(20):
        await check.verify(idp.token(now=clock()), now=int(clock()))
    assert idp.endpoint.requests == 2
    clock.now += 400  # past max-age + stale-if-error: nothing left to verify with
    with pytest.raises(JwksUnavailable) as caught:
        await check.verify(idp.token(now=clock()), now=int(clock()))
    assert caught.value.retry_after_seconds >= 1
    # Back up: the next lookup after the interval fetches and works again.
    idp.endpoint.status = 200
    clock.now += 31
    assert (await check.verify(idp.token(now=clock()), now=int(clock()))).user_id == "user-1"


async def test_no_keys_at_all_is_unavailable_not_refused(http, clock) -> None:
    with IdentityProvider() as idp:
        idp.endpoint.status = 500
        check = verifier(idp, http, clock)
        with pytest.raises(JwksUnavailable):
            await check.verify(idp.token(now=clock()), now=int(clock()))
        idp.endpoint.status, idp.endpoint.raw_body = 200, b"<html>not json</html>"
        clock.now += 31
        with pytest.raises(JwksUnavailable):
            await check.verify(idp.token(now=clock()), now=int(clock()))
        token = idp.token(now=clock())
    # The endpoint is gone altogether (connection refused).
    clock.now += 31
    with pytest.raises(JwksUnavailable):
        await check.verify(token, now=int(clock()))


async def test_an_https_only_jwks_url_in_production(idp, http, clock) -> None:
    check = verifier(idp, http, clock, ALBERT_MODE="production")
    assert await refused(check, idp.token(now=clock()), clock) == (
        "algorithm not allowed for this tenant"
    )
    assert idp.endpoint.requests == 0


async def test_nothing_of_a_token_reaches_the_log(idp, http, clock, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    check = verifier(idp, http, clock)
    tokens = [
        idp.token("secret-subject-1", now=clock()),
        idp.token("secret-subject-2", aud="nope", now=clock()),
        idp.token("secret-subject-3", key=new_key("RS256"), kid="secret-kid", now=clock()),
        idp.token("secret-subject-4", now=clock() - 7200),
    ]
    for token in tokens:
        try:
            await check.verify(token, now=int(clock()))
        except TokenError:
            pass
    text = caplog.text
    assert "refused" in text  # the refusals are logged, by reason
    for token in tokens:
        for part in token.split("."):
            assert part not in text
    assert "secret-subject" not in text and "secret-kid" not in text


def _hmac_token(claims: dict, secret: bytes, kid: str) -> str:
    # PyJWT refuses PEM-shaped HMAC secrets when signing, as it does when verifying;
    # the forgery is built by hand.
    import base64
    import hashlib
    import hmac

    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    head = b64(json.dumps({"alg": "HS256", "kid": kid, "typ": "JWT"}).encode())
    body = b64(json.dumps(claims).encode())
    signature = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(signature)}"


# --- HS256 is per tenant ---------------------------------------------------------------------

BETA_ISSUER = "https://id.beta.example/"


def two_tenants(idp: IdentityProvider, beta: dict[str, str]) -> Settings:
    tenants = {
        "acme": {
            "jwt_issuer": ISSUER,
            "jwt_audience": AUDIENCE,
            "jwks_url": idp.jwks_url,
            "jwt_hs256_secret": "AUTH_JWT_SECRET_ACME",
        },
        "beta": {"jwt_issuer": BETA_ISSUER, "jwt_audience": "beta-albert", **beta},
    }
    return Settings.from_env({"ALBERT_MODE": "local", "TENANTS": json.dumps(tenants)})


SECRETS = {
    "AUTH_JWT_SECRET": SHARED_SECRET,
    "AUTH_JWT_SECRET_ACME": "acme-only-secret-for-hs256-host-tokens-0123",
    "AUTH_JWT_SECRET_BETA": "beta-only-secret-for-hs256-host-tokens-0123",
}


@pytest.mark.filterwarnings("ignore::jwt.InsecureKeyLengthWarning")
async def test_one_tenants_hs256_secret_signs_in_nobody_of_another(idp, http, clock) -> None:
    # Beta trusts only its JWKS: no HS256 token is ever a beta user, whatever signs it.
    jwks_only = HostJwtVerifier(
        two_tenants(idp, {"jwks_url": idp.jwks_url}), http, clock=clock, secrets=SECRETS.get
    )
    for secret in SECRETS.values():
        forged = idp.hs256_token(
            "beta-admin", secret=secret, iss=BETA_ISSUER, aud="beta-albert", iat=int(clock())
        )
        assert await refused(jwks_only, forged, clock) == "algorithm not allowed for this tenant"
    acme = idp.hs256_token("u1", secret=SECRETS["AUTH_JWT_SECRET_ACME"], iat=int(clock()))
    assert (await jwks_only.verify(acme, now=int(clock()))).tenant == "acme"
    # Beta with a secret of its own: acme's secret cannot sign for beta, beta's can.
    own = HostJwtVerifier(
        two_tenants(idp, {"jwt_hs256_secret": "AUTH_JWT_SECRET_BETA"}),
        http,
        clock=clock,
        secrets=SECRETS.get,
    )
    cross = idp.hs256_token(
        "beta-admin", secret=SECRETS["AUTH_JWT_SECRET_ACME"], iss=BETA_ISSUER, aud="beta-albert"
    )
    assert await refused(own, cross, clock) == "bad signature"
    good = idp.hs256_token(
        "b1", secret=SECRETS["AUTH_JWT_SECRET_BETA"], iss=BETA_ISSUER, aud="beta-albert"
    )
    assert (await own.verify(good, now=int(clock()))).tenant == "beta"


def test_no_two_tenants_may_name_the_same_hs256_secret() -> None:
    tenants = {
        "acme": {
            "jwt_issuer": "https://a/",
            "jwt_audience": "x",
            "jwt_hs256_secret": "AUTH_JWT_SECRET",
        },
        "beta": {
            "jwt_issuer": "https://b/",
            "jwt_audience": "x",
            "jwt_hs256_secret": "AUTH_JWT_SECRET",
        },
    }
    with pytest.raises(ValueError, match="share jwt_hs256_secret"):
        Settings.from_env({"ALBERT_MODE": "local", "TENANTS": json.dumps(tenants)}).tenants()
    for name in ("MCP_SECRET_X", "AUTH_SIGNING_KEY", "auth_jwt_secret", "AUTH_JWT_SECRET_"):
        bad = {"acme": {"jwt_issuer": "https://a/", "jwt_audience": "x", "jwt_hs256_secret": name}}
        with pytest.raises(ValueError):
            Settings.from_env({"ALBERT_MODE": "local", "TENANTS": json.dumps(bad)}).tenants()


async def test_a_host_jwt_carries_its_issue_time_for_revocation(idp, http, clock) -> None:
    check = verifier(idp, http, clock)
    with_iat = await check.verify(idp.token(now=clock()), now=int(clock()))
    assert with_iat.host_token and with_iat.host_issued_at_ms == int(clock()) * 1000
    without = await check.verify(idp.token(now=clock(), iat=None), now=int(clock()))
    assert without.host_token and without.host_issued_at_ms is None
