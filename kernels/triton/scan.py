"""A GPU's `ir.Scan`: one program per row and block of its lanes, over the row's blocks in order, each block
(elements by lanes) scanned along its elements with `tl.associative_scan` and offset by the fold of the
blocks before it (a carry from block to block, one per lane).

The fold is the IR's op: a sum or product, or a max or min that propagates NaN and orders -0.0 below +0.0,
as the IR's MAX and MIN do.
"""
from __future__ import annotations

from ..ir import ReduceOp, Scan
from .render import TL_TYPES, TritonSource, literal, pow2

BLOCK = 1024  # elements of a row, times lanes, per step
LANES = 32  # lanes per program at most


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
    lanes = min(LANES, pow2(scan.inner))
    block = min(BLOCK // lanes, pow2(scan.n))
    blocks = -(-scan.inner // lanes)  # of lanes, per row
    identity = literal(scan.op.identity(scan.dtype), scan.dtype)
    source = f'''import triton
import triton.language as tl


{_combine(scan)}

@triton.jit
def {name}(out, src):
    program = tl.program_id(0).to(tl.int64)
    j = (program % {blocks}) * {lanes} + tl.arange(0, {lanes})
    row = (program // {blocks}) * {scan.n * scan.inner} + j[None, :]
    carry = tl.full([1, {lanes}], {identity}, {dt})
    for start in range(0, {scan.n}, {block}):
        i = start + tl.arange(0, {block})
        inside = (i[:, None] < {scan.n}) & (j[None, :] < {scan.inner})
        at = row + i[:, None] * {scan.inner}
        x = tl.load(src + at, mask=inside, other={identity}).to({dt})
        running = _fold(carry, tl.associative_scan(x, 0, _fold))
        tl.store(out + at, running, mask=inside)
        carry = _fold(carry, tl.reduce(x, 0, _fold, keep_dims=True))
'''
    return TritonSource(name, source, max(1, scan.rows * blocks), 4)


__all__ = ["render_scan"]
