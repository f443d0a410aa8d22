"""The platform's analysis services as a Starlette app (mounted at /platform by the data server)."""

from __future__ import annotations

import re

from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from albert.tools.addresses import EVM_CHAINS, AddressError, looks_like_solana, to_checksum_address
from albert.tools.platform_client import TokenSearchResult
from data_server.platform.addresses import AddressBook
from data_server.platform.data import PlatformData
from data_server.platform.feed import FeedIndex
from data_server.platform.tokens import TokenIndex

TOKEN_CHAINS: tuple[str, ...] = (*EVM_CHAINS, "solana")
MAX_FEED_LIMIT = 20
MAX_QUERY_CHARS = 200
_SYMBOL = re.compile(r"[A-Za-z0-9.$_-]{1,20}")
_BASE58 = re.compile(r"[1-9A-HJ-NP-Za-km-z]{32,44}")


class ApiError(Exception):
    """A client error answered as {"error": message} with an HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _json(model: BaseModel) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="json"))


def platform_app(data: PlatformData | None = None) -> Starlette:
    """The ASGI app of the token, address and feed services over data (fixtures by default)."""
    data = data if data is not None else PlatformData.from_fixtures()
    tokens = TokenIndex(data)
    book = AddressBook(data, tokens)
    feed = FeedIndex(data.feed)

    async def token_search(request: Request) -> JSONResponse:
        symbol = request.query_params.get("symbol", "").strip()
        if not symbol:
            raise ApiError(400, "query parameter 'symbol' is required, e.g. ?symbol=PEPE")
        if not _SYMBOL.fullmatch(symbol):
            raise ApiError(400, f"{symbol[:40]!r} is not a token symbol")
        results = tokens.by_symbol(symbol)
        if not results:
            raise ApiError(404, f"no token with symbol {symbol.upper()} on record")
        return _json(TokenSearchResult(symbol=symbol.upper(), results=results))

    async def token_by_address(request: Request) -> JSONResponse:
        chain = request.path_params["chain"].lower()
        address = request.path_params["address"]
        if chain not in TOKEN_CHAINS:
            raise ApiError(
                400, f"unknown chain {chain[:40]!r}; supported: {', '.join(TOKEN_CHAINS)}"
            )
        if chain == "solana":
            if not _BASE58.fullmatch(address):
                raise ApiError(
                    400, f"{address[:60]!r} is not a Solana address (base58, 32-44 chars)"
                )
        else:
            try:
                address = to_checksum_address(address)
            except AddressError as exc:
                raise ApiError(400, str(exc)) from exc
        analysis = tokens.by_address(chain, address)
        if analysis is None:
            raise ApiError(404, f"no token on record at {address} on {chain}")
        return _json(analysis)

    async def address_analysis(request: Request) -> JSONResponse:
        raw = request.path_params["address"]
        if looks_like_solana(raw):
            raise ApiError(
                400,
                "address analysis covers EVM addresses only "
                f"({', '.join(EVM_CHAINS)}); Solana addresses are not supported",
            )
        try:
            address = to_checksum_address(raw)
        except AddressError as exc:
            raise ApiError(400, str(exc)) from exc
        return _json(book.analyse(address))

    async def feed_search(request: Request) -> JSONResponse:
        params = request.query_params
        query = params.get("q", "").strip()
        token = params.get("token", "").strip() or None
        if not query and not token:
            raise ApiError(400, "give a query 'q' (e.g. ?q=aave) or a token symbol 'token'")
        if len(query) > MAX_QUERY_CHARS:
            raise ApiError(400, f"query is longer than {MAX_QUERY_CHARS} characters")
        if token and not _SYMBOL.fullmatch(token):
            raise ApiError(400, f"{token[:40]!r} is not a token symbol")
        raw_limit = params.get("limit", "10")
        try:
            limit = int(raw_limit)
        except ValueError as exc:
            raise ApiError(400, f"limit must be an integer, got {raw_limit[:20]!r}") from exc
        if not 1 <= limit <= MAX_FEED_LIMIT:
            raise ApiError(400, f"limit must be between 1 and {MAX_FEED_LIMIT}, got {limit}")
        return _json(feed.search(query, token=token, limit=limit))

    async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return JSONResponse({"error": exc.message}, status_code=exc.status)

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        message = "no such endpoint" if exc.status_code == 404 else str(exc.detail)
        return JSONResponse({"error": message}, status_code=exc.status_code)

    return Starlette(
        routes=[
            Route("/tokens/search", token_search, methods=["GET"]),
            Route("/tokens/{chain}/{address}", token_by_address, methods=["GET"]),
            Route("/addresses/{address}", address_analysis, methods=["GET"]),
            Route("/feed/search", feed_search, methods=["GET"]),
        ],
        exception_handlers={ApiError: on_api_error, HTTPException: on_http_error},
    )
