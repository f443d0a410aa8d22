"""The TypeScript SDK's MCP client (npm `@modelcontextprotocol/sdk`) against our data server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from miniflare.process import PROJECT_DIR
from tests.data_server.mcp_server.servers import AppServer

SCRIPT = Path(__file__).with_name("ts_client.mjs")
NODE = PROJECT_DIR / "node_modules" / ".bin" / "node"
SDK = PROJECT_DIR / "node_modules" / "@modelcontextprotocol" / "sdk"


def test_the_typescript_client_lists_and_calls_our_tools(app_server: AppServer) -> None:
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
    assert "search_vaults" in answer["tools"] and "wallet_portfolio" in answer["tools"]
    result = answer["result"]
    assert not result.get("isError") and result["structuredContent"]["vaults"]
    assert len(result["structuredContent"]["vaults"]) <= 2
    assert all(v["chain"] == "ethereum" for v in result["structuredContent"]["vaults"])
    refused = answer["refused"]
    assert refused["isError"] and "chain" in refused["content"][0]["text"]
