"""Outbound HTTP adapters for CPython (the local runtime and tests); httpx stays the client API."""
