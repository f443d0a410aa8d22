"""The TypeScript SDK's MCP client (npm `@modelcontextprotocol/sdk`) against our data server,
run with the Node.js that package.json brings."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.data_server.mcp_server.conftest import app_server  # noqa: F401  (a fixture)
from tests.data_server.mcp_server.servers import AppServer

PROJECT_DIR = Path(__file__).resolve().parents[2]

SCRIPT = Path(__file__).with_name("ts_client.mjs")
NODE = PROJECT_DIR / "node_modules" / ".bin" / "node"
SDK = PROJECT_DIR / "node_modules" / "@modelcontextprotocol" / "sdk"


def test_the_typescript_client_lists_and_calls_our_tools(app_server: AppServer) -> None:  # noqa: F811
    if not NODE.exists() or not SDK.exists():
        pytest.skip("node_modules is not installed (scripts/bootstrap installs it)")
    out = subprocess.run(
        [str(NODE), str(SCRIPT), app_server.mcp_url],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=PROJECT_DIR,
    )
    answer = json.loads(out.stdout.strip().splitlines()[-1])
    assert answer["server"]["name"] == "albert-vaults"
    # The TypeScript SDK 1.x speaks the 2025-11-25 handshake: our server holds a session
    # for it, and ends it on the client's DELETE (terminateSession did not throw).
    assert answer["protocol"] == "2025-11-25" and answer["session"]
    tools = {tool["name"]: tool["output"] for tool in answer["tools"]}
    assert len(tools) == 10 and all(tools.values()), tools  # every tool has an outputSchema
    assert "search_vaults" in tools and "wallet_portfolio" in tools
    # The SDK checked structuredContent against search_vaults' outputSchema before this.
    result = answer["result"]
    assert not result.get("isError") and result["structuredContent"]["vaults"]
    assert len(result["structuredContent"]["vaults"]) <= 2
    assert all(v["chain"] == "ethereum" for v in result["structuredContent"]["vaults"])
    refused = answer["refused"]
    assert refused["isError"] and "chain" in refused["content"][0]["text"]
    unknown = answer["unknown"]["answer"]
    assert unknown["isError"] and "no_such_tool" in unknown["content"][0]["text"]
    # Resources and prompts are advertised by the SDK's server but none are offered.
    assert answer["resources"] == {"answer": {"resources": []}}
    assert answer["prompts"] == {"answer": {"prompts": []}}


def test_the_typescript_client_gets_clean_answers_to_early_and_resuming_gets(
    app_server: AppServer,  # noqa: F811
) -> None:
    if not NODE.exists() or not SDK.exists():
        pytest.skip("node_modules is not installed (scripts/bootstrap installs it)")
    out = subprocess.run(
        [str(NODE), str(Path(__file__).with_name("ts_resume.mjs")), app_server.mcp_url],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=PROJECT_DIR,
    )
    answer = json.loads(out.stdout.strip().splitlines()[-1])
    # Before initialize: 405, the answer clients take as "no stream here", and no session.
    assert answer["early"] == {"status": 405, "session": None}
    # Resuming: the SDK reports our 400 (it was a 500), and the session goes on.
    assert {e["code"] for e in answer["errors"]} == {400}, answer["errors"]
    assert answer["tools"] == 10
