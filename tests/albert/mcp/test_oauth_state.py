"""The OAuth state routes a callback to its object: made by our key, or refused."""

from __future__ import annotations

from albert.auth.tokens import SigningKey
from albert.mcp.oauth_state import CALLBACK_PATH, new_nonce, open_state, seal
from albert.router import ForwardToObject, route
from albert.settings import Settings
from albert.web import HttpRequest

OBJECT = "0123456789abcdef" * 4
KEY = SigningKey(kid="k2", secret=b"k" * 32)
OLD = SigningKey(kid="k1", secret=b"o" * 32)


def test_a_sealed_state_opens_with_its_key_or_a_rotated_one_only() -> None:
    nonce = new_nonce()
    state = seal(OBJECT, nonce, key=KEY)
    assert open_state(state, [KEY]) == (OBJECT, nonce)
    assert open_state(seal(OBJECT, nonce, key=OLD), [KEY, OLD]) == (OBJECT, nonce)
    assert open_state(state, [OLD]) is None
    object_id, _, mac = state.split(".")
    for forged in (
        f"{'f' * 64}.{nonce}.{mac}",  # another object
        f"{object_id}.{new_nonce()}.{mac}",  # another nonce
        state + "x",
        "",
        "a.b.c",
        state.upper(),
    ):
        assert open_state(forged, [KEY]) is None, forged


def callback(state: str, method: str = "GET") -> HttpRequest:
    return HttpRequest(method=method, path=CALLBACK_PATH, query={"state": state, "code": "c"})


def test_the_router_forwards_a_callback_by_its_state_without_a_session() -> None:
    settings = Settings(ALBERT_MODE="local")
    [key, *_] = settings.signing_keys()
    state = seal(OBJECT, new_nonce(), key=key)
    assert route(callback(state), settings, now=0) == ForwardToObject(object_id=OBJECT)
    tampered = state[:-1] + ("A" if state[-1] != "A" else "B")
    refused = route(callback(tampered), settings, now=0)
    assert not isinstance(refused, ForwardToObject) and refused.status == 400
    wrong_method = route(callback(state, "POST"), settings, now=0)
    assert not isinstance(wrong_method, ForwardToObject) and wrong_method.status == 405
