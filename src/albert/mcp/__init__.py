"""The MCP client layer: per-client server configs, background connections, remote tools.

Nothing here imports the `mcp` SDK at module level; only `albert.mcp.connection`
does, and it is imported on the path that actually connects to a server.
"""
