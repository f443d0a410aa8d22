"""A minimal Ethereum JSON-RPC client: `eth_call`, and Multicall3 batching on top of it."""

from __future__ import annotations

import itertools
from typing import Any

import httpx

from data_server.wallets.abi import (
    MULTICALL3_ADDRESS,
    AbiError,
    Call3,
    Call3Result,
    decode_aggregate3,
    encode_aggregate3,
)


class RpcError(RuntimeError):
    """The node could not be reached, or answered with an error or a malformed response."""


class JsonRpcClient:
    """JSON-RPC 2.0 over HTTP POST to one node URL."""

    def __init__(self, url: str, http: httpx.AsyncClient, *, timeout: float = 10.0) -> None:
        self.url = url
        self._http = http
        self._timeout = timeout
        self._ids = itertools.count(1)

    async def request(self, method: str, params: list[Any]) -> Any:
        """Send one request and return its `result`; raise RpcError on any failure."""
        request_id = next(self._ids)
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        response = await self._post(body)
        if response.status_code != 200:
            raise RpcError(f"RPC node answered HTTP {response.status_code}")
        try:
            payload = response.json()
        except ValueError as exc:
            raise RpcError("RPC node answered with invalid JSON") from exc
        if not isinstance(payload, dict) or payload.get("id") != request_id:
            raise RpcError("RPC response does not match the request id")
        if "error" in payload:
            error = payload["error"] or {}
            raise RpcError(f"RPC error {error.get('code')}: {error.get('message')}")
        if "result" not in payload:
            raise RpcError("RPC response has neither result nor error")
        return payload["result"]

    async def _post(self, body: Any) -> httpx.Response:
        try:
            return await self._http.post(self.url, json=body, timeout=self._timeout)
        except httpx.TimeoutException as exc:
            raise RpcError(
                f"RPC node timed out after {self._timeout:g} s ({type(exc).__name__})"
            ) from exc
        except httpx.HTTPError as exc:
            raise RpcError(f"RPC node unreachable: {type(exc).__name__}") from exc

    async def batch(self, calls: list[tuple[str, list[Any]]]) -> list[Any]:
        """Send several requests in one JSON-RPC batch; results in order, RpcError on any error."""
        if not calls:
            return []
        first = next(self._ids)
        for _ in calls[1:]:
            next(self._ids)
        body = [
            {"jsonrpc": "2.0", "id": first + i, "method": method, "params": params}
            for i, (method, params) in enumerate(calls)
        ]
        response = await self._post(body)
        if response.status_code != 200:
            raise RpcError(f"RPC node answered HTTP {response.status_code}")
        try:
            payload = response.json()
        except ValueError as exc:
            raise RpcError("RPC node answered with invalid JSON") from exc
        if not isinstance(payload, list):
            raise RpcError("RPC node did not answer the batch with a list")
        by_id = {item.get("id"): item for item in payload if isinstance(item, dict)}
        results = []
        for i, (method, _) in enumerate(calls):
            item = by_id.get(first + i)
            if item is None:
                raise RpcError(f"RPC batch answer lacks the {method} request")
            if "error" in item:
                error = item["error"] or {}
                raise RpcError(f"RPC error {error.get('code')} in {method}: {error.get('message')}")
            results.append(item.get("result"))
        return results

    async def chain_id(self) -> int:
        """`eth_chainId` as an int."""
        return _quantity(await self.request("eth_chainId", []), "eth_chainId")

    async def block_number(self) -> int:
        """`eth_blockNumber` as an int."""
        return _quantity(await self.request("eth_blockNumber", []), "eth_blockNumber")

    async def eth_call(self, to: str, data: bytes, block: str = "latest") -> bytes:
        """Execute a read-only call and return the raw return data."""
        result = await self.request("eth_call", [{"to": to, "data": "0x" + data.hex()}, block])
        if not isinstance(result, str) or not result.startswith("0x"):
            raise RpcError("eth_call result is not 0x-prefixed hex")
        try:
            return bytes.fromhex(result[2:])
        except ValueError as exc:
            raise RpcError("eth_call result is not valid hex") from exc

    async def aggregate3(
        self, calls: list[Call3], *, batch_size: int = 200, block: str = "latest"
    ) -> list[Call3Result]:
        """Run calls through Multicall3 `aggregate3`, `batch_size` calls per eth_call."""
        results: list[Call3Result] = []
        for start in range(0, len(calls), batch_size):
            batch = calls[start : start + batch_size]
            raw = await self.eth_call(MULTICALL3_ADDRESS, encode_aggregate3(batch), block)
            try:
                decoded = decode_aggregate3(raw)
            except AbiError as exc:
                raise RpcError(f"malformed aggregate3 return data: {exc}") from exc
            if len(decoded) != len(batch):
                raise RpcError(f"aggregate3 returned {len(decoded)} results for {len(batch)} calls")
            results.extend(decoded)
        return results


def _quantity(value: Any, method: str) -> int:
    """A JSON-RPC hex quantity ("0x1a") as an int."""
    if not isinstance(value, str) or not value.startswith("0x"):
        raise RpcError(f"{method} result is not a hex quantity")
    try:
        return int(value, 16)
    except ValueError as exc:
        raise RpcError(f"{method} result is not a hex quantity") from exc
