"""The local tools of the agent, built from settings and one shared HTTP client."""

from __future__ import annotations

import importlib
import logging

import httpx

from albert.settings import Settings
from albert.tools.base import Tool

log = logging.getLogger(__name__)

# (module, factory) of each local tool; every factory takes (settings, http).
LOCAL_TOOL_FACTORIES: list[tuple[str, str]] = [
    ("albert.tools.token_analysis", "token_analysis_tool"),
    ("albert.tools.address_analysis", "address_analysis_tool"),
    ("albert.tools.feed_search", "feed_search_tool"),
    ("albert.tools.token_search.tool", "token_search_tool"),
]


def build_local_tools(settings: Settings, http: httpx.AsyncClient) -> list[Tool]:
    """Every local tool, in a stable order."""
    tools: list[Tool] = []
    for module_name, factory_name in LOCAL_TOOL_FACTORIES:
        module = importlib.import_module(module_name)
        tools.append(getattr(module, factory_name)(settings, http))
    return tools
