"""The CPU's `ir.Sort`: a stable merge sort of each row of keys, in LLVM IR.

`void name(ptr buffers, ptr params, i64 start, i64 end)` sorts rows [start, end), so the runtime splits the
rows across threads like a kernel's outer loop. Each row's keys are copied into a work array beside their
positions (which start as 0..n-1 in the output buffer); then runs of 1, 2, 4, ... elements are merged,
back and forth between the work arrays and the program's scratch arrays: ceil(log2 n) passes, each a
stable merge (of two equal keys, the one of the left run goes first). The merge is branch-free: both runs'
next keys are loaded and a select takes one, so the loop has no unpredictable branch.

Order (`ir.Sort`'s): integers as themselves; floats by `<`, NaN after every number, -0.0 equal to 0.0;
descending is the reversed comparison, so equal keys still keep their order.
"""
from __future__ import annotations

from llvmlite import ir

from ..dtype import DType, int64
from ..ir import Sort
from .render import I64, PTR, FunctionBuilder, memory_type


def render_sort(sort: Sort, checked: bool = False) -> str:
    """LLVM IR of the sort's function (buffer slots: 0 the positions, 1 the keys, then the scratch: keys,
    keys, positions; see `scratch`), checked if `checked` (its addresses are in their rows by construction:
    it has no test to make)."""
    return _SortRenderer(sort, checked).render()


def scratch(sort: Sort) -> list[tuple[DType, int]]:
    """The scratch arrays the sort's function works in, after the sort's own buffers: two of keys, one of
    positions, each as large as the keys."""
    return [(sort.key_dtype, sort.numel), (sort.key_dtype, sort.numel), (int64, sort.numel)]


class _SortRenderer(FunctionBuilder):
    def __init__(self, sort: Sort, checked: bool):
        super().__init__(sort.name, len(sort.params) if checked else None)
        self.sort = sort
        self.key = memory_type(sort.key_dtype)

    def render(self) -> str:
        s, b = self.sort, self.b
        bufs, _, start, end = self.fn.args
        out, keys, work_a, work_b, positions_b = (b.load(b.gep(bufs, [I64(i)], source_etype=PTR), typ=PTR)
                                                  for i in range(5))

        def row(r: ir.Value) -> None:
            base = b.mul(r, I64(s.n))

            def init(i: ir.Value) -> None:
                at = b.add(base, i)
                b.store(b.load(self.at(keys, at), typ=self.key), self.at(work_a, at))
                b.store(i, b.gep(out, [at], source_etype=I64))

            self.counted_loop("init", I64(0), I64(s.n), init)
            src, dst = (work_a, out), (work_b, positions_b)
            width = 1
            while width < s.n:
                self.merge_pass(base, width, src, dst)
                src, dst, width = dst, src, width * 2
            if src[1] is positions_b:  # an odd number of passes: the positions are in the scratch
                self.counted_loop("copy", I64(0), I64(s.n), lambda i: b.store(
                    b.load(b.gep(positions_b, [b.add(base, i)], source_etype=I64), typ=I64),
                    b.gep(out, [b.add(base, i)], source_etype=I64)))

        self.counted_loop("row", start, end, row)
        b.ret_void()
        self.keep_nests_rolled()
        return str(self.module)

    def at(self, array: ir.Value, index: ir.Value) -> ir.Value:
        return self.b.gep(array, [index], source_etype=self.key)

    def merge_pass(self, base: ir.Value, width: int, src: tuple[ir.Value, ir.Value],
                   dst: tuple[ir.Value, ir.Value]) -> None:
        """Merge each pair of neighbouring runs of `width` elements from `src` (keys, positions) into `dst`."""
        b, n = self.b, self.sort.n
        pairs = -(-n // (2 * width))
        i_slot, j_slot = self.alloca(I64), self.alloca(I64)

        def pair(p: ir.Value) -> None:
            lo = b.mul(p, I64(2 * width))
            mid = b.select(b.icmp_signed("<", b.add(lo, I64(width)), I64(n)), b.add(lo, I64(width)), I64(n))
            hi = b.select(b.icmp_signed("<", b.add(lo, I64(2 * width)), I64(n)), b.add(lo, I64(2 * width)), I64(n))
            b.store(lo, i_slot)
            b.store(mid, j_slot)

            def step(k: ir.Value) -> None:
                i, j = b.load(i_slot, typ=I64), b.load(j_slot, typ=I64)
                left_ok, right_ok = b.icmp_signed("<", i, mid), b.icmp_signed("<", j, hi)
                # both reads stay in the row: an exhausted run's index is replaced by the pair's first
                li, rj = b.add(base, b.select(left_ok, i, lo)), b.add(base, b.select(right_ok, j, lo))
                left, right = b.load(self.at(src[0], li), typ=self.key), b.load(self.at(src[0], rj), typ=self.key)
                take_right = b.and_(right_ok, b.or_(b.not_(left_ok), self.before(right, left)))
                key = b.select(take_right, right, left)
                pos = b.select(take_right, b.load(b.gep(src[1], [rj], source_etype=I64), typ=I64),
                               b.load(b.gep(src[1], [li], source_etype=I64), typ=I64))
                at = b.add(base, k)
                b.store(key, self.at(dst[0], at))
                b.store(pos, b.gep(dst[1], [at], source_etype=I64))
                moved = b.zext(take_right, I64)
                b.store(b.add(j, moved), j_slot)
                b.store(b.add(i, b.sub(I64(1), moved)), i_slot)

            self.counted_loop("merge", lo, hi, step)

        self.counted_loop(f"pass{width}", I64(0), I64(pairs), pair)

    def before(self, a: ir.Value, b_: ir.Value) -> ir.Value:
        """Whether key `a` goes strictly before key `b_` (`ir.Sort`'s order)."""
        if self.sort.descending:
            a, b_ = b_, a
        b, dt = self.b, self.sort.key_dtype
        if not dt.is_float:
            return b.icmp_signed("<", a, b_) if dt.is_signed else b.icmp_unsigned("<", a, b_)
        number_before_nan = b.and_(b.fcmp_unordered("uno", b_, b_), b.fcmp_ordered("ord", a, a))
        return b.or_(b.fcmp_ordered("<", a, b_), number_before_nan)


__all__ = ["render_sort", "scratch"]
