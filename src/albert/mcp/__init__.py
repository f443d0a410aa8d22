"""The MCP client layer: per-client server configs, background connections, remote tools.

Two modules import the `mcp` SDK at module level, and each is imported only on the path
that needs it: `albert.mcp.connection` when a server connects (through
`albert.mcp.lazy_connection`), `albert.mcp.oauth_flow` when a server asks for
authorization. An object with no server configured loads neither.
"""
