"""A GPU's `ir.Scan`: one program per row, over the row's blocks in order, each block scanned with
`tl.associative_scan` and offset by the fold of the blocks before it (a carry from block to block).

The fold is the IR's op: a sum or product, or a max or min that propagates NaN and orders -0.0 below +0.0,
as the IR's MAX and MIN do.
"""
from __future__ import annotations

from ..ir import ReduceOp, Scan
from .render import TL_TYPES, TritonSource, literal, pow2

BLOCK = 1024  # elements of a row per step


def _combine(scan: Scan) -> str:
    """The Triton function that folds two values (`a` first)."""
    dt = scan.dtype
    if scan.op is ReduceOp.SUM:
        body = "a + b"
    elif scan.op is ReduceOp.PROD:
        body = "a * b"
    elif not dt.is_float:
        body = f"tl.{'maximum' if scan.op is ReduceOp.MAX else 'minimum'}(a, b)"
    else:
        bits = "tl.int32" if dt.itemsize == 4 else "tl.int64"
        # a wins where it is NaN, or beyond b, or equal to it with b the zero on the losing side of the sign;
        # selects, not & and |: Triton's interpreter tags comparisons with their operands' type
        beyond, sign = (">", "<") if scan.op is ReduceOp.MAX else ("<", ">=")
        tie = f"tl.where(b.to({bits}, bitcast=True) {sign} 0, a, b)"
        body = f"tl.where(a != a, a, tl.where(a {beyond} b, a, tl.where(a == b, {tie}, b)))"
    return f"@triton.jit\ndef _fold(a, b):\n    return {body}\n"


def render_scan(scan: Scan, name: str) -> TritonSource:
    dt = TL_TYPES[scan.dtype]
    block = min(BLOCK, pow2(scan.n))
    identity = literal(scan.op.identity(scan.dtype), scan.dtype)
    source = f'''import triton
import triton.language as tl


{_combine(scan)}

@triton.jit
def {name}(out, src):
    row = tl.program_id(0).to(tl.int64) * {scan.n}
    carry = tl.full([], {identity}, {dt})
    for start in range(0, {scan.n}, {block}):
        i = start + tl.arange(0, {block})
        inside = i < {scan.n}
        x = tl.load(src + row + i, mask=inside, other={identity}).to({dt})
        running = _fold(carry, tl.associative_scan(x, 0, _fold))
        tl.store(out + row + i, running, mask=inside)
        carry = _fold(carry, tl.reduce(x, 0, _fold))
'''
    return TritonSource(name, source, max(1, scan.rows), 4)


__all__ = ["render_scan"]
