"""Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): the rounds a
kernel runs where it computes a word of random bits (a PHILOX graph node, see `lazytensor.random`).

The kernel IR has no shifts and no uint32, so the 32-bit words live in int64: a 32x32-bit product fits
the 64-bit two's-complement wrap, `p // 2**32 & M` is its high word and `p & M` its low word
(M = 0xFFFFFFFF).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .ir import Alu

M32 = 0xFFFFFFFF
PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)
ROUNDS = 10
PHILOX_OPS = ROUNDS * 12 + (ROUNDS - 1) * 4  # the integer ops of `philox_rounds`: what a PHILOX node costs a kernel


def philox_rounds(counter: tuple[Any, Any, Any, Any], key: tuple[Any, Any], alu: Callable[[Alu, Any, Any], Any],
                  const: Callable[[int], Any]) -> tuple[Any, Any, Any, Any]:
    """Philox-4x32-10's rounds on 32-bit words held in int64 values of any kind, with their arithmetic
    (`alu(op, a, b)`, `const(v)`): kernel IR where a kernel computes a PHILOX node."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    mask, m0, m1, high = const(M32), const(PHILOX_M[0]), const(PHILOX_M[1]), const(1 << 32)
    for r in range(ROUNDS):
        if r:
            k0 = alu(Alu.AND, alu(Alu.ADD, k0, const(PHILOX_W[0])), mask)
            k1 = alu(Alu.AND, alu(Alu.ADD, k1, const(PHILOX_W[1])), mask)
        p0, p1 = alu(Alu.MUL, m0, c0), alu(Alu.MUL, m1, c2)
        hi0 = alu(Alu.AND, alu(Alu.FLOORDIV, p0, high), mask)
        hi1 = alu(Alu.AND, alu(Alu.FLOORDIV, p1, high), mask)
        lo0, lo1 = alu(Alu.AND, p0, mask), alu(Alu.AND, p1, mask)
        c0, c1, c2, c3 = (alu(Alu.XOR, alu(Alu.XOR, hi1, c1), k0), lo1,
                          alu(Alu.XOR, alu(Alu.XOR, hi0, c3), k1), lo0)
    return c0, c1, c2, c3


def philox_reference(counter: tuple[int, int, int, int], key: tuple[int, int]) -> tuple[int, int, int, int]:
    """The same function on Python ints, for tests and for reading."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(ROUNDS):
        if r:
            k0, k1 = (k0 + PHILOX_W[0]) & M32, (k1 + PHILOX_W[1]) & M32
        p0, p1 = PHILOX_M[0] * c0, PHILOX_M[1] * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & M32, p1 & M32, ((p0 >> 32) ^ c3 ^ k1) & M32, p0 & M32
    return c0, c1, c2, c3
