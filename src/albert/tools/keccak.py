"""Keccak-256 as Ethereum uses it, in pure Python.

hashlib.sha3_256 is the final FIPS-202 SHA-3, which pads with 0x06; Ethereum
kept the original Keccak submission, which pads with 0x01. Same permutation,
different digests, so we carry our own (the worker runs on Pyodide, where
adding a native dependency is not an option).
"""

from __future__ import annotations

_MASK = (1 << 64) - 1

# Round constants of Keccak-f[1600] (iota step), from the Keccak reference.
_ROUND_CONSTANTS = (
    0x0000000000000001,
    0x0000000000008082,
    0x800000000000808A,
    0x8000000080008000,
    0x000000000000808B,
    0x0000000080000001,
    0x8000000080008081,
    0x8000000000008009,
    0x000000000000008A,
    0x0000000000000088,
    0x0000000080008009,
    0x000000008000000A,
    0x000000008000808B,
    0x800000000000008B,
    0x8000000000008089,
    0x8000000000008003,
    0x8000000000008002,
    0x8000000000000080,
    0x000000000000800A,
    0x800000008000000A,
    0x8000000080008081,
    0x8000000000008080,
    0x0000000080000001,
    0x8000000080008008,
)

# Rotation offsets r[x][y] of the rho step.
_ROTATIONS = (
    (0, 36, 3, 41, 18),
    (1, 44, 10, 45, 2),
    (62, 6, 43, 15, 61),
    (28, 55, 25, 21, 56),
    (27, 20, 39, 8, 14),
)

_RATE_BYTES = 136  # 1600 - 2 * 256 bits of capacity, in bytes


def _rotl(value: int, shift: int) -> int:
    return ((value << shift) | (value >> (64 - shift))) & _MASK if shift else value


def _keccak_f(state: list[list[int]]) -> None:
    """The Keccak-f[1600] permutation on a 5x5 state of 64-bit lanes, in place."""
    for rc in _ROUND_CONSTANTS:
        # theta
        c = [state[x][0] ^ state[x][1] ^ state[x][2] ^ state[x][3] ^ state[x][4] for x in range(5)]
        d = [c[(x - 1) % 5] ^ _rotl(c[(x + 1) % 5], 1) for x in range(5)]
        for x in range(5):
            for y in range(5):
                state[x][y] ^= d[x]
        # rho and pi
        b = [[0] * 5 for _ in range(5)]
        for x in range(5):
            for y in range(5):
                b[y][(2 * x + 3 * y) % 5] = _rotl(state[x][y], _ROTATIONS[x][y])
        # chi
        for x in range(5):
            for y in range(5):
                state[x][y] = b[x][y] ^ ((~b[(x + 1) % 5][y]) & b[(x + 2) % 5][y])
        # iota
        state[0][0] ^= rc


def keccak256(data: bytes) -> bytes:
    """The 32-byte Keccak-256 digest of data (Ethereum's hash, not FIPS SHA3-256)."""
    return sponge_256(data, domain=0x01)


def sponge_256(data: bytes, *, domain: int) -> bytes:
    """A 256-bit sponge over Keccak-f[1600]; domain 0x01 is Keccak, 0x06 is FIPS SHA3-256."""
    padded = bytearray(data)
    padded.append(domain)
    while len(padded) % _RATE_BYTES:
        padded.append(0x00)
    padded[-1] |= 0x80

    state = [[0] * 5 for _ in range(5)]
    for offset in range(0, len(padded), _RATE_BYTES):
        block = padded[offset : offset + _RATE_BYTES]
        for i in range(_RATE_BYTES // 8):
            lane = int.from_bytes(block[8 * i : 8 * i + 8], "little")
            state[i % 5][i // 5] ^= lane
        _keccak_f(state)

    out = bytearray()
    for i in range(4):  # 256 bits = four lanes, read in x-major order
        out += state[i % 5][i // 5].to_bytes(8, "little")
    return bytes(out)
