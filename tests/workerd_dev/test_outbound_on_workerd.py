"""Outbound HTTP inside workerd: why the worker's fetch transports, not `pyodide-http`.

`pyodide-http` patches `requests` and `urllib` onto a synchronous XMLHttpRequest. Run
inside workerd with loopback network: workerd has no XMLHttpRequest, so the package
declines to patch anything (`urllib` is served by the runtime itself, blocking until the
whole body is in); the core's FetchTransport (albert.cloudflare.fetch) streams a response
as it comes, which a model's SSE stream needs. The figures are printed for
docs/workerd.md.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.asgi_server import AsgiServer
from workerd_dev import PROJECT_DIR
from workerd_dev.harness import Extras, run_in_workerd
from workerd_dev.project import stage
from workerd_dev.pyodide_bundle import ensure_bundle
from workerd_dev.python_modules import vendor_locked
from workerd_dev.tools import Tools

GAP_SECONDS = 2.0

BODY = """        import time
        import urllib.request

        import httpx
        import pyodide_http

        from albert.cloudflare.fetch import FetchTransport

        patches = pyodide_http.should_patch()
        pyodide_http.patch_all()
        started = time.perf_counter()
        try:
            body = urllib.request.urlopen(URL, timeout=30).read().decode()
            urllib_outcome = [(time.perf_counter() - started) * 1000, body]
        except Exception as exc:
            urllib_outcome = f"{type(exc).__name__}: {exc}"[:300]
        started = time.perf_counter()
        arrivals = []
        async with httpx.AsyncClient(transport=FetchTransport(), timeout=30) as client:
            async with client.stream("GET", URL) as response:
                async for chunk in response.aiter_raw():
                    arrivals.append([(time.perf_counter() - started) * 1000, chunk.decode()])
        report(patches=patches, urllib=urllib_outcome, arrivals=arrivals)
"""


async def _two_parts(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A body in two parts GAP_SECONDS apart, as a slow event stream sends them."""
    if scope["type"] != "http":
        return
    headers = [(b"content-type", b"text/event-stream")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"data: first\n\n", "more_body": True})
    await asyncio.sleep(GAP_SECONDS)
    await send({"type": "http.response.body", "body": b"data: last\n\n"})


@pytest.fixture(scope="module")
def streamed() -> Iterator[str]:
    with AsgiServer(_two_parts) as server:
        yield f"{server.url}/stream"


def test_pyodide_http_has_nothing_to_patch_and_fetch_streams(tools: Tools, streamed: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        staged = stage(folder / "stage", {}, PROJECT_DIR)
        vendor_locked(["pyodide-http"], folder / "probes")
        run = run_in_workerd(
            tools,
            ensure_bundle(tools),
            staged.directory / "python_modules",
            BODY,
            top_level=f"URL = {streamed!r}",
            extras=Extras(python_modules=(folder / "probes",), network=True),
        )
    [result] = run.results
    print(result)  # the figures docs/workerd.md quotes
    # No XMLHttpRequest in workerd: pyodide-http declines to patch anything.
    assert result["patches"] is False
    # fetch hands the first part over as it comes, not with the whole body.
    arrivals: list[list[Any]] = result["arrivals"]  # type: ignore[assignment]
    assert "first" in arrivals[0][1] and "last" in arrivals[-1][1]
    assert arrivals[-1][0] - arrivals[0][0] >= GAP_SECONDS * 1000 / 2
