"""EVM address validation with EIP-55 checksums.

EIP-55 encodes a checksum in the letter case of the hex digits: an all-lower or
all-upper address carries no checksum and is accepted (then normalised), a
mixed-case address must match its checksum exactly, since a mismatch usually
means a mistyped or corrupted address.
"""

from __future__ import annotations

import re

from albert.tools.keccak import keccak256
from albert.validation import quoted_input

# EVM chains the platform services know. One 20-byte address is valid on all of them.
EVM_CHAINS: tuple[str, ...] = ("ethereum", "base", "arbitrum", "optimism", "polygon", "bsc")

_HEX40 = re.compile(r"[0-9a-fA-F]{40}")
_BASE58 = re.compile(r"[1-9A-HJ-NP-Za-km-z]{32,44}")


class AddressError(ValueError):
    """An address that cannot be used; the message says why, in words a model can act on."""


def checksum_encode(hex40: str) -> str:
    """The EIP-55 form of 40 hex digits (any case), with the 0x prefix."""
    lower = hex40.lower()
    digest = keccak256(lower.encode("ascii")).hex()
    return "0x" + "".join(
        ch.upper() if ch.isalpha() and int(digest[i], 16) >= 8 else ch for i, ch in enumerate(lower)
    )


def looks_like_solana(value: str) -> bool:
    """True for a base58 string of Solana public-key length (not an EVM address)."""
    return not value.startswith("0x") and bool(_BASE58.fullmatch(value))


# An error quotes at most this much of what it was given (an address is 42 characters).
QUOTED_CHARS = 60


def to_checksum_address(value: str) -> str:
    """Validate an EVM address and return its EIP-55 checksum form, or raise AddressError
    (quoting at most QUOTED_CHARS characters of the value)."""
    raw = value.strip()
    shown = quoted_input(raw, QUOTED_CHARS)
    if looks_like_solana(raw):
        raise AddressError(
            f"{shown} looks like a Solana address; only EVM addresses (0x followed by "
            f"40 hex digits) are accepted here. Supported chains: {', '.join(EVM_CHAINS)}."
        )
    if not raw.startswith(("0x", "0X")):
        raise AddressError(f"{shown} is not an EVM address: it must start with 0x.")
    digits = raw[2:]
    if len(digits) != 40:
        raise AddressError(
            f"{shown} is not an EVM address: expected 40 hex digits after 0x, got {len(digits)}."
        )
    if not _HEX40.fullmatch(digits):
        bad = sorted({ch for ch in digits if ch not in "0123456789abcdefABCDEF"})
        raise AddressError(
            f"{shown} is not an EVM address: it contains non-hex characters {''.join(bad)!r}."
        )
    expected = checksum_encode(digits)
    if digits.islower() or digits.isupper() or not any(ch.isalpha() for ch in digits):
        return expected
    if "0x" + digits != expected:
        raise AddressError(
            f"{shown} fails its EIP-55 checksum (mixed-case letters do not match); the "
            "address is probably mistyped. Check it, or pass it all-lowercase to skip the check."
        )
    return expected


def is_valid_address(value: str) -> bool:
    """True when value is an acceptable EVM address (see to_checksum_address)."""
    try:
        to_checksum_address(value)
    except AddressError:
        return False
    return True
