"""A worker with no MCP server never imports the `mcp` SDK; and what importing it costs.

Both run in fresh interpreters, since this test process has long imported `mcp`.
Run with `-s` to see the import figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from albert.ai.prompt import VAULT_UNAVAILABLE
from tests.support.scripted_model import Reply, ScriptedModelServer
from tests.test_snapshot_safety import LOADED_ON_FIRST_USE

PROJECT_DIR = Path(__file__).resolve().parents[3]

CHAT_TURN = """
import asyncio, json, sys, time
import httpx
from albert.composition import build_chat_service
from albert.cloudflare.sql import WorkersSql
from albert.auth.tokens import Identity
from albert.web import HttpRequest
from miniflare.storage import DurableObjectStorage

CALLER = Identity(client_id="c_" + "t" * 24, tenant="default", expires_at=4_102_444_800)

class Socket:
    def __init__(self): self.frames = []
    def send(self, text): self.frames.append(json.loads(text))
    def close(self, code, reason): pass

class Hub:
    def __init__(self): self.socket = Socket()
    def sockets(self): return [self.socket]

async def main():
    hub = Hub()
    storage = DurableObjectStorage(__import__("pathlib").Path(sys.argv[2]), lambda _: None)
    async with httpx.AsyncClient() as http:
        service = build_chat_service(
            sql=WorkersSql(storage.sql, storage),
            hub=hub,
            env={"ALBERT_MODE": "local", "MODEL_BASE_URL": sys.argv[1]},
            http=http,
        )
        service.start_background()
        created = await service.handle_http(
            HttpRequest(method="POST", path="/api/threads", body=b"{}"), CALLER
        )
        thread_id = json.loads(created.body)["id"]
        frame = {"type": "chat", "thread_id": thread_id, "message_id": "m1", "text": "Best APY?"}
        await service.handle_frame(hub.socket, json.dumps(frame))
        listed = await service.handle_http(HttpRequest(method="GET", path="/api/threads"), CALLER)
        loaded = await service.handle_http(
            HttpRequest(method="GET", path=f"/api/threads/{thread_id}"), CALLER
        )
        lazy_loaded = sorted(set(json.loads(sys.argv[3])) & set(sys.modules))
        # The MCP API loads its own modules (request models, SSRF checks), not the SDK.
        status = await service.handle_http(
            HttpRequest(method="GET", path="/api/mcp/status"), CALLER
        )
    print(json.dumps({
        "kinds": [f["type"] for f in hub.socket.frames],
        "status": json.loads(status.body),
        "mcp_loaded": "mcp" in sys.modules,
        "listed": [t["id"] for t in json.loads(listed.body)["threads"]],
        "loaded": [m["role"] for m in json.loads(loaded.body)["messages"]],
        "lazy_loaded": lazy_loaded,
    }))

asyncio.run(main())
"""

IMPORT_COST = """
import json, sys, time
t = time.perf_counter(); import albert.composition; composition = time.perf_counter() - t
loaded = "mcp" in sys.modules
t = time.perf_counter(); import albert.mcp.connection; mcp_path = time.perf_counter() - t
print(json.dumps({"composition": composition, "mcp_path": mcp_path, "mcp_loaded": loaded}))
"""


def _python(code: str, *args: str, env: dict[str, str] | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{PROJECT_DIR / 'src'}:{PROJECT_DIR}", **(env or {})}
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_full_chat_turn_without_mcp_servers_never_imports_mcp(tmp_path: Path) -> None:
    with ScriptedModelServer(default=Reply(text=["No vault data here."])) as model:
        out = _python(
            CHAT_TURN,
            model.base_url,
            str(tmp_path / "object.sqlite"),
            json.dumps(list(LOADED_ON_FIRST_USE)),
        )
        [request] = model.requests
    assert out["kinds"][0] == "ack" and out["kinds"][-1] == "done", out
    assert out["status"] == {"servers": []}
    assert out["mcp_loaded"] is False
    # Nor, until the MCP API was asked, anything else the worker's import leaves for the
    # requests that need it.
    assert out["lazy_loaded"] == []
    assert len(out["listed"]) == 1 and out["loaded"][:2] == ["user", "assistant"], out
    system = request["messages"][0]["content"]
    assert VAULT_UNAVAILABLE in system
    sent = {t["function"]["name"] for t in request.get("tools", [])}
    assert sent and not sent & {"search_vaults", "top_yields", "analyze_yield"}


def test_import_cost_of_the_mcp_path() -> None:
    out = _python(IMPORT_COST)
    assert out["mcp_loaded"] is False
    print(
        f"\nimport albert.composition: {out['composition'] * 1000:.0f} ms; "
        f"then the MCP path (albert.mcp.connection + mcp SDK): {out['mcp_path'] * 1000:.0f} ms"
    )


CONCURRENT_IMPORT = """
import asyncio, json, sys, threading
from albert.mcp.lazy_connection import connection_module

async def main():
    ticks = 0
    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)
    beat = asyncio.ensure_future(ticker())
    modules = await asyncio.gather(*(connection_module() for _ in range(20)))
    beat.cancel()
    return modules, ticks

others = []
def other_loop():
    others.append(asyncio.run(connection_module()))
threads = [threading.Thread(target=other_loop) for _ in range(3)]
for t in threads:
    t.start()
modules, ticks = asyncio.run(main())
for t in threads:
    t.join()
everything = [*modules, *others]
print(json.dumps({
    "complete": all(hasattr(m, "McpConnection") for m in everything),
    "one_module": len({id(m) for m in everything}) == 1,
    "count": len(everything),
    "ticks": ticks,
}))
"""


def test_concurrent_first_imports_share_one_slow_import_and_never_block_the_loop(
    tmp_path: Path,
) -> None:
    """Twenty objects on one loop and three other loops ask while `mcp` imports slowly."""
    log = tmp_path / "imports.log"
    slow = PROJECT_DIR / "tests" / "support" / "slow_mcp_import"
    out = _python(
        CONCURRENT_IMPORT,
        env={
            "PYTHONPATH": f"{slow}:{PROJECT_DIR / 'src'}:{PROJECT_DIR}",
            "ALBERT_TEST_SLOW_IMPORT_SECONDS": "1.5",
            "ALBERT_TEST_IMPORT_LOG": str(log),
        },
    )
    assert out["complete"] and out["one_module"] and out["count"] == 23, out
    assert len(log.read_text().splitlines()) == 1  # imported once
    # The loop kept running through the 1.5 s import (about 150 ticks; far fewer if the
    # import had run on it). A loose bound: the machine may be loaded.
    assert out["ticks"] >= 30, out
