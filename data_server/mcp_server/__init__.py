"""The vault and yield MCP server: ten read-only tools over the vault index and chain RPC."""

from data_server.mcp_server.server import TOOL_NAMES, build_mcp_server

__all__ = ["TOOL_NAMES", "build_mcp_server"]
