"""The tool names the platform owns, whatever state any server is in.

A server a client adds must never be offered under one of these names: not while the
default server is connecting, reconnecting or failed (every cold start), and not for a
tool the turn adds after the servers' (`read_tool_result`). A list of the tools a turn
happens to have would leave a platform name free whenever its server is down, so the
names are fixed here. The default server's are the data server's ten tools
(`data_server/mcp_server/server.py`); a test keeps both lists equal to the tools built.
"""

from __future__ import annotations

# The built-in tools (albert.tools.local_tools), whether or not a deployment builds each.
LOCAL_TOOL_NAMES: tuple[str, ...] = (
    "analyze_token",
    "analyze_address",
    "search_feed",
    "search_tokens",
    # Added to every turn after the servers' tools (albert.chat.driver).
    "read_tool_result",
)

# The default server's tools (the data server's).
DEFAULT_SERVER_TOOL_NAMES: tuple[str, ...] = (
    "search_vaults",
    "analyze_yield",
    "vault_history",
    "search_protocols",
    "search_vault_assets",
    "top_yields",
    "analyze_risk",
    "wallet_portfolio",
    "wallet_positions",
    "wallet_top_positions",
)

PLATFORM_TOOL_NAMES: frozenset[str] = frozenset((*LOCAL_TOOL_NAMES, *DEFAULT_SERVER_TOOL_NAMES))
