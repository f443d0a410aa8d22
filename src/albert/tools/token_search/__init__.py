"""Structured token search: a typed query compiled to an exact Typesense search."""

from albert.tools.token_search.compiler import CompiledSearch, compile_query
from albert.tools.token_search.query import Chain, SortField, TokenSearchQuery
from albert.tools.token_search.tool import TOOL_NAME, token_deep_link, token_search_tool

__all__ = [
    "TOOL_NAME",
    "Chain",
    "CompiledSearch",
    "SortField",
    "TokenSearchQuery",
    "compile_query",
    "token_deep_link",
    "token_search_tool",
]
