"""String hashing of TF 1.15: ``tf.strings.to_hash_bucket_fast`` (``StringToHashBucketFast``,
farmhash's ``Fingerprint64``), ``tf.strings.to_hash_bucket_strong``
(``StringToHashBucketStrong``, SipHash-2-4 keyed by two uint64) and the legacy
``tf.strings.to_hash_bucket`` (``StringToHashBucket``, TF's murmur-style ``Hash64`` with seed
0xDECAFCAFFE), as host ops. The hash functions are the bit-exact algorithms TF's kernels
call, in pure Python: a bucket is ``hash(bytes) % num_buckets`` of the unsigned 64-bit hash,
so ids agree with TensorFlow's (lookup tables' out-of-vocabulary buckets depend on it).
"""
from __future__ import annotations

import numpy as np

from . import inference_context as ic
from ..errors import InvalidArgumentError
from ..op_helper import apply_op
from ..registry import Attr, OpType, register
from .sharded_save_ops import _strings

_M64 = (1 << 64) - 1
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F


def _fetch64(s: bytes, i: int) -> int:
    return int.from_bytes(s[i:i + 8], "little")


def _fetch32(s: bytes, i: int) -> int:
    return int.from_bytes(s[i:i + 4], "little")


def _rotate(value: int, shift: int) -> int:
    return value if shift == 0 else ((value >> shift) | (value << (64 - shift))) & _M64


def _shift_mix(value: int) -> int:
    return value ^ (value >> 47)


def _hash_len16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _M64
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M64
    b ^= b >> 47
    return (b * mul) & _M64


def _hash_len0to16(s: bytes, n: int) -> int:
    if n >= 8:
        mul = _K2 + n * 2
        a = (_fetch64(s, 0) + _K2) & _M64
        b = _fetch64(s, n - 8)
        c = (_rotate(b, 37) * mul + a) & _M64
        d = ((_rotate(a, 25) + b) * mul) & _M64
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        a = _fetch32(s, 0)
        return _hash_len16(n + (a << 3), _fetch32(s, n - 4), mul)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = (n + (s[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _M64) * _K2) & _M64
    return _K2


def _hash_len17to32(s: bytes, n: int) -> int:
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K1) & _M64
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M64
    d = (_fetch64(s, n - 16) * _K2) & _M64
    return _hash_len16((_rotate((a + b) & _M64, 43) + _rotate(c, 30) + d) & _M64,
                       (a + _rotate((b + _K2) & _M64, 18) + c) & _M64, mul)


def _hash_len33to64(s: bytes, n: int) -> int:
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K2) & _M64
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M64
    d = (_fetch64(s, n - 16) * _K2) & _M64
    y = (_rotate((a + b) & _M64, 43) + _rotate(c, 30) + d) & _M64
    z = _hash_len16(y, (a + _rotate((b + _K2) & _M64, 18) + c) & _M64, mul)
    e = (_fetch64(s, 16) * mul) & _M64
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & _M64
    h = ((z + _fetch64(s, n - 24)) * mul) & _M64
    return _hash_len16((_rotate((e + f) & _M64, 43) + _rotate(g, 30) + h) & _M64,
                       (e + _rotate((f + a) & _M64, 18) + g) & _M64, mul)


def _weak_hash_len32_with_seeds(s: bytes, i: int, a: int, b: int):
    w, x, y, z = _fetch64(s, i), _fetch64(s, i + 8), _fetch64(s, i + 16), _fetch64(s, i + 24)
    a = (a + w) & _M64
    b = _rotate((b + a + z) & _M64, 21)
    c = a
    a = (a + x + y) & _M64
    b = (b + _rotate(a, 44)) & _M64
    return (a + z) & _M64, (b + c) & _M64


def fingerprint64(data: bytes) -> int:
    """farmhash ``Fingerprint64`` (``farmhashna::Hash64``): TF's ``Fingerprint64``, unsigned."""
    s = bytes(data)
    n = len(s)
    if n <= 16:
        return _hash_len0to16(s, n)
    if n <= 32:
        return _hash_len17to32(s, n)
    if n <= 64:
        return _hash_len33to64(s, n)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _M64
    z = (_shift_mix((y * _K2 + 113) & _M64) * _K2) & _M64
    v = (0, 0)
    w = (0, 0)
    x = (x * _K2 + _fetch64(s, 0)) & _M64
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rotate((x + y + v[0] + _fetch64(s, i + 8)) & _M64, 37) * _K1) & _M64
        y = (_rotate((y + v[1] + _fetch64(s, i + 48)) & _M64, 42) * _K1) & _M64
        x ^= w[1]
        y = (y + v[0] + _fetch64(s, i + 40)) & _M64
        z = (_rotate((z + w[0]) & _M64, 33) * _K1) & _M64
        v = _weak_hash_len32_with_seeds(s, i, (v[1] * _K1) & _M64, (x + w[0]) & _M64)
        w = _weak_hash_len32_with_seeds(s, i + 32, (z + w[1]) & _M64, (y + _fetch64(s, i + 16)) & _M64)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = _K1 + ((z & 0xFF) << 1)
    i = last64
    w0 = (w[0] + ((n - 1) & 63)) & _M64
    v0 = (v[0] + w0) & _M64
    w0 = (w0 + v0) & _M64
    v, w = (v0, v[1]), (w0, w[1])
    x = (_rotate((x + y + v[0] + _fetch64(s, i + 8)) & _M64, 37) * mul) & _M64
    y = (_rotate((y + v[1] + _fetch64(s, i + 48)) & _M64, 42) * mul) & _M64
    x ^= (w[1] * 9) & _M64
    y = (y + v[0] * 9 + _fetch64(s, i + 40)) & _M64
    z = (_rotate((z + w[0]) & _M64, 33) * mul) & _M64
    v = _weak_hash_len32_with_seeds(s, i, (v[1] * mul) & _M64, (x + w[0]) & _M64)
    w = _weak_hash_len32_with_seeds(s, i + 32, (z + w[1]) & _M64, (y + _fetch64(s, i + 16)) & _M64)
    z, x = x, z
    return _hash_len16((_hash_len16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & _M64,
                       (_hash_len16(v[1], w[1], mul) + x) & _M64, mul)


def hash64(data: bytes, seed: int = 0xDECAFCAFFE) -> int:
    """TF's ``Hash64`` (tensorflow/core/platform/hash.cc, MurmurHash64A-like), unsigned."""
    s = bytes(data)
    m = 0xC6A4A7935BD1E995
    n = len(s)
    h = (seed ^ (n * m)) & _M64
    i = 0
    while n - i >= 8:
        k = (_fetch64(s, i) * m) & _M64
        k ^= k >> 47
        k = (k * m) & _M64
        h ^= k
        h = (h * m) & _M64
        i += 8
    rest = n - i
    if rest:
        for j in range(rest - 1, -1, -1):
            h ^= s[i + j] << (8 * j)
        h = (h * m) & _M64
    h ^= h >> 47
    h = (h * m) & _M64
    h ^= h >> 47
    return h


def _sip_round(v0, v1, v2, v3):
    v0 = (v0 + v1) & _M64
    v1 = ((v1 << 13) | (v1 >> 51)) & _M64
    v1 ^= v0
    v0 = ((v0 << 32) | (v0 >> 32)) & _M64
    v2 = (v2 + v3) & _M64
    v3 = ((v3 << 16) | (v3 >> 48)) & _M64
    v3 ^= v2
    v0 = (v0 + v3) & _M64
    v3 = ((v3 << 21) | (v3 >> 43)) & _M64
    v3 ^= v0
    v2 = (v2 + v1) & _M64
    v1 = ((v1 << 17) | (v1 >> 47)) & _M64
    v1 ^= v2
    v2 = ((v2 << 32) | (v2 >> 32)) & _M64
    return v0, v1, v2, v3


def siphash24(key, data: bytes) -> int:
    """SipHash-2-4 with a 128-bit key given as two uint64 (``key[0]``, ``key[1]``): TF's
    ``StrongKeyedHash`` (highwayhash::SipHash), unsigned."""
    k0, k1 = int(key[0]) & _M64, int(key[1]) & _M64
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    s = bytes(data)
    n = len(s)
    full = n - n % 8
    for i in range(0, full, 8):
        m = _fetch64(s, i)
        v3 ^= m
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
        v0 ^= m
    m = int.from_bytes(s[full:], "little") | ((n & 0xFF) << 56)
    v3 ^= m
    v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    v0 ^= m
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


def _buckets(value, num_buckets: int, hash_fn) -> np.ndarray:
    strings = _strings(value)
    out = np.empty(strings.shape, dtype=np.int64)
    for index, item in np.ndenumerate(strings):
        out[index] = hash_fn(item) % num_buckets
    return out


class _HashBucketOp(OpType):
    outputs = ["output: int64"]
    host_only = True
    not_differentiable = True
    infer = ic.unchanged_shape


@register
class StringToHashBucketFast(_HashBucketOp):
    """``Fingerprint64(s) % num_buckets`` for each string (TF's StringToHashBucketOp<Fingerprint64>)."""

    inputs = ["input: string"]
    attrs = {"num_buckets": Attr("int")}

    def host(op, value):
        return [_buckets(value, op._attrs["num_buckets"], fingerprint64)]


@register
class StringToHashBucket(_HashBucketOp):
    """The legacy ``Hash64(s) % num_buckets`` (TF's LegacyStringToHashBucketOp)."""

    inputs = ["string_tensor: string"]
    attrs = {"num_buckets": Attr("int")}

    def host(op, value):
        return [_buckets(value, op._attrs["num_buckets"], hash64)]


@register
class StringToHashBucketStrong(_HashBucketOp):
    """``SipHash(key, s) % num_buckets`` (TF's StringToKeyedHashBucketOp<StrongKeyedHash>)."""

    inputs = ["input: string"]
    attrs = {"num_buckets": Attr("int"), "key": Attr("list(int)")}

    def host(op, value):
        key = list(op._attrs["key"])
        if len(key) != 2:
            raise InvalidArgumentError(None, op, "Key must have 2 elements")
        return [_buckets(value, op._attrs["num_buckets"], lambda s: siphash24(key, s))]


def _check_num_buckets(op_type: str, num_buckets) -> int:
    num_buckets = int(num_buckets)
    if num_buckets < 1:
        raise ValueError(f"Attr 'num_buckets' of '{op_type}' Op passed {num_buckets} less than minimum 1.")
    return num_buckets


def string_to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002 - TF's name
    """tf.string_to_hash_bucket_fast / tf.strings.to_hash_bucket_fast."""
    num_buckets = _check_num_buckets("StringToHashBucketFast", num_buckets)
    return apply_op("StringToHashBucketFast", [input], {"num_buckets": num_buckets}, name).outputs[0]


def string_to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """tf.string_to_hash_bucket_strong / tf.strings.to_hash_bucket_strong."""
    num_buckets = _check_num_buckets("StringToHashBucketStrong", num_buckets)
    return apply_op("StringToHashBucketStrong", [input],
                    {"num_buckets": num_buckets, "key": [int(k) for k in key]}, name).outputs[0]


def string_to_hash_bucket(string_tensor=None, num_buckets=None, name=None, input=None):  # noqa: A002
    """tf.string_to_hash_bucket / tf.strings.to_hash_bucket (TF1: ``input`` is an alias of
    ``string_tensor``)."""
    if input is not None:
        if string_tensor is not None:
            raise ValueError("Cannot specify both 'input' and 'string_tensor'")
        string_tensor = input
    num_buckets = _check_num_buckets("StringToHashBucket", num_buckets)
    return apply_op("StringToHashBucket", [string_tensor], {"num_buckets": num_buckets}, name).outputs[0]


TF_EXPORTS = {"string_to_hash_bucket_fast": string_to_hash_bucket_fast,
              "string_to_hash_bucket_strong": string_to_hash_bucket_strong,
              "string_to_hash_bucket": string_to_hash_bucket}
STRINGS_EXPORTS = {"to_hash_bucket_fast": string_to_hash_bucket_fast,
                   "to_hash_bucket_strong": string_to_hash_bucket_strong,
                   "to_hash_bucket": string_to_hash_bucket}
