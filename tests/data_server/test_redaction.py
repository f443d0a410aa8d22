"""The data server's open answers quote no URL and no credential (data_server/redaction.py).

A data server whose TYPESENSE_URL carries `user:password@` and whose index cannot be
reached: its open `/healthz` and the tool error an MCP client reads (the model, the user's
tool chip) say the index is unavailable and nothing of where it is or how it is entered.
Served for real (uvicorn on loopback), read with httpx and the `mcp` SDK's client.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from albert.search import TypesenseConnectionError, TypesenseError
from data_server.app import create_app
from data_server.redaction import index_unavailable, public_body, public_text, settings_secrets
from data_server.settings import DataServerSettings
from data_server.store import VaultStore
from tests.data_server.mcp_server.servers import UvicornThread
from tests.support.ports import reserve
from tests.typesense_fixture import TypesenseServer, unique_name

USER = "albert-indexer"
PASSWORD = "s3cret-p@ss/word"
API_KEY = "ts-admin-key-9f8e7d"
RPC_KEY = "alchemy-key-0123456789"


def leaks(text: str, port: int) -> list[str]:
    """What of the URL or the credentials `text` shows."""
    quoted = PASSWORD.replace("@", "%40").replace("/", "%2F")
    shown = [USER, PASSWORD, quoted, API_KEY, RPC_KEY, f"127.0.0.1:{port}", "http://", "https://"]
    return [piece for piece in shown if piece in text]


@pytest.fixture
def served(tmp_path: Path, closed_port: int) -> Iterator[str]:
    quoted = PASSWORD.replace("@", "%40").replace("/", "%2F")
    settings = DataServerSettings(
        TYPESENSE_URL=f"http://{USER}:{quoted}@127.0.0.1:{closed_port}",
        TYPESENSE_API_KEY=API_KEY,
        RPC_URLS={"ethereum": f"https://eth.example.invalid/v2/{RPC_KEY}"},
        SEARCH_TIMEOUT_SECONDS=2,
    )
    sock = reserve()
    with VaultStore(tmp_path / "store.sqlite3") as store:
        server = UvicornThread(create_app(settings, store=store), sock)
        server.start()
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        finally:
            server.stop()


async def test_healthz_and_tool_errors_name_no_url_and_no_credential(
    served: str, closed_port: int
) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=served, timeout=10) as http:
        health = await http.get("/healthz")
    assert health.status_code == 503
    body = health.json()
    assert body["index"]["reachable"] is False and body["index"]["problems"]
    assert leaks(health.text, closed_port) == [], health.text
    assert "[URL]" in health.text  # the problem is still reported, the URL is not

    async with Client(f"{served}/mcp") as client:
        result = await client.call_tool("search_vaults", {"chain": "base"})
        top = await client.call_tool("top_yields", {})
    for answer in (result, top):
        assert answer.is_error
        text = answer.content[0].text  # type: ignore[union-attr]
        assert text == "Error: the vault index is unavailable right now (it cannot be reached)"
        assert leaks(text, closed_port) == []


async def test_an_index_refusing_us_is_reported_by_status_only(
    typesense_server: TypesenseServer, tmp_path: Path
) -> None:
    # Reachable, behind credentials in the URL, with a key it refuses (HTTP 401).
    host = typesense_server.url.split("://", 1)[1]
    settings = DataServerSettings(
        TYPESENSE_URL=f"http://{USER}:x{API_KEY}@{host}",
        TYPESENSE_API_KEY=API_KEY,
        TYPESENSE_VAULTS_COLLECTION=unique_name("vaults_redacted"),
    )
    sock = reserve()
    with VaultStore(tmp_path / "store.sqlite3") as store:
        server = UvicornThread(create_app(settings, store=store), sock)
        server.start()
        try:
            async with Client(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp") as client:
                result = await client.call_tool("search_vaults", {"chain": "base"})
        finally:
            server.stop()
    text = result.content[0].text  # type: ignore[union-attr]
    assert text == "Error: the vault index is unavailable right now (it answered HTTP 401)"
    assert USER not in text and API_KEY not in text and host not in text


def test_text_loses_every_url_and_configured_secret() -> None:
    settings = DataServerSettings(
        TYPESENSE_URL=f"http://{USER}:{PASSWORD.replace('/', '%2F')}@search.internal:8108",
        TYPESENSE_API_KEY=API_KEY,
        DATABASE_URL="postgresql://writer:pg-pass-77@db.internal/albert",
        RPC_URLS={"base": f"https://base.example/v2/{RPC_KEY}"},
    )
    secrets = settings_secrets(settings)
    said = (
        f"Typesense: cannot reach http://{USER}:{PASSWORD}@search.internal:8108: ConnectError; "
        f"key {API_KEY}; store postgresql://writer:pg-pass-77@db.internal/albert down; "
        f"node {RPC_KEY} and wss://feed.example/x?token=abc failed; user {USER}"
    )
    shown = public_text(said, secrets)
    for piece in (USER, PASSWORD, API_KEY, "pg-pass-77", "writer", RPC_KEY, "://", "abc"):
        assert piece not in shown, (piece, shown)
    assert shown.startswith("Typesense: cannot reach [URL]")
    nested = public_body({"problems": [said], said: {"n": 1}}, secrets)
    assert "://" not in str(nested) and API_KEY not in str(nested)


def test_index_errors_read_the_same_whatever_the_request_said() -> None:
    assert index_unavailable(TypesenseConnectionError("cannot reach http://u:p@h: X")) == (
        "the vault index is unavailable right now (it cannot be reached)"
    )
    assert index_unavailable(TypesenseConnectionError("timed out: ReadTimeout")) == (
        "the vault index is unavailable right now (it did not answer in time)"
    )
    assert index_unavailable(TypesenseError(503, "proxy at http://u:p@h said no")) == (
        "the vault index is unavailable right now (it answered HTTP 503)"
    )


def test_a_secret_inside_a_longer_word_leaves_the_word_alone() -> None:
    from data_server.redaction import SECRET_SHOWN, public_text

    # The store's user is `postgres`; the backend named in /healthz is `postgresql`.
    shown = public_text("write store postgresql down; user postgres refused", ["postgres"])
    assert shown == f"write store postgresql down; user {SECRET_SHOWN} refused"
