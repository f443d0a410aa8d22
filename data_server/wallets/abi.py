"""Hand-rolled Solidity ABI encoding for the handful of calls the wallet tools make.

Only what is needed, following the ABI specification's head/tail layout
(https://docs.soliditylang.org/en/latest/abi-spec.html):

- static words: `address` (left-padded to 32 bytes), `uint256`, `bool`;
- `aggregate3((address target, bool allowFailure, bytes callData)[])` of Multicall3 and its
  return type `(bool success, bytes returnData)[]`. A tuple holding `bytes` is dynamic, so
  the array is encoded as: length, one offset per element (relative to the first offset
  word), then each element as its own head (static fields, offset of `bytes`) and tail.

Function selectors are the first four bytes of keccak256 of the canonical signature; they
are constants here and checked against the hash in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

WORD = 32

# keccak256("balanceOf(address)")[:4] and friends.
SELECTOR_BALANCE_OF = bytes.fromhex("70a08231")
SELECTOR_DECIMALS = bytes.fromhex("313ce567")
SELECTOR_TOTAL_SUPPLY = bytes.fromhex("18160ddd")
SELECTOR_CONVERT_TO_ASSETS = bytes.fromhex("07a2d13a")
SELECTOR_AGGREGATE3 = bytes.fromhex("82ad56cb")
# Multicall3's own `getEthBalance(address)`: the native balance inside the same aggregate3.
SELECTOR_GET_ETH_BALANCE = bytes.fromhex("4d2301cc")
# ENS (EIP-137): registry `resolver(bytes32)`, resolver `addr(bytes32)`.
SELECTOR_RESOLVER = bytes.fromhex("0178b8bf")
SELECTOR_ADDR = bytes.fromhex("3b3b57de")

SIGNATURES: dict[bytes, str] = {
    SELECTOR_BALANCE_OF: "balanceOf(address)",
    SELECTOR_DECIMALS: "decimals()",
    SELECTOR_TOTAL_SUPPLY: "totalSupply()",
    SELECTOR_CONVERT_TO_ASSETS: "convertToAssets(uint256)",
    SELECTOR_AGGREGATE3: "aggregate3((address,bool,bytes)[])",
    SELECTOR_GET_ETH_BALANCE: "getEthBalance(address)",
    SELECTOR_RESOLVER: "resolver(bytes32)",
    SELECTOR_ADDR: "addr(bytes32)",
}

MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11"


class AbiError(ValueError):
    """Return data that does not have the expected ABI shape."""


def encode_uint(value: int) -> bytes:
    """A uint256 word."""
    if value < 0 or value >= 1 << 256:
        raise AbiError(f"uint256 out of range: {value}")
    return value.to_bytes(WORD, "big")


def encode_bool(value: bool) -> bytes:
    """A bool word (0 or 1)."""
    return encode_uint(1 if value else 0)


def address_bytes(address: str) -> bytes:
    """The 20 bytes of a 0x-prefixed hex address."""
    raw = address[2:] if address[:2].lower() == "0x" else address
    if len(raw) != 40:
        raise AbiError(f"not a 20-byte address: {address!r}")
    return bytes.fromhex(raw)


def encode_address(address: str) -> bytes:
    """An address word: 12 zero bytes, then the 20 address bytes."""
    return b"\x00" * 12 + address_bytes(address)


def _pad_right(data: bytes) -> bytes:
    return data + b"\x00" * (-len(data) % WORD)


def encode_bytes(data: bytes) -> bytes:
    """A dynamic `bytes` tail: length word, then the data right-padded to whole words."""
    return encode_uint(len(data)) + _pad_right(data)


def call_balance_of(owner: str) -> bytes:
    """Calldata of `balanceOf(owner)`."""
    return SELECTOR_BALANCE_OF + encode_address(owner)


def call_get_eth_balance(owner: str) -> bytes:
    """Calldata of Multicall3 `getEthBalance(owner)`: the chain's native balance of `owner`."""
    return SELECTOR_GET_ETH_BALANCE + encode_address(owner)


def call_convert_to_assets(shares: int) -> bytes:
    """Calldata of ERC-4626 `convertToAssets(shares)`."""
    return SELECTOR_CONVERT_TO_ASSETS + encode_uint(shares)


def call_decimals() -> bytes:
    """Calldata of `decimals()`."""
    return SELECTOR_DECIMALS


def call_resolver(node: bytes) -> bytes:
    """Calldata of the ENS registry's `resolver(node)`."""
    return SELECTOR_RESOLVER + encode_bytes32(node)


def call_addr(node: bytes) -> bytes:
    """Calldata of an ENS resolver's `addr(node)`."""
    return SELECTOR_ADDR + encode_bytes32(node)


def encode_bytes32(value: bytes) -> bytes:
    """A bytes32 word."""
    if len(value) != WORD:
        raise AbiError(f"bytes32 needs 32 bytes, got {len(value)}")
    return value


def encode_call(selector: bytes, args: list[tuple[str, object]]) -> bytes:
    """Calldata of a call with static (`address`, `uint*`, `bool`, `bytes32`) and `string` args.

    Dynamic arguments follow the head/tail layout: the head holds an offset, counted from the
    start of the arguments, and the tail holds the length and the padded bytes.
    """
    heads: list[bytes | None] = []
    tails: list[bytes] = []
    for kind, value in args:
        if kind == "string":
            heads.append(None)
            tails.append(encode_bytes(str(value).encode()))
        elif kind == "address":
            heads.append(encode_address(str(value)))
        elif kind == "bool":
            heads.append(encode_bool(bool(value)))
        elif kind == "bytes32":
            heads.append(encode_bytes32(value if isinstance(value, bytes) else b""))
        elif kind.startswith("uint"):
            heads.append(encode_uint(int(value)))  # type: ignore[call-overload]
        else:
            raise AbiError(f"unsupported ABI type: {kind}")
    head_size = WORD * len(heads)
    out, tail_at, tail_index = b"", head_size, 0
    for head in heads:
        if head is None:
            out += encode_uint(tail_at)
            tail_at += len(tails[tail_index])
            tail_index += 1
        else:
            out += head
    return selector + out + b"".join(tails)


def decode_address(data: bytes) -> str:
    """The first word of return data as a lowercase 0x address (upper 12 bytes must be zero)."""
    value = _word(data, 0)
    if value >> 160:
        raise AbiError("address word has non-zero upper bytes")
    return "0x" + value.to_bytes(20, "big").hex()


def call_total_supply() -> bytes:
    """Calldata of `totalSupply()`."""
    return SELECTOR_TOTAL_SUPPLY


@dataclass(frozen=True)
class Call3:
    """One call inside Multicall3 `aggregate3`."""

    target: str
    call_data: bytes
    allow_failure: bool = True


@dataclass(frozen=True)
class Call3Result:
    """One result of `aggregate3`: whether the inner call succeeded and what it returned."""

    success: bool
    return_data: bytes


def encode_aggregate3(calls: list[Call3]) -> bytes:
    """Calldata of `aggregate3(calls)`."""
    elements = [
        encode_address(c.target)
        + encode_bool(c.allow_failure)
        + encode_uint(3 * WORD)  # the bytes tail starts right after the three head words
        + encode_bytes(c.call_data)
        for c in calls
    ]
    offsets, position = [], len(calls) * WORD
    for element in elements:
        offsets.append(encode_uint(position))
        position += len(element)
    array = encode_uint(len(calls)) + b"".join(offsets) + b"".join(elements)
    return SELECTOR_AGGREGATE3 + encode_uint(WORD) + array


def _word(data: bytes, offset: int) -> int:
    if offset < 0 or offset + WORD > len(data):
        raise AbiError(f"read past the end of return data at byte {offset}")
    return int.from_bytes(data[offset : offset + WORD], "big")


def decode_uint(data: bytes) -> int:
    """The first word of return data as a uint256."""
    return _word(data, 0)


def decode_aggregate3(data: bytes) -> list[Call3Result]:
    """Decode the return data of `aggregate3`: `(bool success, bytes returnData)[]`."""
    array_at = _word(data, 0)
    count = _word(data, array_at)
    if count > (len(data) - array_at) // WORD:
        raise AbiError(f"array length {count} does not fit the return data")
    base = array_at + WORD
    results = []
    for i in range(count):
        element_at = base + _word(data, base + i * WORD)
        success = _word(data, element_at)
        if success not in (0, 1):
            raise AbiError(f"bool word out of range: {success}")
        bytes_at = element_at + _word(data, element_at + WORD)
        length = _word(data, bytes_at)
        start = bytes_at + WORD
        if start + length > len(data):
            raise AbiError("returnData runs past the end of the return data")
        results.append(Call3Result(success=bool(success), return_data=data[start : start + length]))
    return results
