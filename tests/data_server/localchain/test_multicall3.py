"""The recorded Multicall3 runtime code is what its published deployment transaction deploys."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from data_server.localchain.anvil import AnvilProcess
from data_server.localchain.seed import FIXTURES_DIR, multicall3_runtime
from data_server.wallets.abi import MULTICALL3_ADDRESS
from tests.localchain_fixture import LocalChains, require_anvil, rpc

DEPLOYER = "0x05f32b3cc3888453ff71b01135b34ff8e41263f2"


def _signed_tx() -> str:
    return (FIXTURES_DIR / "multicall3_deployment_tx.hex").read_text().strip()


def _rlp_item(data: bytes, at: int) -> tuple[bytes, int]:
    """One RLP string item at `at` (written here independently of the project)."""
    prefix = data[at]
    if prefix < 0x80:
        return data[at : at + 1], at + 1
    if prefix < 0xB8:
        size = prefix - 0x80
        return data[at + 1 : at + 1 + size], at + 1 + size
    width = prefix - 0xB7
    size = int.from_bytes(data[at + 1 : at + 1 + width], "big")
    start = at + 1 + width
    return data[start : start + size], start + size


def _init_code() -> bytes:
    raw = bytes.fromhex(_signed_tx()[2:])
    assert raw[0] >= 0xF8  # a long list: [nonce, gasPrice, gas, to, value, data, v, r, s]
    at = 1 + (raw[0] - 0xF7)
    fields = []
    while at < len(raw):
        item, at = _rlp_item(raw, at)
        fields.append(item)
    assert len(fields) == 9 and fields[3] == b""  # contract creation
    return fields[5]


@pytest.fixture
def fresh_node(tmp_path: Path) -> Iterator[AnvilProcess]:
    require_anvil()
    with AnvilProcess("ethereum", tmp_path) as node:
        yield node


def test_the_init_code_returns_exactly_the_recorded_runtime(fresh_node: AnvilProcess) -> None:
    returned = rpc(fresh_node.url, "eth_call", [{"data": "0x" + _init_code().hex()}, "latest"])
    assert returned == multicall3_runtime()
    # solc 0.8.12's metadata tail, the compiler the repository names for verification.
    assert multicall3_runtime().endswith("64736f6c634300080c0033")


def test_broadcasting_the_signed_transaction_deploys_it_at_the_canonical_address(
    fresh_node: AnvilProcess,
) -> None:
    rpc(fresh_node.url, "anvil_setBalance", [DEPLOYER, hex(10**18)])
    tx_hash = rpc(fresh_node.url, "eth_sendRawTransaction", [_signed_tx()])
    # Mining follows the send: the receipt may take a moment on a busy machine.
    deadline = time.monotonic() + 10
    receipt = None
    while receipt is None and time.monotonic() < deadline:
        receipt = rpc(fresh_node.url, "eth_getTransactionReceipt", [tx_hash])
        if receipt is None:
            time.sleep(0.05)
    assert isinstance(receipt, dict) and receipt["status"] == "0x1"
    assert receipt["from"].lower() == DEPLOYER
    assert receipt["contractAddress"].lower() == MULTICALL3_ADDRESS.lower()
    code = rpc(fresh_node.url, "eth_getCode", [MULTICALL3_ADDRESS, "latest"])
    assert code == multicall3_runtime()


def test_the_seeded_chains_carry_it_at_the_canonical_address(local_chains: LocalChains) -> None:
    for url in local_chains.urls.values():
        assert rpc(url, "eth_getCode", [MULTICALL3_ADDRESS, "latest"]) == multicall3_runtime()
