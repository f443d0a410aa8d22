"""`albert serve` and `albert dev` stop cleanly on SIGTERM/SIGINT within 2 s, and nothing
they started outlives them, even when they are SIGKILLed (checked through /proc)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from miniflare.server import serve_until_stopped
from tests.support.chat_client import ChatClient, answer_text
from tests.support.process_guard import descendants, read_process, wait_gone
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer
from tests.support.time_wait import in_time_wait

STOP_SECONDS = 2.0
PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def dev_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Shared, so the second start finds the demo data seeded already.
    return tmp_path_factory.mktemp("dev-stack")


def stop_with(process: RuntimeProcess, signum: int) -> tuple[int, float]:
    """Send `signum` to the process alone; its exit code and how long it took."""
    assert process.child is not None
    popen = process.child.popen
    started = time.monotonic()
    os.kill(popen.pid, signum)
    code = popen.wait(timeout=15)
    return code, time.monotonic() - started


async def closed_code(client: ChatClient, timeout: float = 5.0) -> int | None:
    """Read until the server closes the socket; the close code it sent."""
    assert client.ws is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        for _ in range(1000):
            await asyncio.wait_for(client.ws.recv(), max(0.01, deadline - loop.time()))
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd is not None else None
    raise AssertionError("the socket stayed open")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_serve_ends_a_running_turn_as_cancelled_and_exits_0_within_2s(
    tmp_path: Path, model: ScriptedModelServer, signum: int
) -> None:
    model.script(
        Reply(text=["Half ", "an ", "answer ", "and more"], pause_after_chunks=3, pause_seconds=60)
    )
    variables = {"ALBERT_MODE": "local", "MODEL_BASE_URL": model.base_url}
    with RuntimeProcess(tmp_path, variables) as runtime:
        async with ChatClient(runtime.url, runtime.ws_url) as client:
            await client.connect()
            thread = await client.new_thread()
            turn = await client.ask(thread, "Tell me something long")
            seen = await client.frames_until("text_delta", turn_id=turn)
            code, took = await asyncio.to_thread(stop_with, runtime, signum)
            # The turn ended as cancelled, and the browser was told before the close.
            rest: list[dict] = []
            assert client.ws is not None
            with pytest.raises(ConnectionClosed) as closed:
                for _ in range(100):
                    rest.append(json.loads(await client.ws.recv()))
            done = [f for f in rest if f["type"] == "done"]
            assert done and done[0]["finish_reason"] == "cancelled", rest
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        assert code == 0, runtime.log_tail()
        assert took < STOP_SECONDS, f"stopped after {took:.2f} s"
        # What was streamed is stored, marked cancelled: a restart shows it.
        runtime.start()
        async with ChatClient(runtime.url, runtime.ws_url, token=client.token) as again:
            messages = (await again.thread(thread))["messages"]
        last = messages[-1]
        assert (last["role"], last["status"], last["finish_reason"]) == (
            "assistant",
            "cancelled",
            "cancelled",
        )
        streamed = answer_text(seen + rest)
        assert streamed.startswith("Half ") and last["content"] == streamed


SLOW_DNS_DIR = PROJECT / "tests" / "support" / "slow_dns"
RUNNING_TURNS = 100
# Generous for a loaded machine, and far below what a stop waiting on its threads takes.
MANY_TURNS_STOP_SECONDS = 4.0


async def _running_turn(runtime: RuntimeProcess, number: int) -> tuple[ChatClient, str, list]:
    """A client whose turn is streaming: its thread, and the frames seen so far."""
    client = ChatClient(runtime.url, runtime.ws_url)
    await client.__aenter__()
    await client.connect()
    thread = await client.new_thread()
    turn = await client.ask(thread, f"Tell me something long, number {number}")
    return client, thread, await client.frames_until("text_delta", turn_id=turn)


async def _frames_until_closed(client: ChatClient) -> list[dict]:
    assert client.ws is not None
    frames: list[dict] = []
    with pytest.raises(ConnectionClosed):
        for _ in range(10_000):
            frames.append(json.loads(await asyncio.wait_for(client.ws.recv(), 10)))
    return frames


async def test_serve_with_100_running_turns_stops_within_the_bound_each_stored_cancelled(
    tmp_path: Path,
) -> None:
    # Slow streams: every turn is mid-answer when the stop comes.
    words = [f"word{i} " for i in range(600)]
    slow = Reply(text=words, chunk_delay_seconds=0.1)
    # The MCP server's name takes a minute to fail to resolve (tests/support/slow_dns):
    # every object's connection attempt holds a thread of the runtime's loop meanwhile,
    # as lookups waiting out an unreachable name server's timeout do. The stop must not
    # wait for them.
    env = {
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(SLOW_DNS_DIR), os.environ.get("PYTHONPATH")) if p
        ),
        "ALBERT_TEST_SLOW_DNS_SUFFIX": ".slow-dns.test",
        "ALBERT_TEST_SLOW_DNS_SECONDS": "60",
    }
    with ScriptedModelServer(default=slow) as model:
        variables = {
            "ALBERT_MODE": "local",
            "MODEL_BASE_URL": model.base_url,
            "MCP_DEFAULT_SERVER_URL": "http://vaults.slow-dns.test/mcp",
            "MCP_CONNECT_WAIT_SECONDS": "0",
        }
        with RuntimeProcess(tmp_path, variables, env=env) as runtime:
            opened = await asyncio.gather(
                *(_running_turn(runtime, n) for n in range(RUNNING_TURNS))
            )
            try:
                code, took = await asyncio.to_thread(stop_with, runtime, signal.SIGTERM)
                after = await asyncio.gather(*(_frames_until_closed(c) for c, _, _ in opened))
            finally:
                await asyncio.gather(*(c.__aexit__() for c, _, _ in opened))
            assert code == 0, runtime.log_tail()
            assert took <= MANY_TURNS_STOP_SECONDS, f"stopped after {took:.2f} s"
            for rest in after:
                done = [f for f in rest if f["type"] == "done"]
                assert done and done[0]["finish_reason"] == "cancelled", rest[-3:]

            runtime.env = {}  # the next start resolves (and fails) at once
            runtime.start()
            stored = await asyncio.gather(
                *(_last_message(runtime, client.token, thread) for client, thread, _ in opened)
            )
        for (_, _, seen), rest, last in zip(opened, after, stored, strict=True):
            assert (last["role"], last["status"], last["finish_reason"]) == (
                "assistant",
                "cancelled",
                "cancelled",
            )
            streamed = answer_text(seen + rest)
            assert streamed.startswith("word0 ") and last["content"] == streamed


async def _last_message(runtime: RuntimeProcess, token: str | None, thread: str) -> dict:
    async with ChatClient(runtime.url, runtime.ws_url, token=token) as client:
        return dict((await client.thread(thread))["messages"][-1])


async def test_dev_stops_within_2s_on_sigterm_and_leaves_no_process(dev_state: Path) -> None:
    with RuntimeProcess(dev_state, command="dev").start(timeout=120) as stack:
        assert stack.pid is not None
        children = descendants(stack.pid)
        names = [info.cmdline for pid in children if (info := read_process(pid)) is not None]
        assert any("typesense-server" in name for name in names), names
        assert sum("anvil" in name for name in names) == 2, names  # ethereum and base
        async with ChatClient(stack.url, stack.ws_url) as client:
            await client.connect()
            frames = await client.turn(await client.new_thread(), "What is PEPE?")
            assert frames[-1]["finish_reason"] == "stop"
            code, took = await asyncio.to_thread(stop_with, stack, signal.SIGTERM)
            assert await closed_code(client) == 1001
        assert code == 0, stack.log_tail()
        assert took < STOP_SECONDS, f"stopped after {took:.2f} s\n{stack.log_tail()}"
        # The children were stopped before it exited, not left to the kernel.
        assert [pid for pid in children if read_process(pid) is not None] == []


VAULT_TOOLS = {"search_vaults", "top_yields", "analyze_yield", "search_protocols"}
# What a Ctrl-C must not print (the probe saw each of them).
SHUTDOWN_NOISE = ("Traceback", "Exception in", "lost:", "httpx2", "INFO mcp.")


def ctrl_c_under_uv_run(process: RuntimeProcess) -> tuple[int, float]:
    """Ctrl-C as `scripts/dev` delivers it: SIGINT from the terminal, and uv's copy just after."""
    assert process.child is not None
    popen = process.child.popen
    started = time.monotonic()
    os.kill(popen.pid, signal.SIGINT)
    time.sleep(0.02)
    os.kill(popen.pid, signal.SIGINT)
    code = popen.wait(timeout=15)
    return code, time.monotonic() - started


def closed_by_the_server(port: int) -> None:
    """One HTTP exchange the server ends (Connection: close): its side keeps TIME_WAIT."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(b"GET /platform/nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        while conn.recv(65536):
            pass


async def vault_turn(stack: RuntimeProcess) -> None:
    async with ChatClient(stack.url, stack.ws_url) as client:
        await client.connect()
        frames = await client.turn(await client.new_thread(), "What are the best USDC yields?")
        assert frames[-1]["finish_reason"] == "stop", frames[-3:]
        called = {f["name"] for f in frames if f["type"] == "tool_call"}
        assert called & VAULT_TOOLS, called  # the vault server answered over MCP


async def test_dev_ctrl_c_is_quiet_and_a_quick_restart_keeps_the_data_port(
    dev_state: Path,
) -> None:
    stack = RuntimeProcess(dev_state, command="dev")  # --data-port given explicitly
    with stack.start(timeout=120):
        await vault_turn(stack)
        closed_by_the_server(stack.data_port)
        code, took = await asyncio.to_thread(ctrl_c_under_uv_run, stack)
        assert code == 0, stack.log_tail()
        assert took < STOP_SECONDS, f"stopped after {took:.2f} s"
        log = stack.log_path.read_text(errors="replace")
        for noise in SHUTDOWN_NOISE:
            assert noise not in log, (noise, stack.log_tail(80))

        # Restarted at once: the port still has a connection in TIME_WAIT, and is kept.
        assert in_time_wait(stack.data_port)
        stack.start(timeout=120)
        log = stack.log_path.read_text(errors="replace")
        assert f"data server (MCP + platform services) on {stack.data_url}" in log
        await vault_turn(stack)


async def test_dev_on_a_taken_data_port_fails_before_starting_anything(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        stack = RuntimeProcess(tmp_path, command="dev", data_port=busy.getsockname()[1])
        with pytest.raises(RuntimeError, match=r"exited with code 1[\s\S]*address already in use"):
            stack.start(timeout=60)
        log = stack.log_path.read_text(errors="replace")
        assert f"--data-port {stack.data_port}: address already in use" in log
        assert "Starting Typesense" not in log and "Traceback" not in log
        assert not stack.running


def test_sigkill_of_the_stack_takes_typesense_and_every_child_with_it(dev_state: Path) -> None:
    with RuntimeProcess(dev_state, command="dev").start(timeout=120) as stack:
        assert stack.pid is not None
        children = descendants(stack.pid)
        names = [info.cmdline for pid in children if (info := read_process(pid)) is not None]
        assert any("typesense-server" in n for n in names) and any("anvil" in n for n in names)
        stack.kill()  # SIGKILL to the stack alone: no cleanup of its own can run
        assert wait_gone(children, 5) == set()


def test_serve_on_a_busy_port_fails_at_once(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        process = RuntimeProcess(tmp_path, {"ALBERT_MODE": "local"}, port=busy.getsockname()[1])
        refused = r"exited with code [1-9][\s\S]*address already in use"
        with pytest.raises(RuntimeError, match=refused):
            process.start(timeout=60)
        assert not process.running


def test_a_picked_port_taken_before_the_child_listens_is_picked_again(tmp_path: Path) -> None:
    process = RuntimeProcess(tmp_path, {"ALBERT_MODE": "local"})
    lost = process.port
    with socket.socket() as thief:  # another server binds the picked port first
        thief.bind(("127.0.0.1", lost))
        thief.listen(1)
        with process.start(timeout=60):
            assert process.port != lost
            assert httpx.get(f"{process.url}/healthz", timeout=10).status_code == 200
            process.restart()  # a restart keeps the port the clients know
            assert httpx.get(f"{process.url}/healthz", timeout=10).status_code == 200
            kept = process.port
    assert kept != lost
    assert f"--port {lost}: address already in use" in process.log_path.read_text()


async def test_a_server_that_stops_on_its_own_is_not_a_clean_stop() -> None:
    class Ends:
        """A server whose start failed: serve() returns at once."""

        should_exit = force_exit = False

        async def serve(self) -> None:
            return None

        def close_held_sockets(self) -> None:
            return None

    class Runtime:
        drained = False

        async def drain(self, budget: float) -> None:
            self.drained = True

    runtime = Runtime()
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stopped:
        await serve_until_stopped([Ends()], runtime)  # type: ignore[list-item, arg-type]
    assert stopped.value.code == 1 and runtime.drained
    # Its own signal handlers are gone again.
    assert signal.getsignal(signal.SIGTERM) is before
