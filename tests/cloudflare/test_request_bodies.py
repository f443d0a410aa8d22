"""The adapter's reading of a request body, with JS fakes: bounded, piece by piece.

What each runtime really does with such requests is in
tests/conformance/test_request_bodies.py; these cases pin what the conformance suite
cannot see from outside: which pieces were copied into Python, that the stream was
cancelled, that a head carrying both framings is refused even though neither runtime
hands the worker one.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from albert.cloudflare.http import to_core_request
from albert.request_bodies import MAX_REQUEST_BODY_BYTES, BoundedBody, check_head
from albert.web import BadRequest
from tests.cloudflare import fakes


class CountedBytes(fakes.JsUint8Array):
    """A Uint8Array that counts its copies into Python."""

    copies = 0

    def to_bytes(self) -> bytes:
        CountedBytes.copies += 1
        return super().to_bytes()


class FakeReader(fakes.JsProxy):
    """`stream.getReader()`: `read()` resolves to {done, value}; `cancel()` ends it."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = list(pieces)
        self.reads = 0
        self.cancelled = False

    async def read(self) -> fakes.JsObject:
        self.reads += 1
        if self.cancelled or not self.pieces:
            return fakes.JsObject({"done": True})
        return fakes.JsObject({"done": False, "value": CountedBytes(self.pieces.pop(0))})

    async def cancel(self, reason: Any = None) -> None:
        self.cancelled = True


class FakeStream(fakes.JsProxy):
    def __init__(self, pieces: list[bytes]) -> None:
        self.reader = FakeReader(pieces)
        self.locked = False

    def getReader(self) -> FakeReader:
        self.locked = True
        return self.reader


class FakeRequest(fakes.JsProxy):
    """A platform request: `url`, `method`, `headers.items()`, and `body` (null or a stream)."""

    def __init__(
        self, method: str, headers: dict[str, str], pieces: list[bytes] | None = None
    ) -> None:
        self.url = "https://albert.example/api/threads"
        self.method = method
        self._headers = headers
        self.body = fakes.jsnull if pieces is None else FakeStream(pieces)

    @property
    def headers(self) -> Any:
        return self._headers


@pytest.fixture(autouse=True)
def js_fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, module in fakes.modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    CountedBytes.copies = 0


async def test_a_body_within_the_cap_is_read_whole_from_its_pieces() -> None:
    request = FakeRequest("POST", {"transfer-encoding": "chunked"}, [b'{"ti', b'tle": "a"}'])
    core = await to_core_request(request, max_body=16)
    assert core.body == b'{"title": "a"}'


async def test_the_piece_that_passes_the_cap_is_never_copied_and_the_rest_never_read() -> None:
    pieces = [b"a" * 10, b"b" * 10, b"c" * 10, b"d" * 10]
    request = FakeRequest("POST", {}, pieces)
    with pytest.raises(BadRequest) as refused:
        await to_core_request(request, max_body=15)
    assert (refused.value.status, refused.value.error) == (413, "too_large")
    assert refused.value.detail == "body larger than 15 bytes"
    reader = request.body.reader
    assert reader.cancelled and reader.reads == 2
    assert CountedBytes.copies == 1  # the first piece only
    assert reader.pieces == [b"c" * 10, b"d" * 10]


async def test_a_declared_length_over_the_cap_is_refused_before_reading() -> None:
    request = FakeRequest("POST", {"content-length": "268435456"}, [b"x" * 1024])
    for read_body in (True, False):
        with pytest.raises(BadRequest) as refused:
            await to_core_request(request, read_body=read_body)
        assert refused.value.status == 413
        assert refused.value.detail == f"body larger than {MAX_REQUEST_BODY_BYTES} bytes"
    assert not request.body.locked


async def test_a_head_with_both_framings_is_refused() -> None:
    headers = {"content-length": "5", "transfer-encoding": "chunked"}
    request = FakeRequest("POST", headers, [b"0\r\n\r\n"])
    with pytest.raises(BadRequest) as refused:
        await to_core_request(request, read_body=False)
    assert (refused.value.status, refused.value.error) == (400, "bad_request")
    assert not request.body.locked


async def test_get_and_head_bodies_are_not_read_and_a_null_body_is_empty() -> None:
    for method in ("GET", "HEAD"):
        request = FakeRequest(method, {}, [b"x" * 100])
        assert (await to_core_request(request, max_body=10)).body == b""
        assert not request.body.locked
    assert (await to_core_request(FakeRequest("POST", {}))).body == b""


async def test_the_cap_may_depend_on_the_path() -> None:
    request = FakeRequest("POST", {"content-length": "20"}, [b"x" * 20])
    with pytest.raises(BadRequest):
        await to_core_request(request, max_body=lambda path: 10)
    request = FakeRequest("POST", {"content-length": "20"}, [b"x" * 20])
    caps: list[str] = []
    core = await to_core_request(request, max_body=lambda path: caps.append(path) or 20)
    assert core.body == b"x" * 20 and caps == ["/api/threads"]


def test_the_shared_checks() -> None:
    check_head([("Content-Length", "5, 5")], 5)
    with pytest.raises(BadRequest):
        check_head([("Content-Length", "5, 6")], 5)
    with pytest.raises(BadRequest):
        check_head([("Transfer-Encoding", "chunked"), ("Content-Length", "0")], 5)
    body = BoundedBody(4)
    body.add(b"ab")
    assert body.fits(2) and not body.fits(3)
    with pytest.raises(BadRequest):
        body.add(b"cde")
    assert body.value() == b"ab"
