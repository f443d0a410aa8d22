"""ENS names for the wallet tools: normalise (ENSIP-15), namehash (EIP-137), resolve on chain.

Resolution is the two reads every ENS client makes: the registry's `resolver(node)` names the
resolver contract of the name, and that resolver's `addr(node)` is the address. A name with
no resolver, or whose resolver has no address for it, does not resolve.
"""

from __future__ import annotations

from albert.tools.addresses import checksum_encode
from albert.tools.keccak import keccak256
from data_server.wallets.abi import AbiError, call_addr, call_resolver, decode_address
from data_server.wallets.rpc import JsonRpcClient, RpcError

# The ENS registry's address on Ethereum mainnet (the same on its testnets); the local chain's
# seeding step installs its registry there too.
ENS_REGISTRY = "0x00000000000C2E074eC69A0dFb2997BA6C7d2e1e"
ZERO_ADDRESS = "0x" + "00" * 20


class EnsError(ValueError):
    """A name that is not a valid ENS name, or that does not resolve to an address."""


def looks_like_ens_name(value: str) -> bool:
    """True for inputs meant as a name rather than an address: a dot, and not 0x-hex."""
    text = value.strip()
    return "." in text and not text.lower().startswith("0x")


def normalize_name(name: str) -> str:
    """The ENSIP-15 normalised form of `name` (lowercase, Unicode-normalised), or EnsError."""
    from ens_normalize import DisallowedSequence, ens_normalize

    text = name.strip()
    if not text:
        raise EnsError("empty ENS name")
    try:
        normalized = ens_normalize(text)
    except DisallowedSequence as exc:
        raise EnsError(f"{name!r} is not a valid ENS name: {exc}") from exc
    if "." not in normalized:
        raise EnsError(f"{name!r} is not a full ENS name (expected e.g. name.eth)")
    return normalized


def namehash(name: str) -> bytes:
    """EIP-137 namehash of an already normalised name ('' is the root node)."""
    node = b"\x00" * 32
    if name:
        for label in reversed(name.split(".")):
            node = keccak256(node + keccak256(label.encode()))
    return node


def labelhash(label: str) -> bytes:
    """keccak256 of one label."""
    return keccak256(label.encode())


class EnsResolver:
    """Resolves names through the registry on one chain (Ethereum)."""

    def __init__(self, client: JsonRpcClient, registry: str = ENS_REGISTRY) -> None:
        self._client = client
        self._registry = registry

    async def resolve(self, name: str) -> str:
        """The EIP-55 address `name` points at; EnsError if it does not resolve.

        RpcError when the node cannot be read (a different failure from "no such name").
        """
        normalized = normalize_name(name)
        node = namehash(normalized)
        resolver = await self._read_address(self._registry, call_resolver(node), "registry")
        if resolver == ZERO_ADDRESS:
            raise EnsError(f"name does not resolve: {normalized} has no resolver set")
        address = await self._read_address(resolver, call_addr(node), "resolver")
        if address == ZERO_ADDRESS:
            raise EnsError(f"name does not resolve: {normalized} has no address record")
        return checksum_encode(address[2:])

    async def _read_address(self, contract: str, data: bytes, what: str) -> str:
        raw = await self._client.eth_call(contract, data)
        if not raw:
            # No code at the contract: on a chain without ENS, nothing resolves.
            raise EnsError(f"no ENS {what} contract at {contract} on this chain")
        try:
            return decode_address(raw)
        except AbiError as exc:
            raise RpcError(f"ENS {what} answered malformed data: {exc}") from exc
