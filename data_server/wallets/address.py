"""EVM address validation for the wallet tools: hex, length, and the EIP-55 checksum.

The agent's validator is reused so the agent and the data server accept and reject
exactly the same inputs.
"""

from __future__ import annotations

from albert.tools.addresses import AddressError, to_checksum_address

InvalidAddress = AddressError


def validate_address(address: str) -> str:
    """Return the checksummed address, or raise InvalidAddress saying what is wrong.

    All-lowercase and all-uppercase hex carry no checksum and are accepted; mixed case must
    match EIP-55 exactly, because a wrong mix usually means a mistyped character.
    """
    return to_checksum_address(address)


__all__ = ["InvalidAddress", "validate_address"]
