"""Every call the adapters make on a binding, in the shape the platform takes it.

Each case runs on the local runtime, on the JS fakes and, through test_on_workerd.py,
inside a real Durable Object on workerd with its ctx and env as the Workers SDK hands them
over. A stand-in that takes a call workerd refuses, or refuses one workerd takes, fails
here: each refusal is matched on workerd's own message.

Binding calls are made on the objects themselves (`ctx.acceptWebSocket`, `ws.close`…)
where the shape is the point, and through the adapters (albert.cloudflare) where what
counts is that the adapter's call is the one the platform takes.
"""

from __future__ import annotations

import gc
import time
import weakref
from typing import Any

import pytest

from albert.cloudflare.env import env_mapping
from albert.cloudflare.http import post_to_object
from albert.cloudflare.sockets import WorkersSocketHub, accept_websocket_pair
from albert.cloudflare.sql import WorkersSql
from albert.cloudflare.storage_alarm import WorkersAlarm
from tests.cloudflare.platform import Platform

TURNS = 20


class _Fault(Exception):
    """Raised by a transaction's work on purpose."""


def _server_end() -> Any:
    # Imported here: `js` is the platform's module (workerd's, the local runtime's
    # stand-in, or the fakes'), installed by the time a case runs.
    from js import WebSocketPair

    _client, server = WebSocketPair.new().object_values()
    return server


def _namespace(platform: Platform) -> Any:
    if platform.namespace is None:
        pytest.skip(f"{platform.name} has no Durable Object namespace")
    return platform.namespace


async def test_transaction_sync_keeps_no_callback_alive(platform: Platform) -> None:
    # Through the Workers SDK's wrapper of ctx.storage, every callback stayed alive for
    # good (a proxy nothing destroys): a turn's whole state, on every turn.
    sql = WorkersSql(platform.ctx.storage.sql, platform.ctx.storage)
    sql.execute("CREATE TABLE t (n INTEGER)")
    callbacks = []
    for n in range(TURNS):

        def work(n: int = n) -> int:
            sql.execute("INSERT INTO t (n) VALUES (?)", n)
            if n % 2:
                raise _Fault("rolled back")
            return n

        if n % 2:
            with pytest.raises(_Fault):
                sql.transaction(work)
        else:
            assert sql.transaction(work) == n
        callbacks.append(weakref.ref(work))
        del work
    gc.collect()
    alive = [n for n, ref in enumerate(callbacks) if ref() is not None]
    # Pyodide keeps the last exception that left Python for JS (sys.last_exc, as an
    # interactive interpreter does), and with its traceback the last failed callback.
    assert alive in ([], [TURNS - 1])
    assert sql.execute("SELECT COUNT(*) AS c FROM t") == [{"c": TURNS // 2}]


async def test_accept_websocket_takes_tags_and_get_websockets_finds_by_them(
    platform: Platform,
) -> None:
    _response, tagged = accept_websocket_pair(platform.ctx, tags=("client:a", "chat"))
    _response, plain = accept_websocket_pair(platform.ctx)
    assert list(platform.ctx.getWebSockets("client:a")) == [tagged.raw]
    assert list(platform.ctx.getWebSockets("chat")) == [tagged.raw]
    assert len(platform.ctx.getWebSockets("client:b")) == 0
    every = list(platform.ctx.getWebSockets())
    assert len(every) == 2 and tagged.raw in every and plain.raw in every


@pytest.mark.parametrize("tags", [["client:a"], ("client:a",)], ids=["list", "tuple"])
async def test_tags_as_a_python_sequence_are_refused(platform: Platform, tags: Any) -> None:
    with pytest.raises(Exception, match="parameter 2 is not of type 'Array'"):
        platform.ctx.acceptWebSocket(_server_end(), tags)
    assert len(platform.ctx.getWebSockets()) == 0


async def test_a_text_attachment_survives_hibernation(platform: Platform) -> None:
    accept_websocket_pair(platform.ctx, attachment='{"opened_at_ms": 1}')
    accept_websocket_pair(platform.ctx)
    sockets = WorkersSocketHub(platform.wake()).sockets()
    assert sorted(str(s.attachment()) for s in sockets) == ["None", '{"opened_at_ms": 1}']


@pytest.mark.parametrize("value", [{"a": 1}, [1], b"x"], ids=["dict", "list", "bytes"])
async def test_an_attachment_structured_clone_cannot_copy_is_refused(
    platform: Platform, value: Any
) -> None:
    server = _server_end()
    platform.ctx.acceptWebSocket(server)
    with pytest.raises(Exception, match="could not be cloned"):
        server.serializeAttachment(value)


@pytest.mark.parametrize("code", [999, 1004, 1005, 1006, 1015, 5000])
async def test_close_codes_the_wire_cannot_carry_are_refused(platform: Platform, code: int) -> None:
    _response, socket = accept_websocket_pair(platform.ctx)
    with pytest.raises(Exception, match=f"Invalid WebSocket close code: {code}"):
        socket.raw.close(code, "bye")
    assert socket.raw.readyState == 1
    # The adapter closes with 1000 instead.
    socket.close(code, "bye")
    assert socket.raw.readyState == 2


@pytest.mark.parametrize("code", [1000, 1001, 1011, 3000, 4001, 4999])
async def test_close_codes_the_adapter_sends_are_taken(platform: Platform, code: int) -> None:
    _response, socket = accept_websocket_pair(platform.ctx)
    socket.raw.close(code, "bye")
    assert socket.raw.readyState == 2


async def test_a_close_reason_over_123_bytes_is_refused(platform: Platform) -> None:
    _response, socket = accept_websocket_pair(platform.ctx)
    with pytest.raises(Exception, match="123 bytes"):
        socket.raw.close(1000, "é" * 62)
    socket.raw.close(1000, "é" * 61)


async def test_a_socket_we_close_reads_closing_and_stays_listed_until_the_peer_answers(
    platform: Platform,
) -> None:
    _response, socket = accept_websocket_pair(platform.ctx)
    socket.raw.send("before")
    socket.raw.close(4001, "bye")
    assert socket.raw.readyState == 2
    assert list(platform.ctx.getWebSockets()) == [socket.raw]
    # The hub goes by readyState: a socket closing is no longer one to send on.
    assert WorkersSocketHub(platform.ctx).sockets() == []
    socket.raw.close(4001, "again")  # does nothing
    with pytest.raises(Exception, match=r"send\(\) after close\(\)"):
        socket.raw.send("after")


async def test_the_upgrade_response_carries_the_client_end(platform: Platform) -> None:
    response, socket = accept_websocket_pair(platform.ctx)
    assert int(response.status) == 101
    client = response.js_object.webSocket
    assert client is not None and client != socket.raw
    assert list(platform.ctx.getWebSockets()) == [socket.raw]


@pytest.mark.parametrize("when", ["1900000000000", None], ids=["text", "none"])
async def test_set_alarm_refuses_what_is_not_a_number(platform: Platform, when: Any) -> None:
    with pytest.raises(Exception, match="not of type 'date'"):
        await platform.ctx.storage.setAlarm(when)
    assert await WorkersAlarm(platform.ctx.storage).get_alarm() is None


async def test_set_alarm_takes_milliseconds_and_they_read_back_whole(platform: Platform) -> None:
    at = time.time() * 1000 + 3_600_000.5
    await platform.ctx.storage.setAlarm(at)
    alarms = WorkersAlarm(platform.ctx.storage)
    assert await alarms.get_alarm() == int(at)
    await alarms.delete_alarm()
    assert await alarms.get_alarm() is None


async def test_object_ids_come_from_names_and_from_their_strings(platform: Platform) -> None:
    namespace = _namespace(platform)
    first = namespace.idFromName("client-a")
    text = str(first.toString())
    assert len(text) == 64 and set(text) <= set("0123456789abcdef")
    assert first.equals(namespace.idFromName("client-a"))
    assert not first.equals(namespace.idFromName("client-b"))
    assert namespace.idFromString(text).equals(first)
    with pytest.raises(Exception, match="must be 64 hex digits"):
        namespace.idFromString("not-an-id")


async def test_a_stub_fetch_takes_the_url_and_the_options_as_keywords(
    platform: Platform,
) -> None:
    namespace = _namespace(platform)
    stub = namespace.get(namespace.idFromName("echo"))
    answer = await post_to_object(stub, "https://echo.internal/", "hi", {"x-probe": "1"})
    assert answer == (200, "POST hi")
    with pytest.raises(TypeError):
        await stub.fetch("https://echo.internal/", {"method": "POST", "body": "hi"})


async def test_env_vars_read_as_text_and_unknown_names_as_absent(platform: Platform) -> None:
    if platform.env is None:
        pytest.skip(f"{platform.name} has no env")
    mode = getattr(platform.env, "ALBERT_MODE", None)
    assert isinstance(mode, str) and mode
    assert getattr(platform.env, "ALBERT_NO_SUCH_BINDING", None) is None
    assert env_mapping(platform.env)["ALBERT_MODE"] == mode
