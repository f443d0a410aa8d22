"""Malformed input against the real runtime: cursors, undecodable bodies and paths, titles.

None of it may be a 500: a cursor the server did not make is a 400 "invalid cursor";
a body that is not UTF-8 is a 400; a path no file or route has is a 404; a title keeps
no control, bidi or other invisible character.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.chat_client import ChatClient
from tests.support.runtime_process import RuntimeProcess


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("input-hardening")
    with RuntimeProcess(state, {"ALBERT_MODE": "local"}) as process:
        yield process


@pytest.fixture(scope="module")
def auth(runtime: RuntimeProcess) -> dict[str, str]:
    token = httpx.post(f"{runtime.url}/api/session").json()["token"]
    return {"authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def thread(runtime: RuntimeProcess, auth: dict[str, str]) -> str:
    return str(httpx.post(f"{runtime.url}/api/threads", headers=auth, json={}).json()["id"])


def _cursor(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# --- item 4: every malformed cursor is a 400 "invalid cursor" --------------------------

CURSOR_JSON = [
    b"[]",
    b'[null,"x"]',
    b'[{},"x"]',
    b'[1e30,"x"]',
    b"[Infinity,1]",
    b"[NaN]",
    b"[-Infinity]",
    b"[1,2,3]",
    b'[1,"x",3]',
    b"[1.5]",
    b'["1"]',
    b"[true]",
    b"[-1]",
    b'[-1,"t_x"]',
    b"[" + b"9" * 40 + b"]",
    b"[" + b"9" * 40 + b',"t_x"]',
    b'[1,"bad id with spaces"]',
    b'[1,"' + b"x" * 100 + b'"]',
    b'[1,"\\u0000"]',
    b'{"seq": 1}',
    b'{"updated_at": 1, "thread_id": "t_x"}',
    b'"x"',
    b"1",
    b"null",
    b"[" * 120,
    b"[[1]]",
    b'[[1],"t_x"]',
    b"\xff\xfe",
    b"not json",
]
CURSOR_TEXT = [
    "%C3%A9",
    "%FF",
    "%00",
    "abc=",
    "a b",
    "a+b",
    "a/b",
    "====",
    "A" * 300,
    "%E2%80%AE",
    "x",
]


def _cursor_status(runtime: RuntimeProcess, auth: dict, path: str, cursor: str) -> httpx.Response:
    return httpx.get(f"{runtime.url}{path}?cursor={cursor}", headers=auth)


@pytest.mark.parametrize("raw", CURSOR_JSON, ids=range(len(CURSOR_JSON)))
def test_malformed_cursor_contents_are_400(runtime, auth, thread, raw: bytes) -> None:
    for path in ("/api/threads", f"/api/threads/{thread}"):
        response = _cursor_status(runtime, auth, path, _cursor(raw))
        assert response.status_code == 400, (path, raw, response.text)
        assert response.json() == {"error": "invalid_cursor", "detail": "invalid cursor"}


@pytest.mark.parametrize("text", CURSOR_TEXT)
def test_malformed_cursor_texts_are_400(runtime, auth, thread, text: str) -> None:
    for path in ("/api/threads", f"/api/threads/{thread}"):
        response = _cursor_status(runtime, auth, path, text)
        assert response.status_code == 400, (path, text, response.text)
        assert response.json()["detail"] == "invalid cursor"


def test_real_cursors_still_page(runtime, auth) -> None:
    made = [
        httpx.post(f"{runtime.url}/api/threads", headers=auth, json={"title": f"p{i}"}).json()["id"]
        for i in range(3)
    ]
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        params = {"limit": "1", **({"cursor": cursor} if cursor else {})}
        page = httpx.get(f"{runtime.url}/api/threads", headers=auth, params=params).json()
        seen += [t["id"] for t in page["threads"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [t for t in seen if t in made] == list(reversed(made))


# --- item 6: undecodable bodies and paths on the local runtime ---------------------------

BAD_BODIES = [b'{"title": "\xff"}', b"\xff\xfe\xfd", b'{"title": "\xc3"}', b"\xed\xa0\x80"]


@pytest.mark.parametrize("body", BAD_BODIES)
def test_an_invalid_utf8_body_is_400_on_every_route_that_reads_one(
    runtime, auth, thread, body: bytes
) -> None:
    headers = {**auth, "content-type": "application/json"}
    for method, path in [
        ("POST", "/api/threads"),
        ("PATCH", f"/api/threads/{thread}"),
        ("POST", "/api/mcp/servers"),
        ("POST", "/api/events"),
        ("POST", "/api/session"),
    ]:
        response = httpx.request(method, f"{runtime.url}{path}", headers=headers, content=body)
        assert response.status_code == 400, (method, path, response.text)
        assert "UTF-8" in response.json()["detail"]


def _raw_request(runtime: RuntimeProcess, target: bytes) -> int:
    """Send a request line with exactly these bytes; the status code of the answer."""
    with socket.create_connection(("127.0.0.1", runtime.port), timeout=5) as sock:
        sock.sendall(
            b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        data = b""
        for _ in range(100):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1])


BAD_PATHS = [
    b"/%00",
    b"/%00.html",
    b"/js/%00app.js",
    b"/%FF",
    b"/%C3%28",
    b"/%ED%A0%80",
    b"/%0A",
    b"/%7F",
    b"/%5C..%5Cpyproject.toml",
    b"/..%2F..%2Fpyproject.toml",
    b"/%2e%2e/pyproject.toml",
    b"/\xff",
    b"/\xc3\xa9",
    b"/api/threads%00",
    b"/api/%FF",
    b"/a?%FF=%00",
    b"/?\xff\xfe",
    b"/healthz%00",
    b"/" + b"%41" * 3000,
]


@pytest.mark.parametrize("target", BAD_PATHS, ids=range(len(BAD_PATHS)))
def test_undecodable_or_hostile_paths_are_never_a_500(runtime, target: bytes) -> None:
    status = _raw_request(runtime, target)
    # 404 from the worker (401 first under /api/, where no token came); 400 where the HTTP
    # server refuses the request line itself; the index page for a bad query on "/".
    expected = {401} if target.startswith(b"/api/") else {400, 404}
    if target.startswith((b"/?", b"/a?")):
        expected = {200} if target.startswith(b"/?") else {404}
    assert status in expected | {400}, (target, status)


def test_a_percent_encoded_query_mark_stays_in_the_path(runtime, auth) -> None:
    # Decoded, /api/me%3Ftoken=… would have become a query; it must not reach /api/me.
    token = auth["authorization"].split(" ", 1)[1]
    response = httpx.get(f"{runtime.url}/api/me%3Ftoken={token}", headers=auth)
    assert response.status_code == 404


# --- item 12: titles keep no control, bidi or invisible character ------------------------

HOSTILE = {
    "nul": "in\x00voice",
    "c0": "in\x07\x1bvoice",
    "c1": "in\x85\x9bvoice",
    "del": "in\x7fvoice",
    "rlo": "\u202einvoice.exe",
    "lro": "\u202dinvoice",
    "rle-pdf": "\u202bin\u202cvoice",
    "isolates": "\u2066\u2067\u2068in\u2069voice",
    "marks": "\u200ein\u200f\u061cvoice",
    "zero-width": "in\u200bvo\u2060ice\ufeff",
    "soft-hyphen": "in\u00advoice",
    "tags": "in\U000e0041\U000e007fvoice",
    "annotation": "\ufff9in\ufffavoice\ufffb",
    "invisible-ops": "in\u2061\u2062\u2063\u2064voice",
    "deprecated-format": "in\u206a\u206fvoice",
    "mongolian-vs": "in\u180evoice",
    "line-sep": "in\u2028voice",
    "para-sep": "in\u2029voice",
    "private-use": "in\ue000voice",
    "noncharacter": "in\ufdd0\uffffvoice",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
async def test_hostile_titles_are_cleaned_on_create_and_rename(runtime, name: str) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        created = await client.http.post("/api/threads", json={"title": HOSTILE[name]})
        assert created.status_code == 201, created.text
        title = created.json()["title"]
        _assert_clean(title)
        renamed = await client.http.patch(
            f"/api/threads/{created.json()['id']}", json={"title": HOSTILE[name]}
        )
        _assert_clean(renamed.json()["title"])
        listing = (await client.http.get("/api/threads")).json()
        for thread in listing["threads"]:
            _assert_clean(thread["title"])


def _assert_clean(title: str) -> None:
    import unicodedata

    assert title.replace(" ", "") == "invoice" or title.endswith("invoice.exe"), repr(title)
    for char in title:
        assert unicodedata.category(char) not in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp"), repr(title)


async def test_a_title_of_nothing_but_invisible_characters_is_refused(runtime) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        thread = await client.new_thread()
        for title in ("\u202e", "\x00\x01", "\u200b\u2060", "\U000e0041", " \u2028 "):
            response = await client.http.patch(f"/api/threads/{thread}", json={"title": title})
            assert response.status_code == 422, (title, response.text)


async def test_a_first_message_with_bidi_overrides_makes_a_clean_title(runtime) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        await client.turn(thread, "\u202eanalyse\x00 PEPE\u2066")
        title = (await client.thread(thread))["thread"]["title"]
        assert title == "Analyse PEPE", repr(title)


def test_scripts_that_need_joiners_keep_them() -> None:
    from albert.storage.threads import clean_title

    persian = "می\u200cخواهم"  # ZWNJ is part of the word
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert clean_title(persian) == persian
    assert clean_title(family) == family
    assert json.dumps(clean_title("e\u0301" * 2)) == json.dumps("e\u0301" * 2)
