"""Keccak-256 against known vectors and FIPS SHA3, and EIP-55 address checksums."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert.tools.addresses import (
    AddressError,
    checksum_encode,
    is_valid_address,
    looks_like_solana,
    to_checksum_address,
)
from albert.tools.keccak import keccak256, sponge_256

# The examples published in EIP-55 itself.
EIP55_EXAMPLES = [
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
]


def test_keccak256_known_vectors() -> None:
    assert keccak256(b"").hex() == (
        "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    )
    assert keccak256(b"abc").hex() == (
        "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"
    )
    # The ERC-20 transfer selector is the first four bytes of this hash.
    assert keccak256(b"transfer(address,uint256)")[:4].hex() == "a9059cbb"


def test_keccak_is_not_fips_sha3() -> None:
    assert keccak256(b"") != hashlib.sha3_256(b"").digest()


@pytest.mark.parametrize("length", [0, 1, 135, 136, 137, 271, 272, 273, 1000])
def test_same_permutation_as_fips_sha3_across_block_boundaries(length: int) -> None:
    # With SHA-3's domain byte the sponge must equal hashlib: this checks the
    # permutation and multi-block absorption independently of any Keccak vector.
    data = bytes((i * 7 + 3) % 256 for i in range(length))
    assert sponge_256(data, domain=0x06) == hashlib.sha3_256(data).digest()


@pytest.mark.parametrize("address", EIP55_EXAMPLES)
def test_eip55_published_examples(address: str) -> None:
    assert checksum_encode(address[2:]) == address
    assert to_checksum_address(address) == address
    assert to_checksum_address(address.lower()) == address
    assert to_checksum_address("0x" + address[2:].upper()) == address


@pytest.mark.parametrize("address", EIP55_EXAMPLES)
def test_wrong_mixed_case_is_rejected(address: str) -> None:
    digits = list(address[2:])
    first_letter = next(i for i, ch in enumerate(digits) if ch.isalpha())
    digits[first_letter] = digits[first_letter].swapcase()
    with pytest.raises(AddressError, match="EIP-55 checksum"):
        to_checksum_address("0x" + "".join(digits))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeA", "expected 40 hex digits after 0x, got 38"),
        ("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed00", "got 42"),
        ("5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "must start with 0x"),
        ("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeZ", "non-hex characters 'Z'"),
        ("", "must start with 0x"),
        ("Ao3fKu6s2jH2vFHLWUchgf4mPWQ7G4FEttHa1xXv7Wio", "looks like a Solana address"),
    ],
)
def test_bad_addresses_have_clear_messages(value: str, message: str) -> None:
    with pytest.raises(AddressError, match=message):
        to_checksum_address(value)
    assert not is_valid_address(value)


def test_solana_detection() -> None:
    assert looks_like_solana("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v")
    assert not looks_like_solana(EIP55_EXAMPLES[0])


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=20, max_size=20))
def test_checksum_round_trip(raw: bytes) -> None:
    encoded = checksum_encode(raw.hex())
    assert to_checksum_address(encoded) == encoded
    assert to_checksum_address(encoded.lower()) == encoded
    digits = encoded[2:]
    letters = [i for i, ch in enumerate(digits) if ch.isalpha()]
    if not letters:
        return
    flipped = list(digits)
    flipped[letters[0]] = flipped[letters[0]].swapcase()
    mutated = "".join(flipped)
    if mutated.islower() or mutated.isupper():
        assert to_checksum_address("0x" + mutated) == encoded  # no checksum carried
    else:
        with pytest.raises(AddressError):
            to_checksum_address("0x" + mutated)
