"""The vault and yield data server: pipeline, write store, search store and MCP tools."""
