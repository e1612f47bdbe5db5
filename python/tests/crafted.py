"""Crafting stores a writer would never make: replace bytes of a built
store, then reseal it (every section's checksum and the header's
recomputed, docs/FORMAT.md "Header"), so that the checksums do not give
the change away and the check under test is the one that fires.

XXH3-64 with seed 0 (the store's checksum) in plain Python, ported from the
xxhash-rust crate's `const_xxh3`; `test_crafted_store_reseals_to_the_same_bytes`
checks it against the checksums a real build wrote.
"""

from __future__ import annotations

import struct

_M = (1 << 64) - 1

_SECRET = bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
    "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
    "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e"
)

P32_1, P32_2, P32_3 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D
P64_1, P64_2, P64_3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
P64_4, P64_5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def _u32(b: bytes | bytearray, at: int) -> int:
    return struct.unpack_from("<I", b, at)[0]


def _u64(b: bytes | bytearray, at: int) -> int:
    return struct.unpack_from("<Q", b, at)[0]


def _xxh64_avalanche(h: int) -> int:
    h ^= h >> 33
    h = (h * P64_2) & _M
    h ^= h >> 29
    h = (h * P64_3) & _M
    return h ^ (h >> 32)


def _avalanche(h: int) -> int:
    h ^= h >> 37
    h = (h * 0x165667919E3779F9) & _M
    return h ^ (h >> 32)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M


def _fold(a: int, b: int) -> int:
    p = a * b
    return (p & _M) ^ (p >> 64)


def _mix16(data: bytes, at: int, secret_at: int) -> int:
    return _fold(_u64(data, at) ^ _u64(_SECRET, secret_at), _u64(data, at + 8) ^ _u64(_SECRET, secret_at + 8))


def xxh3_64(data: bytes) -> int:
    """XXH3-64 of ``data`` with seed 0."""
    n = len(data)
    s = _SECRET
    if n == 0:
        return _xxh64_avalanche(_u64(s, 56) ^ _u64(s, 64))
    if n <= 3:
        combo = (data[0] << 16) | (data[n >> 1] << 24) | data[n - 1] | (n << 8)
        return _xxh64_avalanche(combo ^ (_u32(s, 0) ^ _u32(s, 4)))
    if n <= 8:
        keyed = ((_u32(data, n - 4) + (_u32(data, 0) << 32)) & _M) ^ (_u64(s, 8) ^ _u64(s, 16))
        h = keyed ^ _rotl(keyed, 49) ^ _rotl(keyed, 24)
        h = (h * 0x9FB21C651E98DF25) & _M
        h ^= ((h >> 35) + n) & _M
        h = (h * 0x9FB21C651E98DF25) & _M
        return h ^ (h >> 28)
    if n <= 16:
        lo = _u64(data, 0) ^ (_u64(s, 24) ^ _u64(s, 32))
        hi = _u64(data, n - 8) ^ (_u64(s, 40) ^ _u64(s, 48))
        swapped = int.from_bytes(lo.to_bytes(8, "little"), "big")
        return _avalanche((n + swapped + hi + _fold(lo, hi)) & _M)
    if n <= 128:
        acc = (n * P64_1) & _M
        if n > 32:
            if n > 64:
                if n > 96:
                    acc += _mix16(data, 48, 96) + _mix16(data, n - 64, 112)
                acc += _mix16(data, 32, 64) + _mix16(data, n - 48, 80)
            acc += _mix16(data, 16, 32) + _mix16(data, n - 32, 48)
        acc += _mix16(data, 0, 0) + _mix16(data, n - 16, 16)
        return _avalanche(acc & _M)
    if n <= 240:
        acc = (n * P64_1) & _M
        for i in range(8):
            acc += _mix16(data, 16 * i, 16 * i)
        acc = _avalanche(acc & _M)
        for i in range(8, n // 16):
            acc += _mix16(data, 16 * i, 16 * (i - 8) + 3)
        acc += _mix16(data, n - 16, 136 - 17)
        return _avalanche(acc & _M)
    return _long(data)


def _accumulate(acc: list[int], data: bytes, at: int, secret_at: int) -> None:
    for i in range(8):
        value = _u64(data, at + 8 * i)
        key = value ^ _u64(_SECRET, secret_at + 8 * i)
        acc[i ^ 1] = (acc[i ^ 1] + value) & _M
        acc[i] = (acc[i] + (key & 0xFFFFFFFF) * (key >> 32)) & _M


def _long(data: bytes) -> int:
    n = len(data)
    acc = [P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1]
    stripes = (len(_SECRET) - 64) // 8
    block = 64 * stripes
    blocks = (n - 1) // block
    for b in range(blocks):
        for i in range(stripes):
            _accumulate(acc, data, b * block + i * 64, i * 8)
        for i in range(8):
            a = acc[i] ^ (acc[i] >> 47) ^ _u64(_SECRET, len(_SECRET) - 64 + 8 * i)
            acc[i] = (a * P32_1) & _M
    for i in range(((n - 1) - block * blocks) // 64):
        _accumulate(acc, data, blocks * block + i * 64, i * 8)
    _accumulate(acc, data, n - 64, len(_SECRET) - 64 - 7)
    result = (n * P64_1) & _M
    for i in range(4):
        result += _fold(acc[2 * i] ^ _u64(_SECRET, 11 + 16 * i), acc[2 * i + 1] ^ _u64(_SECRET, 11 + 16 * i + 8))
    return _avalanche(result & _M)


def reseal(store: bytes) -> bytes:
    """``store`` with every section's checksum and the header's made to
    match its bytes."""
    out = bytearray(store)
    header_len = _u32(out, 12)
    sections = _u32(out, 84)
    for i in range(sections):
        entry = 128 + 32 * i
        offset, length = struct.unpack_from("<QQ", out, entry + 8)
        struct.pack_into("<Q", out, entry + 24, xxh3_64(bytes(out[offset : offset + length])))
    struct.pack_into("<Q", out, header_len - 8, xxh3_64(bytes(out[: header_len - 8])))
    return bytes(out)


def replace_once(store: bytes, old: bytes, new: bytes) -> bytes:
    """``store`` with the one occurrence of ``old`` replaced by ``new`` of
    the same length (so no offset moves), resealed."""
    assert len(old) == len(new), "a crafted body keeps its length"
    assert store.count(old) == 1, f"{old!r} occurs {store.count(old)} times"
    return reseal(store.replace(old, new))
