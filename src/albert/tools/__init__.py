"""The tool layer: one interface for local functions and remote MCP tools."""
