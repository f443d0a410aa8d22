"""MCP servers end to end on both runtimes (the local one and workerd): the worker's real
`mcp` client, real MCP servers, the scripted model.

The configured URL points at a TCP gate in front of a real MCP test server:
closing the gate (listener and every connection) is, to the worker, the server
dying, and opening it again on the same port is the server coming back, in
milliseconds rather than the seconds a Python process needs to start. So the
retry schedule can be short (0.2, 0.4, 0.8, 0.8, 0.8 s); retries ride the
object's alarm in the runtime.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from albert.ai.openai_wire import inline_refs
from albert.ai.prompt import VAULT_UNAVAILABLE
from tests.support.asgi_server import AsgiServer
from tests.support.chat_client import ChatClient, answer_text
from tests.support.mcp_chat import FAST_MCP, chat, system_prompt, tool_names, up, wait_status
from tests.support.mcp_test_server import HUGE_CHARS, SEARCH_VAULTS_SCHEMA, InProcessMcpServer
from tests.support.ports import free_port
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall
from tests.support.tcp_proxy import TcpProxy


@pytest.fixture(scope="module")
def vaults_port() -> int:
    """The port of the gate the runtime's default server URL names."""
    return free_port()


@pytest.fixture(scope="module")
def vaults_server() -> Iterator[InProcessMcpServer]:
    with InProcessMcpServer("vaults") as server:
        yield server


@pytest.fixture
async def vaults(vaults_port: int, vaults_server: InProcessMcpServer) -> AsyncIterator[TcpProxy]:
    """The vault server as the worker sees it; the test opens and closes the gate."""
    gate = TcpProxy(vaults_server.port, port=vaults_port)
    yield gate
    await gate.stop()


@pytest.fixture(scope="module")
def mcp_runtime(
    tmp_path_factory: pytest.TempPathFactory,
    runtime_kind: str,
    model: ScriptedModelServer,
    platform: AsgiServer,
    vaults_port: int,
) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("mcp-runtime")
    variables = {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": model.base_url,
        "PLATFORM_API_URL": platform.url,
        "TOOL_TIMEOUT_SECONDS": "5",
        "MCP_DEFAULT_SERVER_URL": f"http://127.0.0.1:{vaults_port}/mcp",
        "MCP_DEFAULT_SERVER_NAME": "vaults",
        **FAST_MCP,
    }
    with RuntimeProcess(state, variables, runtime=runtime_kind) as process:
        yield process


@pytest.fixture(scope="module")
def production_runtime(
    tmp_path_factory: pytest.TempPathFactory,
    runtime_kind: str,
    model: ScriptedModelServer,
    platform: AsgiServer,
) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("mcp-production")
    variables = {
        "ALBERT_MODE": "production",
        "MODEL_BASE_URL": model.base_url,
        "PLATFORM_API_URL": platform.url,
        "MCP_DEFAULT_SERVER_URL": "",  # wrangler.toml names one; this deployment has none
        # No internet here for DNS over HTTPS: resolve "localhost" the system's way.
        "MCP_DNS_RESOLVER": "system",
        **FAST_MCP,
    }
    with RuntimeProcess(state, variables, runtime=runtime_kind) as process:
        yield process


async def test_no_server_configured_answers_with_local_tools_and_refuses_private_urls(
    production_runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    async with ChatClient(production_runtime.url, production_runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await chat(client, model, thread, Reply(text=["Local answer."]))
        assert answer_text(frames) == "Local answer."
        request = model.requests[-1]
        assert VAULT_UNAVAILABLE in system_prompt(request)
        assert "analyze_token" in tool_names(request)
        assert not tool_names(request) & {"search_vaults", "top_yields"}
        assert (await client.http.get("/api/mcp/status")).json() == {"servers": []}
        # The socket was told so as its first frame.
        assert client.status_frames[0] == {"type": "mcp_status", "servers": []}

        for url in (
            "http://127.0.0.1:9/mcp",
            "http://10.1.2.3/mcp",
            "http://172.20.0.5/mcp",
            "http://192.168.0.10/mcp",
            "http://169.254.169.254/mcp",
            "http://[::1]/mcp",
            "http://[fd00::1]/mcp",
            "http://[fe80::1]/mcp",
            "http://localhost:9/mcp",
        ):
            response = await client.http.post("/api/mcp/servers", json={"name": "x", "url": url})
            assert response.status_code == 422, (url, response.text)
            assert response.json()["error"] == "url_refused"
        bad = await client.http.post("/api/mcp/servers", json={"name": "X Y", "url": "https://a.b"})
        assert bad.status_code == 422 and bad.json()["error"] == "invalid_body"
        assert (await client.http.get("/api/mcp/servers")).json() == {"servers": []}


async def test_server_down_at_start_then_its_tools_arrive_byte_for_byte(
    mcp_runtime: RuntimeProcess, model: ScriptedModelServer, vaults: TcpProxy
) -> None:
    await vaults.stop()
    async with ChatClient(mcp_runtime.url, mcp_runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await chat(client, model, thread, Reply(text=["Without vault data."]))
        assert answer_text(frames) == "Without vault data."
        assert not vaults.listening
        request = model.requests[-1]
        assert "search_vaults" not in tool_names(request)
        assert VAULT_UNAVAILABLE in system_prompt(request)
        status = (await client.http.get("/api/mcp/status")).json()["servers"]
        assert status[0]["state"] == "reconnecting" and status[0]["last_error"]

        await vaults.start()
        await wait_status(client, "vaults", "ready")
        # The browser was told too: status frames, the last of them saying ready.
        # (Frames sent before this socket opened are not replayed, so only the end is sure.)
        states = [f["servers"][0]["state"] for f in frames if f["type"] == "mcp_status"]
        for _ in range(50):
            frame = await client.frames_until("mcp_status", timeout=5)
            states.append(frame[-1]["servers"][0]["state"])
            if states[-1] == "ready":
                break
        assert states[-1] == "ready" and "ready" not in states[:-1], states

        await chat(client, model, thread)
        request = model.requests[-1]
        [sent] = [t for t in request["tools"] if t["function"]["name"] == "search_vaults"]
        # The server's schema in its own order, its `$defs` references inlined for the model.
        assert "$defs" in SEARCH_VAULTS_SCHEMA and "$ref" not in json.dumps(sent)
        assert json.dumps(sent["function"]["parameters"]) == json.dumps(
            inline_refs(SEARCH_VAULTS_SCHEMA)
        )
        assert VAULT_UNAVAILABLE not in system_prompt(request)
        assert "[vaults] This server has live DeFi vault and yield data" in system_prompt(request)
        assert "analyze_token" in tool_names(request)  # local tools stay


async def test_reconnect_now_and_the_tool_names_of_a_ready_server(
    mcp_runtime: RuntimeProcess, model: ScriptedModelServer, vaults: TcpProxy
) -> None:
    await up(vaults)
    async with ChatClient(mcp_runtime.url, mcp_runtime.ws_url) as client:
        await client.connect()
        ready = await wait_status(client, "vaults", "ready")
        # The default server's tools are offered under their own names.
        thread = await client.new_thread()
        await chat(client, model, thread)
        ready = await wait_status(client, "vaults", "ready")
        assert {"search_vaults", "top_yields"} <= set(ready["tool_names"])
        answer = await client.http.post("/api/mcp/servers/vaults/reconnect")
        assert answer.status_code == 202, answer.text
        assert answer.json()["name"] == "vaults"
        await wait_status(client, "vaults", "ready")
        missing = await client.http.post("/api/mcp/servers/nothing/reconnect")
        assert (missing.status_code, missing.json()["error"]) == (404, "not_found")


async def test_a_huge_remote_result_is_cut_at_fifty_thousand_characters(
    mcp_runtime: RuntimeProcess, model: ScriptedModelServer, vaults: TcpProxy
) -> None:
    await up(vaults)
    async with ChatClient(mcp_runtime.url, mcp_runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        await wait_status(client, "vaults", "ready")
        frames = await chat(
            client,
            model,
            thread,
            Reply(tool_calls=[ScriptedToolCall(name="huge_report")]),
            Reply(text=["Summarised."]),
        )
        [call] = [f for f in frames if f["type"] == "tool_call"]
        [result] = [f for f in frames if f["type"] == "tool_result"]
        assert result["ok"] and result["truncated"]
        # Both frames name the server the tool came from (the chip shows it).
        assert call["server"] == result["server"] == "vaults"
        tool_message = model.requests[-1]["messages"][-1]
        assert tool_message["role"] == "tool"
        # The server's text, fenced; the cut marker (Albert's) after the fence.
        fence = '<untrusted source="tool huge_report of MCP server vaults">'
        assert tool_message["content"].startswith(
            fence + "x" * 50_000 + "</untrusted>\n\n[… result cut"
        )
        assert "x" * 50_001 not in tool_message["content"]
        assert f"{HUGE_CHARS:,}" in tool_message["content"]


async def test_killed_between_messages_and_mid_call_then_back_within_the_backoff(
    mcp_runtime: RuntimeProcess, model: ScriptedModelServer, vaults: TcpProxy
) -> None:
    await up(vaults)
    async with ChatClient(mcp_runtime.url, mcp_runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        await wait_status(client, "vaults", "ready")
        await chat(client, model, thread)
        assert "search_vaults" in tool_names(model.requests[-1])

        await vaults.stop()
        frames = await chat(
            client,
            model,
            thread,
            Reply(tool_calls=[ScriptedToolCall(name="search_vaults", arguments={"query": "usdc"})]),
            Reply(text=["Could not check vaults."]),
        )
        [result] = [f for f in frames if f["type"] == "tool_result"]
        assert not result["ok"] and "search_vaults" in result["content"]
        assert frames[-1]["type"] == "done" and frames[-1]["finish_reason"] == "stop"
        assert "search_vaults" not in tool_names(model.requests[-2])

        await vaults.start()
        await wait_status(client, "vaults", "ready")
        await chat(client, model, thread)
        assert "search_vaults" in tool_names(model.requests[-1])

        # Mid-call: the server dies while a slow tool runs.
        model.script(
            Reply(tool_calls=[ScriptedToolCall(name="slow_tool", arguments={"seconds": 3})]),
            Reply(text=["The tool failed."]),
        )
        turn_id = await client.ask(thread, "Run the slow tool")
        await client.frames_until("tool_call", turn_id=turn_id)
        await asyncio.sleep(0.3)
        await vaults.stop()
        frames = await client.frames_until("done", turn_id=turn_id)
        [result] = [f for f in frames if f["type"] == "tool_result"]
        assert not result["ok"] and "dropped during the call" in result["content"]
        assert answer_text(frames) == "The tool failed."

        await vaults.start()
        await wait_status(client, "vaults", "ready")
        await chat(client, model, thread)
        assert "slow_tool" in tool_names(model.requests[-1])


async def test_retries_exhausted_then_the_returning_server_is_picked_up_without_a_message(
    mcp_runtime: RuntimeProcess, model: ScriptedModelServer, vaults: TcpProxy
) -> None:
    await up(vaults)
    async with ChatClient(mcp_runtime.url, mcp_runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        await wait_status(client, "vaults", "ready")
        await chat(client, model, thread)
        await vaults.stop()
        await chat(client, model, thread)  # the health check notices the drop
        failed = await wait_status(client, "vaults", "failed")
        # The half-open try is planned on the alarm (the socket is open), and shown.
        assert failed["attempts"] == 5 and failed["next_retry_in_seconds"] is not None
        assert failed["next_retry_in_seconds"] <= 0.5

        await vaults.start()
        # No message from here on: the alarm makes the try once the 0.5 s cool-down is
        # over, so the server is back within that one delay (plus a connect; the bound
        # is generous for a loaded machine).
        server = await wait_status(client, "vaults", "ready", within=5)
        assert server["tools"] > 0 and server["last_error"] is None
        frames = await client.frames_until("mcp_status", timeout=5)
        for _ in range(20):
            if frames[-1]["servers"][0]["state"] == "ready":
                break
            frames = await client.frames_until("mcp_status", timeout=5)
        assert frames[-1]["servers"][0]["state"] == "ready"
        await chat(client, model, thread)
        assert "search_vaults" in tool_names(model.requests[-1])


async def test_two_clients_with_different_servers_never_see_each_others(
    mcp_runtime: RuntimeProcess, model: ScriptedModelServer, vaults: TcpProxy
) -> None:
    await up(vaults)
    with InProcessMcpServer("generic") as utils, InProcessMcpServer("files") as files:
        async with (
            ChatClient(mcp_runtime.url, mcp_runtime.ws_url) as alice,
            ChatClient(mcp_runtime.url, mcp_runtime.ws_url) as bob,
        ):
            made = await alice.http.post(
                "/api/mcp/servers",
                json={"name": "utils", "url": utils.url, "headers": {"X-Key": "hunter2"}},
            )
            assert made.status_code == 201, made.text
            assert "hunter2" not in made.text and made.json()["header_names"] == ["X-Key"]
            made = await bob.http.post("/api/mcp/servers", json={"name": "files", "url": files.url})
            assert made.status_code == 201, made.text

            listed = (await alice.http.get("/api/mcp/servers")).json()["servers"]
            assert [s["name"] for s in listed] == ["vaults", "utils"]
            assert "hunter2" not in json.dumps(listed)
            assert [
                s["name"] for s in (await bob.http.get("/api/mcp/servers")).json()["servers"]
            ] == [
                "vaults",
                "files",
            ]

            # Isolation, not timing, is the point here: wait until both are connected.
            for client, own in ((alice, "utils"), (bob, "files")):
                await wait_status(client, own, "ready")
                await wait_status(client, "vaults", "ready")
            await alice.connect()
            await chat(alice, model, await alice.new_thread())
            alice_tools = tool_names(model.requests[-1])
            await bob.connect()
            await chat(bob, model, await bob.new_thread())
            bob_tools = tool_names(model.requests[-1])
            assert "echo" in alice_tools and "read_file" not in alice_tools
            assert "read_file" in bob_tools and "echo" not in bob_tools
            assert "search_vaults" in alice_tools and "search_vaults" in bob_tools

            gone = await alice.http.delete("/api/mcp/servers/utils")
            assert gone.status_code == 204
            default = await alice.http.delete("/api/mcp/servers/vaults")
            assert default.status_code == 409
            await chat(alice, model, await alice.new_thread())
            assert "echo" not in tool_names(model.requests[-1])


async def test_parallel_local_and_remote_calls_in_one_step_with_output_schemas_checked(
    mcp_runtime: RuntimeProcess, model: ScriptedModelServer, vaults: TcpProxy
) -> None:
    # The model path end to end: streamed SSE, four calls in one step (a local tool, the
    # default server's, and a client server's tool whose output schema the SDK checks,
    # once kept and once broken), then a streamed answer.
    await up(vaults)
    with InProcessMcpServer("structured") as pages:
        async with ChatClient(mcp_runtime.url, mcp_runtime.ws_url) as client:
            made = await client.http.post(
                "/api/mcp/servers", json={"name": "pages", "url": pages.url}
            )
            assert made.status_code == 201, made.text
            await client.connect()
            await wait_status(client, "vaults", "ready")
            await wait_status(client, "pages", "ready")
            thread = await client.new_thread()
            frames = await chat(
                client,
                model,
                thread,
                Reply(
                    tool_calls=[
                        ScriptedToolCall(name="analyze_token", arguments={"symbol": "PEPE"}),
                        ScriptedToolCall(name="search_vaults", arguments={"query": "usdc"}),
                        ScriptedToolCall(name="vault_page", arguments={"break": "none"}),
                        ScriptedToolCall(name="vault_page", arguments={"break": "type"}),
                    ]
                ),
                Reply(text=["Four ", "results ", "read."]),
            )
    # Results come as the calls finish; each is matched to its call by id.
    calls = {f["call_id"]: f for f in frames if f["type"] == "tool_call"}
    results = {
        (f["name"], calls[f["call_id"]]["arguments"].get("break")): f
        for f in frames
        if f["type"] == "tool_result"
    }
    assert len(results) == 4
    local, remote = results["analyze_token", None], results["search_vaults", None]
    kept, broken = results["vault_page", "none"], results["vault_page", "type"]
    assert local["ok"] and local.get("server") is None and "PEPE" in local["content"]
    assert remote["ok"] and remote["server"] == "vaults" and '"apy": 4.2' in remote["content"]
    assert kept["ok"] and kept["server"] == "pages" and '"found": 2' in kept["content"]
    # The page that breaks its declared schema is refused by the client, and says why.
    assert not broken["ok"] and "vault_page" in broken["content"], broken
    assert "'4.2' is not of type 'number'" in broken["content"]
    assert answer_text(frames) == "Four results read."
    assert frames[-1]["finish_reason"] == "stop" and frames[-1]["steps"] == 2
    tool_messages = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 4
