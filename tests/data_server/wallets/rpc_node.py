"""A loopback Ethereum JSON-RPC node that answers `eth_call` from constructed test vectors.

It speaks the real wire format (JSON-RPC 2.0 over HTTP POST, hex strings) and understands
Multicall3 `aggregate3` at its canonical address by unpacking the batch and answering each
inner call from the vectors. The ABI handling here is written independently of
`data_server.wallets.abi`, word by word, so the two check each other.

Paths: `/` answers normally; `/down` answers every request with a JSON-RPC error, like a
node that is failing.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

VECTORS_FILE = Path(__file__).parent / "fixtures" / "rpc_vectors.json"
MULTICALL3 = "0xca11bde05977b3631167028862be2a173976ca11"
AGGREGATE3 = "82ad56cb"
BALANCE_OF = "70a08231"
GET_ETH_BALANCE = "4d2301cc"


def _words(hexdata: str) -> list[int]:
    return [int(hexdata[i : i + 64], 16) for i in range(0, len(hexdata), 64)]


def unpack_aggregate3(calldata_hex: str) -> list[tuple[str, str]]:
    """(target, calldata hex) of each call in aggregate3 calldata (without 0x)."""
    assert calldata_hex[:8] == AGGREGATE3, "not aggregate3"
    body = bytes.fromhex(calldata_hex[8:])

    def word(at: int) -> int:
        return int.from_bytes(body[at : at + 32], "big")

    array_at = word(0)
    count = word(array_at)
    heads = array_at + 32
    calls = []
    for i in range(count):
        tuple_at = heads + word(heads + 32 * i)
        target = "0x" + body[tuple_at + 12 : tuple_at + 32].hex()
        data_at = tuple_at + word(tuple_at + 64)
        length = word(data_at)
        calls.append((target, body[data_at + 32 : data_at + 32 + length].hex()))
    return calls


def pack_results(results: list[tuple[bool, bytes]]) -> str:
    """ABI-encode `(bool success, bytes returnData)[]` as 0x hex."""

    def w(n: int) -> bytes:
        return n.to_bytes(32, "big")

    tails = []
    for ok, data in results:
        padded = data + b"\x00" * (-len(data) % 32)
        tails.append(w(int(ok)) + w(64) + w(len(data)) + padded)
    offsets, at = [], 32 * len(results)
    for tail in tails:
        offsets.append(w(at))
        at += len(tail)
    return "0x" + (w(32) + w(len(results)) + b"".join(offsets) + b"".join(tails)).hex()


class Vectors:
    """Constructed eth_call answers keyed by (target, calldata)."""

    def __init__(self, path: Path = VECTORS_FILE) -> None:
        doc = json.loads(path.read_text())
        self.wallet: str = doc["wallet"]
        self.calls: dict[tuple[str, str], str] = {
            (c["to"].lower(), c["data"].lower().removeprefix("0x")): c["return"].removeprefix("0x")
            for c in doc["calls"]
        }

    def answer(self, target: str, data_hex: str) -> tuple[bool, bytes]:
        """(success, return data) of one call."""
        found = self.calls.get((target.lower(), data_hex.lower()))
        if found is not None:
            return True, bytes.fromhex(found)
        if data_hex.startswith(BALANCE_OF):
            return True, bytes(32)
        if target.lower() == MULTICALL3 and data_hex.startswith(GET_ETH_BALANCE):
            return True, bytes(32)  # Multicall3 answers any address: unlisted ones hold 0
        return False, b""


class RpcNode:
    """The node on 127.0.0.1, in a thread; counts requests so tests can see batching."""

    def __init__(self, vectors: Vectors | None = None) -> None:
        self.vectors = vectors or Vectors()
        self.requests: list[dict[str, Any]] = []
        node = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                request = json.loads(self.rfile.read(length))
                node.requests.append(request)
                body = json.dumps(node.respond(request, failing=self.path == "/down")).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Base URL of the node."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/"

    def respond(self, request: dict[str, Any], *, failing: bool = False) -> dict[str, Any]:
        """The JSON-RPC response to one request."""
        rid = request.get("id")
        if failing:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "internal"}}
        if request.get("method") == "eth_chainId":
            return {"jsonrpc": "2.0", "id": rid, "result": "0x1"}
        if request.get("method") == "eth_blockNumber":
            return {"jsonrpc": "2.0", "id": rid, "result": "0x1234"}
        if request.get("method") != "eth_call":
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}}
        call = request["params"][0]
        target, data = call["to"].lower(), call["data"].removeprefix("0x")
        if target == MULTICALL3:
            results = [self.vectors.answer(t, d) for t, d in unpack_aggregate3(data)]
            return {"jsonrpc": "2.0", "id": rid, "result": pack_results(results)}
        ok, out = self.vectors.answer(target, data)
        if not ok:
            return {
                "jsonrpc": "2.0",
                "id": rid,
                "error": {"code": 3, "message": "execution reverted"},
            }
        return {"jsonrpc": "2.0", "id": rid, "result": "0x" + out.hex()}

    def start(self) -> RpcNode:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
