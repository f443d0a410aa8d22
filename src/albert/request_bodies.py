"""How much of a request body the worker reads, on either runtime.

One bound for both: the local runtime applies it before the worker runs
(miniflare/runtime.py); on Cloudflare nothing in front of the worker bounds a body, so
the adapter (albert.cloudflare.http) applies it as it reads. Either way a head that
declares more is refused before any of the body is read, a body without a length is
read piece by piece and refused as soon as it passes the bound, and a head that frames
its body twice (Content-Length and Transfer-Encoding: request smuggling's shape) is
refused outright. The refusals are the core's JSON errors (albert.web), the same on both.
"""

from __future__ import annotations

from collections.abc import Iterable

from albert.web import BadRequest

# The largest any route of the worker accepts (32,000 bytes, `/api/mcp/servers` and
# `/api/events`) with room to spare, so a body near a route's own limit still gets the
# route's answer. Locally the 1,024 connections one address may hold then hold 64 MiB
# at most; on Cloudflare a Worker's 128 MB is never spent on a body.
MAX_REQUEST_BODY_BYTES = 64 * 1024


def too_large(cap: int) -> BadRequest:
    """The refusal of a body over `cap` bytes (worded as albert.web.parse_body's)."""
    return BadRequest(f"body larger than {cap} bytes", status=413, error="too_large")


def check_head(headers: Iterable[tuple[str, str]], cap: int = MAX_REQUEST_BODY_BYTES) -> None:
    """Refuse, before any of the body is read, a head that frames its body twice (400)
    or declares a body over `cap` bytes (413); raises BadRequest."""
    pairs = [(name.lower(), value) for name, value in headers]
    lengths = [value for name, value in pairs if name == "content-length"]
    if lengths and any(name == "transfer-encoding" for name, _ in pairs):
        raise BadRequest("Content-Length with Transfer-Encoding: the body is framed twice")
    # A repeated header may arrive joined ("5, 5"); any part over the bound refuses.
    for part in (p.strip() for value in lengths for p in value.split(",")):
        if part.isdigit() and int(part) > cap:
            raise too_large(cap)


class BoundedBody:
    """A body gathered piece by piece that never holds more than `cap` bytes: the piece
    that would pass the bound is refused without being kept."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._data = bytearray()

    def fits(self, size: int) -> bool:
        """True when `size` more bytes stay within the bound."""
        return len(self._data) + size <= self.cap

    def add(self, piece: bytes) -> None:
        """Keep `piece`, or raise the 413 (BadRequest) when it would pass the bound."""
        if not self.fits(len(piece)):
            raise too_large(self.cap)
        self._data += piece

    def value(self) -> bytes:
        """The body so far."""
        return bytes(self._data)
