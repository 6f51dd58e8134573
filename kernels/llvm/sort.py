"""The CPU's `ir.Sort`: a stable argsort of each row of keys, or a stable sort of the keys themselves (`values`),
in LLVM IR: an LSD radix sort of the rows long enough to pay for its buckets, a merge sort of shorter ones.

`void name(ptr buffers, ptr params, i64 start, i64 end)` sorts rows [start, end), so the runtime splits the
rows across threads like a kernel's outer loop; a row is one thread's work (splitting one would take a
function per digit, each pass's buckets summed across threads between them).

Both algorithms first map each key to an unsigned integer of its width whose order is `ir.Sort`'s
(`ordered`), into a work array: an unsigned integer as itself, a signed one with its sign bit flipped; a
float with -0.0 made 0.0, then its sign bit flipped if it is not negative and all its bits if it is (larger
magnitudes first), and every NaN the largest integer (above +inf's); descending, the complement. Keys the
sort holds equal map to one integer, and both algorithms keep equal integers in their order: both are stable
in either direction, and neither compares anything but integers.

- Radix sort (rows of at least `RADIX_MIN_PER_DIGIT` keys per digit): linear in the row, where merging
  takes log2(n) passes. A digit is a byte. One pass maps the keys, finds the bits in which they differ (the
  OR of all against the AND of all) and counts every digit's values (counts no order of the keys changes);
  then for each digit in which they differ, least significant first, a pass moves each (key, position) pair,
  in order, to the next place of its digit's bucket, between the work arrays. Keeping the order of equal digits is what leaves the row
  sorted by the digits so far. A digit all the keys share (the high bytes of small integers, of floats of
  one sign and size) would move nothing: it has no pass. The positions start, 0..n-1, in the output or its
  scratch, whichever the number of passes ends in the output.
- Merge sort (shorter rows, where clearing and summing 256 counts per digit costs more than it saves): runs
  of 1, 2, 4, ... elements merged back and forth between the work arrays, ceil(log2 n) passes, each a
  stable merge (of two equal keys, the one of the left run goes first). It is branch-free: both runs' next
  keys are loaded and a select takes one, so the loop has no unpredictable branch.

A sort of the values moves the mapped keys alone (no positions: half the bytes of a float32 pass, and no gather
after), then maps them back into the output. The map is one-to-one but for the keys the sort holds equal
and that differ in bits: -0.0 and 0.0, and NaNs. Those come back from the row itself, where it may hold any (the
radix sort's counts of the top digit say; a short row always may): a pass over the sorted keys counts those
before the zeros' run and before the NaNs' run, and, where there are zeros or NaNs, a last pass copies each of
the row's, in order, to the next place of its run: what a stable sort puts there.

A partial sort (`first`: each row's first k of its order, as a top-k wants) sorts nothing either: one pass keeps
the k best (mapped key, position) pairs seen so far in a heap whose root is the worst of them, a new key replacing
the root where it goes before it (a later key that ties goes after: the stable order), then the heap is sorted
out, worst last. The pass costs a load, a map and a compare per key where few replace the root (random data:
about k log(n/k) of n), and log2(k) steps where one does, whatever the data.

A selection (`take`: the values at a few positions of each sorted row) sorts nothing: for each position k, an MSD
radix select. The candidates start as the whole row; for each digit, most significant first, their digit's values
are counted, the bucket that holds rank k found (k becomes its rank inside it), and the bucket's keys kept, in
their order, packed at the front of a work array (a pass that writes no further than it has read: in place). After
the last digit the candidates map to one integer, in the row's order, and the k-th is the stable sort's: its own
bits. Each digit reads only the candidates left, so the passes after the first two are short on most data.
"""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from ..dtype import DType, int64, uint8, uint16, uint32, uint64
from ..ir import Sort
from .render import I1, I64, PTR, FunctionBuilder, memory_type

# A digit is a byte: the next places of its 256 buckets (a pass's write streams) stay in the L1 cache. 11-bit
# digits (3 passes over float32 keys rather than 4) measured slower, up to twice, on long rows.
DIGIT_BITS = 8
# Rows of at least this many keys per digit are radix sorted: the merge sort wins on shorter ones, where
# clearing and summing a digit's 256 counts costs more than the radix sort saves. Measured on one thread, keys
# that differ in every digit: the merge sort is faster at 8 keys per digit (8 of int8, 16 of int16, 64 of
# int64), the radix sort from 10 (1.2x to 1.4x at 10 per digit: 10 of int8, 40 of float32, 80 of int64; 1.4x to
# 1.7x at 12).
RADIX_MIN_PER_DIGIT = 10
UNSIGNED = {1: uint8, 2: uint16, 4: uint32, 8: uint64}


def render_sort(sort: Sort, checked: bool = False) -> str:
    """LLVM IR of the sort's function (buffer slots: 0 the positions or the sorted values, 1 the keys, then the
    scratch: mapped keys, mapped keys, and positions unless `values`; see `scratch`), checked if `checked`: the
    moves whose addresses counts make (the radix sort's, the values' zeros and NaNs) are tested; the rest are in
    their rows by construction."""
    return _SortRenderer(sort, checked).render()


def scratch(sort: Sort) -> list[tuple[DType, int]]:
    """The scratch arrays the sort's function works in, after the sort's own buffers: two of mapped keys
    (unsigned integers of the keys' width) and, unless the sort is of the values, one of positions, each as
    large as the keys."""
    mapped = UNSIGNED[sort.key_dtype.itemsize]
    if sort.first:  # a partial sort keeps its heap on the stack
        return []
    if sort.take:  # a selection's candidates
        return [(mapped, sort.numel)]
    return [(mapped, sort.numel), (mapped, sort.numel), *([] if sort.values else [(int64, sort.numel)])]


def digits(sort: Sort) -> int:
    """How many digits the radix sort's mapped keys have."""
    return sort.key_dtype.bits // DIGIT_BITS


def radix(sort: Sort) -> bool:
    """Whether the sort's rows are long enough to radix sort."""
    return sort.n >= RADIX_MIN_PER_DIGIT * digits(sort)


def work(sort: Sort) -> int:
    """About the element steps of the sort's function (what the runtime splits threads by)."""
    if sort.first:  # one pass, and the heap's sort
        return sort.numel + sort.rows * sort.first * max(1, sort.first.bit_length())
    if sort.take:  # a select's first two passes read the whole row; the rest, most often, a few candidates
        return sort.numel * 2 * len(sort.take)
    passes = digits(sort) + 2 if radix(sort) else max(1, (sort.n - 1).bit_length())
    return sort.numel * passes


class _SortRenderer(FunctionBuilder):
    def __init__(self, sort: Sort, checked: bool):
        super().__init__(sort.name, len(sort.params) if checked else None)
        self.sort = sort
        self.key = ir.IntType(sort.key_dtype.bits)  # a mapped key

    def render(self) -> str:
        s, b = self.sort, self.b
        bufs, _, start, end = self.fn.args
        buffers = [b.load(b.gep(bufs, [I64(i)], source_etype=PTR), typ=PTR) for i in range(2 + len(scratch(s)))]
        if s.first:
            self.counted_loop("row", start, end, lambda r: self.partial_row(r, *buffers))
        elif s.take:
            self.counted_loop("row", start, end, lambda r: self.select_row(r, *buffers))
        else:
            sort_row = self.radix_row if radix(s) else self.merge_row
            self.counted_loop("row", start, end, lambda r: sort_row(b.mul(r, I64(s.n)), *buffers))
        b.ret_void()
        self.keep_nests_rolled()
        return str(self.module)

    def at(self, array: ir.Value, index: ir.Value) -> ir.Value:
        """The address of element `index` of an array of mapped keys."""
        return self.b.gep(array, [index], source_etype=self.key)

    def at_i64(self, array: ir.Value, index: ir.Value) -> ir.Value:
        """The address of element `index` of an array of positions or of counts."""
        return self.b.gep(array, [index], source_etype=I64)

    def ordered(self, x: ir.Value) -> ir.Value:
        """Key `x` (as loaded) mapped to an unsigned integer whose order is the sort's (see the module's doc)."""
        b, dt = self.b, self.sort.key_dtype
        sign = ir.Constant(self.key, 1 << (dt.bits - 1))
        if dt.is_float:
            zero = ir.Constant(x.type, 0.0)
            bits = b.bitcast(b.select(b.fcmp_ordered("==", x, zero), zero, x), self.key)  # -0.0 is 0.0's key
            # a negative number's bits all flip (larger magnitudes first), another's sign bit only
            flip = b.or_(b.ashr(bits, ir.Constant(self.key, dt.bits - 1)), sign)
            mapped = b.select(b.fcmp_unordered("uno", x, x), ir.Constant(self.key, -1), b.xor(bits, flip))
        else:
            mapped = b.xor(x, sign) if dt.is_signed else x
        return b.not_(mapped) if self.sort.descending else mapped

    def unordered(self, key: ir.Value) -> ir.Value:
        """The key, as stored, that `ordered` maps to `key` (one of them: 0.0 for -0.0's, a NaN for the NaNs')."""
        b, dt = self.b, self.sort.key_dtype
        sign = ir.Constant(self.key, 1 << (dt.bits - 1))
        k = b.not_(key) if self.sort.descending else key
        if dt.is_float:
            # a sign bit set was a number's that is not negative (its sign bit flipped), else all bits flipped
            bits = b.xor(k, b.or_(b.not_(b.ashr(k, ir.Constant(self.key, dt.bits - 1))), sign))
            return b.bitcast(bits, memory_type(dt))
        return b.xor(k, sign) if dt.is_signed else k

    def special_keys(self) -> tuple[ir.Value, ir.Value]:
        """The mapped keys of 0.0 (and -0.0) and of NaN."""
        key_type = memory_type(self.sort.key_dtype)
        return self.ordered(ir.Constant(key_type, 0.0)), self.ordered(ir.Constant(key_type, float("nan")))

    def maybe_special(self, counts: ir.Value) -> ir.Value:
        """Whether a radix-sorted row of floats may hold a zero or a NaN: its `counts` of their top digit are not
        0 (that digit's buckets also hold the numbers nearest 0, and the largest); True for integers, which
        `write_values` does not ask."""
        b, top = self.b, digits(self.sort) - 1
        if not self.sort.key_dtype.is_float:
            return I1(1)
        zero, nan = (self.at_i64(counts, b.add(I64(top << DIGIT_BITS), self.digit(key, I64(top))))
                     for key in self.special_keys())
        return b.or_(b.icmp_signed("!=", b.load(zero, typ=I64), I64(0)), b.icmp_signed("!=", b.load(nan, typ=I64), I64(0)))

    def write_values(self, base: ir.Value, out: ir.Value, keys: ir.Value, sorted_keys: ir.Value,
                     maybe: ir.Value) -> None:
        """The row's sorted mapped keys, mapped back, into the output; then, for floats, where `maybe` the row
        holds a zero or a NaN, its zeros and NaNs over their runs (see the module's doc)."""
        b, dt = self.b, self.sort.key_dtype
        key_type = memory_type(dt)

        def sorted_key(i: ir.Value) -> ir.Value:
            return b.load(self.at(sorted_keys, b.add(base, i)), typ=self.key)

        self.counted_loop("unmap", I64(0), I64(self.sort.n), lambda i: b.store(
            self.unordered(sorted_key(i)), b.gep(out, [b.add(base, i)], source_etype=key_type)))
        if not dt.is_float:
            return
        with b.if_then(maybe):
            zero, nan = self.special_keys()
            # where the zeros' run starts, where the NaNs' run starts, and how many keys are either
            before_zero, before_nan, special = self.alloca(I64), self.alloca(I64), self.alloca(I64)
            for slot in (before_zero, before_nan, special):
                b.store(I64(0), slot)

            def count(i: ir.Value) -> None:
                key = sorted_key(i)
                for slot, up in ((before_zero, b.icmp_unsigned("<", key, zero)),
                                 (before_nan, b.icmp_unsigned("<", key, nan)),
                                 (special, b.or_(b.icmp_unsigned("==", key, zero), b.icmp_unsigned("==", key, nan)))):
                    b.store(b.add(b.load(slot, typ=I64), b.zext(up, I64)), slot)

            self.counted_loop("runs", I64(0), I64(self.sort.n), count)
            with b.if_then(b.icmp_signed("!=", b.load(special, typ=I64), I64(0))):
                def element(i: ir.Value) -> None:
                    x = b.load(b.gep(keys, [b.add(base, i)], source_etype=key_type), typ=key_type)
                    for cursor, here in ((before_zero, b.fcmp_ordered("==", x, ir.Constant(key_type, 0.0))),
                                         (before_nan, b.fcmp_unordered("uno", x, x))):
                        with b.if_then(here):
                            place = b.load(cursor, typ=I64)
                            to = b.add(base, place)
                            b.store(x, self.guard(b.gep(out, [to], source_etype=key_type), to, 0, self.sort.numel,
                                                  store=True))
                            b.store(b.add(place, I64(1)), cursor)

                self.counted_loop("specials", I64(0), I64(self.sort.n), element)

    def map_keys(self, base: ir.Value, keys: ir.Value, work: ir.Value,
                 also: Callable[[ir.Value, ir.Value], None]) -> None:
        """Write the row's mapped keys into `work`, calling `also(i, key)` on each."""
        b, key_type = self.b, memory_type(self.sort.key_dtype)

        def element(i: ir.Value) -> None:
            at = b.add(base, i)
            key = self.ordered(b.load(b.gep(keys, [at], source_etype=key_type), typ=key_type))
            b.store(key, self.at(work, at))
            also(i, key)

        self.counted_loop("map", I64(0), I64(self.sort.n), element)

    # ---- the radix sort ----

    def radix_row(self, base: ir.Value, out: ir.Value, keys: ir.Value, work_a: ir.Value, work_b: ir.Value,
                  positions_b: ir.Value | None = None) -> None:
        b, n = self.b, self.sort.n
        some, every = self.alloca(self.key), self.alloca(self.key)  # the bits set in some key, in every key
        b.store(ir.Constant(self.key, 0), some)
        b.store(ir.Constant(self.key, -1), every)
        count = digits(self.sort)
        buckets = 1 << DIGIT_BITS
        counts = self.alloca(I64, count * buckets)  # every digit's counts, digit after digit
        self.counted_loop("clear", I64(0), I64(count * buckets), lambda j: b.store(I64(0), self.at_i64(counts, j)))

        def fold(_: ir.Value, key: ir.Value) -> None:
            b.store(b.or_(b.load(some, typ=self.key), key), some)
            b.store(b.and_(b.load(every, typ=self.key), key), every)
            for d in range(count):  # a digit's counts are the same in any order of the keys: all counted here
                at = self.at_i64(counts, b.add(I64(d * buckets), self.digit(key, I64(d))))
                b.store(b.add(b.load(at, typ=I64), I64(1)), at)

        self.map_keys(base, keys, work_a, fold)
        varying = b.xor(b.load(some, typ=self.key), b.load(every, typ=self.key))

        def spread(d: ir.Value) -> ir.Value:
            """Whether the keys differ in digit `d` (else its pass would move nothing)."""
            return b.icmp_signed("!=", self.digit(varying, d), I64(0))

        passes, done = self.alloca(I64), self.alloca(I64)
        b.store(I64(0), passes)
        self.counted_loop("digits", I64(0), I64(count), lambda d: b.store(
            b.add(b.load(passes, typ=I64), b.zext(spread(d), I64)), passes))
        # the positions start in the output, or in its scratch where an odd number of passes brings them back
        odd = b.trunc(b.load(passes, typ=I64), I1)
        if positions_b is not None:
            self.counted_loop("iota", I64(0), I64(n), lambda i: b.store(
                i, self.at_i64(b.select(odd, positions_b, out), b.add(base, i))))
        b.store(I64(0), done)
        starts = self.alloca(I64, 1 << DIGIT_BITS)

        def digit_pass(d: ir.Value) -> None:
            with b.if_then(spread(d)):
                flip = b.trunc(b.load(done, typ=I64), I1)  # whether the keys are in work_b
                key_arrays = self.alternate(flip, (work_a, 2), (work_b, 3))
                self.bucket_starts(b.gep(counts, [b.mul(d, I64(buckets))], source_etype=I64), starts)
                positions = None if positions_b is None else \
                    self.alternate(b.xor(flip, odd), (out, 0), (positions_b, 4))
                self.move(base, d, starts, key_arrays, positions)
                b.store(b.add(b.load(done, typ=I64), I64(1)), done)

        self.counted_loop("pass", I64(0), I64(count), digit_pass)
        if self.sort.values:
            self.write_values(base, out, keys, b.select(odd, work_b, work_a), self.maybe_special(counts))

    def digit(self, key: ir.Value, d: ir.Value) -> ir.Value:
        """Digit `d` of a mapped key, as an i64."""
        b = self.b
        shifted = b.lshr(b.zext(key, I64) if key.type != I64 else key, b.mul(d, I64(DIGIT_BITS)))
        return b.and_(shifted, I64((1 << DIGIT_BITS) - 1))

    def alternate(self, flip: ir.Value, a: tuple[ir.Value, int], other: tuple[ir.Value, int]
                  ) -> tuple[ir.Value, ir.Value, ir.Value]:
        """Of two arrays that a pass moves data between, each with its buffer slot, the one the data is in
        (`a`, or `other` where `flip`), the one it goes to and that one's slot."""
        b = self.b
        return b.select(flip, other[0], a[0]), b.select(flip, a[0], other[0]), b.select(flip, I64(a[1]), I64(other[1]))

    def bucket_starts(self, counts: ir.Value, starts: ir.Value) -> None:
        """Where each bucket of a digit starts in the row, into `starts`: the sum of the `counts` of the digit's
        values before it."""
        b = self.b
        total = self.alloca(I64)
        b.store(I64(0), total)

        def bucket(j: ir.Value) -> None:
            b.store(b.load(total, typ=I64), self.at_i64(starts, j))
            b.store(b.add(b.load(total, typ=I64), b.load(self.at_i64(counts, j), typ=I64)), total)

        self.counted_loop("starts", I64(0), I64(1 << DIGIT_BITS), bucket)

    def move(self, base: ir.Value, d: ir.Value, starts: ir.Value, keys: tuple[ir.Value, ir.Value, ir.Value],
             positions: tuple[ir.Value, ir.Value, ir.Value] | None) -> None:
        """Digit `d`'s pass: each (key, position) of the row, in order (each key, where `positions` is None: a
        sort of values), to the next place of its digit's bucket (`starts`, which it advances). `keys` and
        `positions`: (from, to, to's slot) (see `alternate`). A place comes from the counts: in a checked
        function, the moves are tested."""
        b, numel = self.b, self.sort.numel

        def element(i: ir.Value) -> None:
            key = b.load(self.at(keys[0], b.add(base, i)), typ=self.key)
            at = self.at_i64(starts, self.digit(key, d))
            place = b.load(at, typ=I64)
            b.store(b.add(place, I64(1)), at)
            to = b.add(base, place)
            b.store(key, self.guard(self.at(keys[1], to), to, keys[2], numel, store=True))
            if positions is not None:
                b.store(b.load(self.at_i64(positions[0], b.add(base, i)), typ=I64),
                        self.guard(self.at_i64(positions[1], to), to, positions[2], numel, store=True))

        self.counted_loop("move", I64(0), I64(self.sort.n), element)

    # ---- the partial sort ----

    def partial_row(self, r: ir.Value, out: ir.Value, keys: ir.Value) -> None:
        """Row `r`'s first `first` positions (or keys) of its stable order, through a heap of the best so far
        (see the module's doc)."""
        b, s = self.b, self.sort
        k, key_type = s.first, memory_type(s.key_dtype)
        row = b.gep(keys, [b.mul(r, I64(s.n))], source_etype=key_type)
        heap_keys, heap_positions = self.alloca(self.key, k), self.alloca(I64, k)

        def mapped(i: ir.Value) -> ir.Value:
            return self.ordered(b.load(b.gep(row, [i], source_etype=key_type), typ=key_type))

        def put(j: ir.Value, key: ir.Value, position: ir.Value) -> None:
            b.store(key, self.at(heap_keys, j))
            b.store(position, self.at_i64(heap_positions, j))

        def fill(i: ir.Value) -> None:
            put(i, mapped(i), i)

        self.counted_loop("fill", I64(0), I64(k), fill)
        self.counted_loop("heapify", I64(0), I64(k // 2),
                          lambda t: self.sift_down(b.sub(I64(k // 2 - 1), t), I64(k), heap_keys, heap_positions))

        def offer(i: ir.Value) -> None:
            key = mapped(i)
            with b.if_then(b.icmp_unsigned("<", key, b.load(self.at(heap_keys, I64(0)), typ=self.key))):
                put(I64(0), key, i)
                self.sift_down(I64(0), I64(k), heap_keys, heap_positions)

        self.counted_loop("offer", I64(k), I64(s.n), offer)
        out_row = b.mul(r, I64(k))

        def take_worst(t: ir.Value) -> None:  # the root, the worst left, goes last among those left
            last = b.sub(I64(k - 1), t)
            position = b.load(self.at_i64(heap_positions, I64(0)), typ=I64)
            if s.values:
                value = b.load(b.gep(row, [position], source_etype=key_type), typ=key_type)
                b.store(value, b.gep(out, [b.add(out_row, last)], source_etype=key_type))
            else:
                b.store(position, self.at_i64(out, b.add(out_row, last)))
            put(I64(0), b.load(self.at(heap_keys, last), typ=self.key), b.load(self.at_i64(heap_positions, last), typ=I64))
            self.sift_down(I64(0), last, heap_keys, heap_positions)

        self.counted_loop("drain", I64(0), I64(k), take_worst)

    def sift_down(self, start: ir.Value, size: ir.Value, heap_keys: ir.Value, heap_positions: ir.Value) -> None:
        """Move the pair at `start` down the heap of the first `size` pairs until neither child is worse
        (goes later in the stable order: a larger mapped key, or an equal one at a larger position)."""
        b, k = self.b, self.sort.first
        at = self.alloca(I64)
        b.store(start, at)

        def worse(i: ir.Value, j: ir.Value) -> ir.Value:
            ki, kj = (b.load(self.at(heap_keys, x), typ=self.key) for x in (i, j))
            pi, pj = (b.load(self.at_i64(heap_positions, x), typ=I64) for x in (i, j))
            return b.or_(b.icmp_unsigned(">", ki, kj), b.and_(b.icmp_unsigned("==", ki, kj), b.icmp_signed(">", pi, pj)))

        def level(_: ir.Value) -> None:
            j = b.load(at, typ=I64)
            child = b.add(b.mul(j, I64(2)), I64(1))
            with b.if_then(b.icmp_signed("<", child, size)):
                right = b.add(child, I64(1))
                has_right = b.icmp_signed("<", right, size)
                # the right child is read only where it is in the heap
                pick_right = self.alloca(I1)
                b.store(I1(0), pick_right)
                with b.if_then(has_right):
                    b.store(worse(right, child), pick_right)
                c = b.select(b.load(pick_right, typ=I1), right, child)
                with b.if_then(worse(c, j)):
                    kc, pc = b.load(self.at(heap_keys, c), typ=self.key), b.load(self.at_i64(heap_positions, c), typ=I64)
                    b.store(b.load(self.at(heap_keys, j), typ=self.key), self.at(heap_keys, c))
                    b.store(b.load(self.at_i64(heap_positions, j), typ=I64), self.at_i64(heap_positions, c))
                    b.store(kc, self.at(heap_keys, j))
                    b.store(pc, self.at_i64(heap_positions, j))
                    b.store(c, at)

        # a path from the root to a leaf has at most bit_length(k) - 1 steps; a level past the path's end does
        # nothing (its `at` has no child in the heap, or is not worse than its children)
        self.counted_loop("level", I64(0), I64(max(1, k.bit_length())), level)

    # ---- the selection ----

    def select_row(self, r: ir.Value, out: ir.Value, keys: ir.Value, work: ir.Value) -> None:
        """Row `r`'s keys at the positions `take` of its stable sort, by radix select (see the module's doc)."""
        b, s = self.b, self.sort
        key_type = memory_type(s.key_dtype)
        base = b.mul(r, I64(s.n))
        row, candidates = b.gep(keys, [base], source_etype=key_type), b.gep(work, [base], source_etype=key_type)
        counts = self.alloca(I64, 1 << DIGIT_BITS)
        src, size, rank = self.alloca(PTR), self.alloca(I64), self.alloca(I64)
        top = digits(s) - 1
        for c, k in enumerate(s.take):
            b.store(row, src)
            b.store(I64(s.n), size)
            b.store(I64(k), rank)
            self.counted_loop("digit", I64(0), I64(top + 1), lambda i: self.select_digit(
                b.sub(I64(top), i), src, size, rank, counts, candidates))
            at = b.gep(b.load(src, typ=PTR), [b.load(rank, typ=I64)], source_etype=key_type)
            b.store(b.load(at, typ=key_type),
                    b.gep(out, [b.add(b.mul(r, I64(len(s.take))), I64(c))], source_etype=key_type))

    def select_digit(self, d: ir.Value, src: ir.Value, size: ir.Value, rank: ir.Value, counts: ir.Value,
                     candidates: ir.Value) -> None:
        """One digit of a radix select: of the `size` candidates at `src`, keep (at `candidates`) those in the
        bucket of digit `d` that holds `rank`, and make `rank` theirs."""
        b = self.b
        with b.if_then(b.icmp_signed(">", b.load(size, typ=I64), I64(1))):  # one candidate left is the one
            self.select_among(d, src, size, rank, counts, candidates)

    def select_among(self, d: ir.Value, src: ir.Value, size: ir.Value, rank: ir.Value, counts: ir.Value,
                     candidates: ir.Value) -> None:
        b, key_type = self.b, memory_type(self.sort.key_dtype)
        here, m = b.load(src, typ=PTR), b.load(size, typ=I64)

        def digit_of(j: ir.Value) -> ir.Value:
            return self.digit(self.ordered(b.load(b.gep(here, [j], source_etype=key_type), typ=key_type)), d)

        self.counted_loop("clear", I64(0), I64(1 << DIGIT_BITS), lambda j: b.store(I64(0), self.at_i64(counts, j)))

        def tally(j: ir.Value) -> None:
            at = self.at_i64(counts, digit_of(j))
            b.store(b.add(b.load(at, typ=I64), I64(1)), at)

        self.counted_loop("count", I64(0), m, tally)
        below, bucket, inside = self.alloca(I64), self.alloca(I64), self.alloca(I64)
        b.store(I64(0), below)
        b.store(I64(-1), bucket)
        b.store(I64(0), inside)
        wanted = b.load(rank, typ=I64)

        def find(j: ir.Value) -> None:  # the first bucket whose end passes the rank
            start = b.load(below, typ=I64)
            end = b.add(start, b.load(self.at_i64(counts, j), typ=I64))
            first = b.and_(b.icmp_signed("<", b.load(bucket, typ=I64), I64(0)), b.icmp_signed(">", end, wanted))
            b.store(b.select(first, j, b.load(bucket, typ=I64)), bucket)
            b.store(b.select(first, b.sub(wanted, start), b.load(inside, typ=I64)), inside)
            b.store(end, below)

        self.counted_loop("find", I64(0), I64(1 << DIGIT_BITS), find)
        chosen = b.load(bucket, typ=I64)
        kept = b.load(self.at_i64(counts, chosen), typ=I64)
        with b.if_then(b.icmp_signed("!=", kept, m)):  # some candidate is in another bucket: pack the bucket's
            packed = self.alloca(I64)
            b.store(I64(0), packed)

            def pack(j: ir.Value) -> None:
                x = b.load(b.gep(here, [j], source_etype=key_type), typ=key_type)
                to = b.load(packed, typ=I64)
                b.store(x, b.gep(candidates, [to], source_etype=key_type))
                b.store(b.add(to, b.zext(b.icmp_signed("==", self.digit(self.ordered(x), d), chosen), I64)), packed)

            self.counted_loop("pack", I64(0), m, pack)
            b.store(candidates, src)
        b.store(kept, size)
        b.store(b.load(inside, typ=I64), rank)

    # ---- the merge sort ----

    def merge_row(self, base: ir.Value, out: ir.Value, keys: ir.Value, work_a: ir.Value, work_b: ir.Value,
                  positions_b: ir.Value | None = None) -> None:
        b, n = self.b, self.sort.n
        if positions_b is None:  # a sort of values: the keys alone
            self.map_keys(base, keys, work_a, lambda i, key: None)
            src, dst = (work_a, None), (work_b, None)
        else:
            self.map_keys(base, keys, work_a, lambda i, _: b.store(i, self.at_i64(out, b.add(base, i))))
            src, dst = (work_a, out), (work_b, positions_b)
        width = 1
        while width < n:
            self.merge_pass(base, width, src, dst)
            src, dst, width = dst, src, width * 2
        if positions_b is None:
            self.write_values(base, out, keys, src[0], I1(1))
        elif src[1] is positions_b:  # an odd number of passes: the positions are in the scratch
            self.counted_loop("copy", I64(0), I64(n), lambda i: b.store(
                b.load(self.at_i64(positions_b, b.add(base, i)), typ=I64), self.at_i64(out, b.add(base, i))))

    def merge_pass(self, base: ir.Value, width: int, src: tuple[ir.Value, ir.Value | None],
                   dst: tuple[ir.Value, ir.Value | None]) -> None:
        """Merge each pair of neighbouring runs of `width` elements from `src` (keys, positions: None in a sort
        of values) into `dst`."""
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
                take_right = b.and_(right_ok, b.or_(b.not_(left_ok), b.icmp_unsigned("<", right, left)))
                key = b.select(take_right, right, left)
                at = b.add(base, k)
                b.store(key, self.at(dst[0], at))
                if src[1] is not None and dst[1] is not None:
                    pos = b.select(take_right, b.load(self.at_i64(src[1], rj), typ=I64),
                                   b.load(self.at_i64(src[1], li), typ=I64))
                    b.store(pos, self.at_i64(dst[1], at))
                moved = b.zext(take_right, I64)
                b.store(b.add(j, moved), j_slot)
                b.store(b.add(i, b.sub(I64(1), moved)), i_slot)

            self.counted_loop("merge", lo, hi, step)

        self.counted_loop(f"pass{width}", I64(0), I64(pairs), pair)


__all__ = ["radix", "render_sort", "scratch", "work"]
