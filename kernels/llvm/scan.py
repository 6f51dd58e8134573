"""The CPU's `ir.Scan`: running folds of rows, in LLVM IR.

A row of lanes (`Scan.inner` > 1) is cut across its lanes into `pieces` blocks (1 where the rows alone keep
the threads busy), each block scanned alone by one function, `fold`: each element folded into the one
before it in its lane, a vector of lanes at a time, the array read and written once.

A row of single values is cut along itself into `pieces` chunks (1 where the rows alone keep the threads
busy) and scanned in three functions of the common signature, which the runtime runs one after another,
the first and last split across threads:

- `fold`: over [start, end) of rows * chunks, the running fold of each chunk into the output, and each
  chunk's total into a scratch array;
- `offsets` (one thread, over the rows): the totals turned into the fold of the chunks before each one;
- `add`: over the chunks but each row's first, that fold folded into each element of the chunk.

With one chunk the first function is the scan, and folds whole rows side by side, ROW_BLOCK at a time, then the
rows left in blocks of half as many (`side_by_side`). Each fold is the IR's op (`FunctionBuilder.alu`), element
after element: a chunked float sum adds in another order than one pass, as `ir.Scan` allows.
"""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from ..ir import ReduceOp, Scan
from .render import I64, PTR, FunctionBuilder, llvm_type, memory_type

# Whole rows a scan folds side by side (`side_by_side`): a float32 cumprod of 512x2048 on one thread (Zen 5) took
# 732us one row at a time, 233us 2, 209us 4 and 177us 8 rows at a time (cumsum: 490us, 184us, 161us, 168us). At 8:
# float32 cummax 5029us -> 774us, int32 cummax 979us -> 283us, int64 cumprod 760us -> 391us; but an int64 cumsum
# 397us -> 531us, which folds one row at a time.
ROW_BLOCK = 8


def chunk_length(scan: Scan, chunks: int) -> int:
    return -(-scan.n // chunks)


def stages(scan: Scan, pieces: int) -> tuple[str, ...]:
    """The functions that scan `scan` cut into `pieces` per row, in the order they run (see the module
    docstring)."""
    return ("fold", "offsets", "add") if pieces > 1 and scan.inner == 1 else ("fold",)


def render_scan(scan: Scan, pieces: int, stage: str, checked: bool = False) -> str:
    """LLVM IR of one stage ('fold', 'offsets' or 'add') of the scan cut into `pieces` per row (buffer slots:
    0 the output, 1 the source, 2 the chunks' totals, rows * pieces of them, for rows of single values)."""
    return _ScanRenderer(scan, pieces, stage, checked).render()


class _ScanRenderer(FunctionBuilder):
    def __init__(self, scan: Scan, pieces: int, stage: str, checked: bool):
        super().__init__(f"{scan.name}_{stage}{pieces}", len(scan.params) if checked else None)
        self.scan, self.pieces, self.stage = scan, pieces, stage
        self.t = memory_type(scan.dtype)

    def fold(self, acc: ir.Value, x: ir.Value) -> ir.Value:
        dt = self.scan.dtype
        return self.alu(self.scan.op.combine(dt), dt, [acc, x])

    def render(self) -> str:
        if self.scan.inner > 1:
            return self.render_lanes()
        b, s = self.b, self.scan
        bufs, _, start, end = self.fn.args
        out, src, totals = (b.load(b.gep(bufs, [I64(i)], source_etype=PTR), typ=PTR) for i in range(3))
        length = chunk_length(s, self.pieces)
        acc_t = llvm_type(s.dtype)
        acc = self.alloca(acc_t)

        def at(array: ir.Value, i: ir.Value) -> ir.Value:
            return b.gep(array, [i], source_etype=self.t)

        def span(piece: ir.Value) -> tuple[ir.Value, ir.Value]:
            """A chunk's first element and end, in the flat arrays."""
            row, k = b.sdiv(piece, I64(self.pieces)), b.srem(piece, I64(self.pieces))
            first = b.add(b.mul(row, I64(s.n)), b.mul(k, I64(length)))
            last = b.add(b.mul(row, I64(s.n)), b.select(b.icmp_signed("<", b.mul(b.add(k, I64(1)), I64(length)),
                                                                      I64(s.n)),
                                                        b.mul(b.add(k, I64(1)), I64(length)), I64(s.n)))
            return first, b.select(b.icmp_signed("<", first, last), last, first)

        if self.stage == "fold":
            def chunk(piece: ir.Value) -> None:
                first, last = span(piece)

                def element(i: ir.Value) -> None:
                    x = b.load(at(src, i), typ=self.t)
                    value = b.select(b.icmp_signed("==", i, first), x, self.fold(b.load(acc, typ=acc_t), x))
                    b.store(value, acc)
                    b.store(value, at(out, i))

                self.counted_loop("element", first, last, element)
                if self.pieces > 1:
                    b.store(b.load(at(out, b.sub(last, I64(1))), typ=self.t), at(totals, piece))

            # an integer sum adds one cycle per element, which one row's chain already keeps the core busy with
            if self.pieces == 1 and s.n > 1 and (s.dtype.is_float or s.op is not ReduceOp.SUM):
                rows = ROW_BLOCK
                while rows > 1:  # then a block of half as many rows, where that many are left, and so on
                    start = self.side_by_side(start, end, at, rows)
                    rows //= 2
            self.counted_loop("chunk", start, end, chunk)
        elif self.stage == "offsets":  # totals[r, k] becomes the fold of totals[r, 0..k-1] (k > 0)
            def row(r: ir.Value) -> None:
                base = b.mul(r, I64(self.pieces))
                b.store(b.load(at(totals, base), typ=self.t), acc)

                def piece(k: ir.Value) -> None:
                    x = b.load(at(totals, b.add(base, k)), typ=self.t)
                    b.store(b.load(acc, typ=acc_t), at(totals, b.add(base, k)))
                    b.store(self.fold(b.load(acc, typ=acc_t), x), acc)

                self.counted_loop("piece", I64(1), I64(self.pieces), piece)

            self.counted_loop("row", start, end, row)
        else:  # add: the chunks after each row's first
            def chunk(piece: ir.Value) -> None:
                offset = b.load(at(totals, piece), typ=self.t)
                first, last = span(piece)

                def element(i: ir.Value) -> None:
                    b.store(self.fold(offset, b.load(at(out, i), typ=self.t)), at(out, i))

                with b.if_then(b.icmp_signed("!=", b.srem(piece, I64(self.pieces)), I64(0))):
                    self.counted_loop("element", first, last, element)

            self.counted_loop("chunk", start, end, chunk)
        b.ret_void()
        return str(self.module)

    def side_by_side(self, start: ir.Value, end: ir.Value, at: Callable[[ir.Value, ir.Value], ir.Value],
                     rows: int) -> ir.Value:
        """Whole rows [start, end) from `start` on, `rows` at a time, each block's rows scanned in one loop that
        folds each row's element in turn; returns where the blocks end, for smaller blocks or the row-by-row loop
        to finish.

        A row's fold is a chain of dependent operations (a float product: one per 3-4 cycles) that one row
        alone cannot overlap: side by side, the rows' independent chains keep the core busy. Each row still
        folds its elements in order. A thread's share of a few rows (16 rows on 2 threads: 8 chunks of 2) is
        folded side by side too, in smaller blocks."""
        b, s = self.b, self.scan
        bufs = self.fn.args[0]
        out, src = (b.load(b.gep(bufs, [I64(i)], source_etype=PTR), typ=PTR) for i in range(2))
        acc_t = llvm_type(s.dtype)
        accs = [self.alloca(acc_t) for _ in range(rows)]
        rows_left = b.sub(end, start)
        blocks = b.sdiv(b.select(b.icmp_signed("<", rows_left, I64(0)), I64(0), rows_left), I64(rows))

        def block(i: ir.Value) -> None:
            first = b.add(start, b.mul(i, I64(rows)))
            bases = [b.mul(b.add(first, I64(r)), I64(s.n)) for r in range(rows)]
            for base, acc in zip(bases, accs):
                x = b.load(at(src, base), typ=self.t)
                b.store(x, acc)
                b.store(x, at(out, base))

            def element(k: ir.Value) -> None:
                for base, acc in zip(bases, accs):
                    value = self.fold(b.load(acc, typ=acc_t), b.load(at(src, b.add(base, k)), typ=self.t))
                    b.store(value, acc)
                    b.store(value, at(out, b.add(base, k)))

            self.counted_loop("element", I64(1), I64(s.n), element)

        self.counted_loop(f"rows{rows}", I64(0), blocks, block)
        return b.add(start, b.mul(blocks, I64(rows)))

    def render_lanes(self) -> str:
        """The fold of rows of lanes: over [start, end) of rows * pieces, a block of each row's lanes, its first
        element copied, each later one folded into the element before it (`inner` back, in the output)."""
        b, s = self.b, self.scan
        bufs, _, start, end = self.fn.args
        out, src = (b.load(b.gep(bufs, [I64(i)], source_etype=PTR), typ=PTR) for i in range(2))
        width = -(-s.inner // self.pieces)

        def at(array: ir.Value, i: ir.Value) -> ir.Value:
            return b.gep(array, [i], source_etype=self.t)

        def block(piece: ir.Value) -> None:
            row, k = b.sdiv(piece, I64(self.pieces)), b.srem(piece, I64(self.pieces))
            base = b.add(b.mul(row, I64(s.n * s.inner)), b.mul(k, I64(width)))
            lanes = b.sub(b.select(b.icmp_signed("<", b.mul(b.add(k, I64(1)), I64(width)), I64(s.inner)),
                                   b.mul(b.add(k, I64(1)), I64(width)), I64(s.inner)), b.mul(k, I64(width)))

            def first(j: ir.Value) -> None:
                b.store(b.load(at(src, b.add(base, j)), typ=self.t), at(out, b.add(base, j)))

            def element(i: ir.Value) -> None:
                here = b.add(base, b.mul(i, I64(s.inner)))
                before = b.sub(here, I64(s.inner))

                def lane(j: ir.Value) -> None:
                    x = b.load(at(src, b.add(here, j)), typ=self.t)
                    b.store(self.fold(b.load(at(out, b.add(before, j)), typ=self.t), x), at(out, b.add(here, j)))

                self.counted_loop("lane", I64(0), lanes, lane)

            self.counted_loop("first", I64(0), lanes, first)
            self.counted_loop("element", I64(1), I64(s.n), element)

        if s.n:
            self.counted_loop("block", start, end, block)
        b.ret_void()
        return str(self.module)


__all__ = ["chunk_length", "render_scan", "stages"]
