"""ABI encoding checked against hand-written layouts and the Keccak selectors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from albert.tools.keccak import keccak256
from data_server.wallets.abi import (
    SIGNATURES,
    AbiError,
    Call3,
    decode_aggregate3,
    encode_aggregate3,
)
from tests.data_server.wallets.rpc_node import pack_results, unpack_aggregate3


def w(n: int) -> str:
    return format(n, "064x")


def test_selectors_are_the_keccak_of_their_signatures() -> None:
    for selector, signature in SIGNATURES.items():
        assert keccak256(signature.encode()).hex()[:8] == selector.hex(), signature


def test_aggregate3_of_one_call_matches_the_spec_layout() -> None:
    target = "0x" + "ab" * 20
    calldata = bytes.fromhex("313ce567")  # decimals(): 4 bytes, padded to one word
    encoded = encode_aggregate3([Call3(target, calldata, allow_failure=True)]).hex()
    expected = (
        "82ad56cb"
        + w(0x20)  # offset of the array
        + w(1)  # array length
        + w(0x20)  # offset of element 0, counted from after the length word
        + "0" * 24
        + "ab" * 20  # target
        + w(1)  # allowFailure
        + w(0x60)  # offset of callData inside the tuple
        + w(4)  # callData length
        + "313ce567"
        + "0" * 56  # callData, right-padded
    )
    assert encoded == expected


def test_aggregate3_return_data_decodes() -> None:
    raw = (
        w(0x20)
        + w(2)
        + w(0x40)  # element 0 after two offset words
        + w(0x40 + 0x80)  # element 1 after element 0 (4 words)
        + w(1)
        + w(0x40)
        + w(32)
        + w(1234)  # success, 32 bytes: 1234
        + w(0)
        + w(0x40)
        + w(0)  # failure, empty
    )
    results = decode_aggregate3(bytes.fromhex(raw))
    assert [r.success for r in results] == [True, False]
    assert int.from_bytes(results[0].return_data, "big") == 1234
    assert results[1].return_data == b""


def test_truncated_return_data_is_an_abi_error() -> None:
    raw = bytes.fromhex(w(0x20) + w(3) + w(0x60))
    with pytest.raises(AbiError):
        decode_aggregate3(raw)


@given(
    st.lists(
        st.tuples(st.binary(min_size=20, max_size=20), st.binary(max_size=100), st.booleans()),
        max_size=8,
    )
)
def test_encoding_round_trips_through_an_independent_decoder(
    calls: list[tuple[bytes, bytes, bool]],
) -> None:
    encoded = encode_aggregate3([Call3("0x" + t.hex(), d, a) for t, d, a in calls])
    assert unpack_aggregate3(encoded.hex()) == [("0x" + t.hex(), d.hex()) for t, d, _ in calls]


@given(st.lists(st.tuples(st.booleans(), st.binary(max_size=100)), max_size=8))
def test_decoding_round_trips_through_an_independent_encoder(
    results: list[tuple[bool, bytes]],
) -> None:
    decoded = decode_aggregate3(bytes.fromhex(pack_results(results)[2:]))
    assert [(r.success, r.return_data) for r in decoded] == results
