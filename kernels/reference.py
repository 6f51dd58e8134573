"""A reference interpreter of the kernel IR: its semantics, written once, in NumPy.

`run(kernel, buffers, params)` evaluates a `Kernel` or a `Contraction` straight from the definitions
in `ir.py`, with no concern for speed, so that every backend can be tested against something that is
neither backend (tinygrad's `ops_python.py` and JAX's `lax_reference.py` play this part for theirs).
Where a backend disagrees with it, the backend is wrong, or the IR's definition was ambiguous and
this module chose a reading (said below where it does).

Calling convention, the runtimes' own: `buffers` are flat, C-contiguous NumPy arrays for the slots of
`kernel.buffers` that are not scratch, in slot order (the outputs, then the inputs); the interpreter
allocates the scratch slots itself (a contraction's product in slot 1 when it has an epilogue, a split
reduction's partials after the kernel's buffers), zeroed. A buffer holds its dtype's NumPy type;
bool buffers hold `np.bool_`; bfloat16 buffers hold bit patterns (`np.uint16`, or any 2-byte type
such as `ml_dtypes.bfloat16`, read as its bits). `params` are Python or NumPy scalars, one per
parameter slot. Outputs are written in place. `execute(kernel, slots, params)` and
`contract(contraction, slots, params)` take an array for every slot, scratch included: what a
runtime does between the kernels it splits one into (`split_reduction`'s partials and combine).

How a loop nest is evaluated. Every loop variable (the output loops, then each reduction's own) is
given an axis of one broadcast grid; a variable is `arange(size)` along its axis, so a value is an
array whose axes are the variables it depends on and 1 elsewhere. Then:

- an index expression is integer arithmetic on those arrays (Python floor division and modulo);
- a load gathers its buffer at its index where its bounds hold, and is 0 elsewhere, without reading
  anything there (an invalid lane may point anywhere; a valid one outside its buffer is an error); a
  GATHER likewise at its computed index where its valid value holds;
- a reduction broadcasts its source over its own axes and reduces them away;
- the stores scatter each output point's value to its index, after every value is computed: loads
  see the buffers as they were before the kernel (no kernel reads a buffer it writes). A `Scatter` runs
  its base kernel, then its updates, whose stores write (or fold) point after point in row-major order
  where their mask holds: the one kernel that reads the buffer it writes, and only through its fold.

Values (semantics every backend must honour; `ALU` has one row per op):

- Integers are two's complement and wrap: add, sub, mul, neg, abs and pow of the dtype's width.
  FLOORDIV and MOD round toward negative infinity (Python) and give 0 for a zero divisor; MIN // -1
  wraps to MIN and MIN % -1 is 0. POW with a negative exponent truncates `1 / base**-e` toward zero.
- Bools are logical: ADD is or, SUB xor, MUL and, NEG the identity (it is in one bit), MAX or, MIN and,
  FLOORDIV and (a zero divisor gives 0), MOD false, POW `a or not b`.
- Floats are IEEE in their dtype, each op rounded to nearest even (float32 is computed in float32, and
  a multiply and an add are two roundings, never a fused multiply-add). FLOORDIV
  and MOD are Python's and NumPy's (`a - fmod(a, b)` divided exactly, then corrected); a zero result of MOD
  has the divisor's sign; FLOORDIV of an infinity or by one, or by zero, is `floor(a / b)`, the array API's
  (see `_float_floordiv`), MOD by zero `fmod`'s NaN. MAX and MIN
  propagate NaN and order -0.0 below +0.0 (IEEE 754-2019 maximum and minimum: the IR says only that
  NaN propagates; this reading makes them functions of their values, and it is the LLVM backend's).
  CMPNE is true for NaN, the other comparisons false. ROUND rounds half to even; FLOOR, CEIL, ROUND,
  TRUNC keep the sign of zero and are the identity on integers and bools.
- The transcendental functions (EXP, EXP2, EXPM1, LOG, LOG2, LOG1P, SIN, COS, TAN, TANH, ERF, ATAN2) and
  float POW are NumPy's float64 functions (ERF: `math.erf`), rounded to float32 for float32: correctly
  rounded to within their accuracy (about an ulp, and a rare double rounding for float32), not bit for
  bit what a backend's own implementation gives. Compare with a bound in ulps, everything else
  exactly. (NumPy's float32 versions are its own SIMD approximations, up to 3 ulps from these.)
- LSHIFT and RSHIFT are NumPy's shifts (and PyTorch's): a count in [0, bits) shifts as C does (RSHIFT
  arithmetic on signed integers, logical on unsigned); any other count, a negative one included (NumPy
  reads it as unsigned), shifts every bit out: 0, and -1 for a negative value shifted right.
- float16 and bfloat16 are storage types: a kernel loads them, casts them to float32 and computes
  there; no ALU op or reduction takes them (the interpreter refuses them). They are held as
  float32 arrays of values that the 16-bit type represents exactly. Rounding to them goes through
  float32 (from float64, from integers), as PyTorch rounds.
- The core ops that legalization (`kernels/legalize.py`) produces: TRUNCDIV and REM are C's integer
  `/` and `%` (rounding toward zero; the remainder has the dividend's sign), REM on floats is C's `fmod`;
  SHL shifts left (wrapping), SHR right, arithmetic on signed integers and logical on unsigned. Their
  operands must be in their domain (a divisor neither 0 nor, dividing MIN, -1; a shift in [0, bits)):
  outside it the interpreter raises, as a machine would trap or give garbage. BITCAST reads a value's
  bits as another dtype of the same size (a 16-bit float's bits are an int16's).
- CAST: to bool is `!= 0` (NaN is true); from bool 0 or 1; between integers it wraps; to a float it
  rounds to nearest even (overflow to inf); float to int truncates toward zero, saturates to the int64
  range (NaN gives 0), then wraps to the target's width: -1.0 to uint8 is 255, 300.0 to int8 is 44,
  3e9 to int32 is -1294967296 (the IR says "saturates"; both backends saturate to int64, then wrap).
  uint64 holds values int64 does not: a float saturates to [-2**63, 2**64 - 1] for it, then wraps, so
  1e19 is 10**19, 2e19 is 2**64 - 1 and -1.0 is 2**64 - 1, as it is 255 for uint8.
- Reductions reduce in the value's dtype from the op's identity (an empty range gives it). A float SUM
  or PROD may be accumulated in any order (backends reassociate; here NumPy's pairwise sum): compare it
  with a tolerance. MAX and MIN follow the elementwise ops (NaN wins, -0.0 < +0.0); bool SUM is any,
  PROD all; integer SUM and PROD wrap.
- A contraction's product is `sum_k a * b` in `compute_dtype` of its operands (float32 for 16-bit ones,
  whose products are exact there), in any order, stored to `product` in that buffer's dtype; then its
  epilogue runs.
- A `LibraryCall` is its routine as `kernels/lapack.py` defines it: NumPy's LAPACK, which is also what the
  CPU backend runs, so against the reference a backend shows how it lays out the matrices and results.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from . import lapack
from .dtype import (
    DType,
    bfloat16,
    bfloat16_bits,
    bfloat16_to_float32,
    bool_,
    compute_dtype,
    float16,
    float32,
    float64,
    uint64,
    wrap,
)
from .expr import Bounds, Div, Expr, Mod, Stride, Var
from .ir import (
    Alu,
    BufferParam,
    Contraction,
    Kernel,
    LibraryCall,
    ReduceOp,
    Scan,
    Scatter,
    Sort,
    Store,
    Value,
    VOp,
    toposort,
)

Scalar = bool | int | float | np.generic
HALF_FLOATS = (float16, bfloat16)


# ---- buffers ---------------------------------------------------------------------------------------

def run(kernel: Kernel | Contraction | Scatter | Sort | Scan | LibraryCall, buffers: Sequence[np.ndarray],
        params: Sequence[Scalar]) -> None:
    """Evaluate `kernel` on the caller's `buffers` (its non-scratch slots, in order) and `params`,
    writing its outputs in place; scratch slots are allocated here, as the runtimes do."""
    given = iter(buffers)
    slots = [np.zeros(p.size, storage_type(p.dtype)) if p.scratch else next(given, None) for p in kernel.buffers]
    if any(s is None for s in slots) or next(given, None) is not None:
        caller = sum(not p.scratch for p in kernel.buffers)
        raise ValueError(f"{kernel.name} takes {caller} buffers, got {len(buffers)}")
    if isinstance(kernel, Contraction):
        contract(kernel, slots, params)
    elif isinstance(kernel, Scatter):
        execute(kernel.base, slots, params)
        execute(kernel.updates, slots, params)
    elif isinstance(kernel, Sort):
        argsort(kernel, slots)
    elif isinstance(kernel, Scan):
        scan(kernel, slots)
    elif isinstance(kernel, LibraryCall):
        library_call(kernel, slots)
    else:
        execute(kernel, slots, params)


# How far a backend's float result may be from the interpreter's, relative to the output's largest magnitude: a
# backend may contract a*b+c into one FMA, reassociate a reduction (vectorized, split across threads) and use
# math functions a few ulps from correctly rounded, so exact equality holds for integers and bools only.
MISMATCH_TOLERANCE = {float64: 1e-9, float32: 2e-4, float16: 4e-3, bfloat16: 3e-2}


def mismatch(got: np.ndarray, want: np.ndarray, dtype: DType) -> tuple[float, bool]:
    """The largest difference between a backend's output buffer `got` and the interpreter's `want` (both as a
    buffer of `dtype` holds them), and whether it is too large: any difference of integers or bools, a NaN or an
    infinity in one and not the other, or a float difference above MISMATCH_TOLERANCE times the largest finite
    magnitude of `want` (at least 1)."""
    a, b = _decode(got.reshape(-1), dtype), _decode(want.reshape(-1), dtype)
    if not dtype.is_float:
        wrong = a != b
        return (float(np.max(np.abs(a[wrong].astype(np.float64) - b[wrong]))) if wrong.any() else 0.0), bool(wrong.any())
    a, b = a.astype(np.float64), b.astype(np.float64)
    special = ~np.isfinite(a) | ~np.isfinite(b)
    infinite = special & ~np.isnan(b)  # an infinity on either side (a NaN on one side only is caught first)
    if (np.isnan(a) != np.isnan(b)).any() or (a[infinite] != b[infinite]).any():
        return float("inf"), True
    if special.all():
        return 0.0, False
    error = float(np.max(np.abs(a[~special] - b[~special])))
    return error, error > MISMATCH_TOLERANCE[dtype] * max(1.0, float(np.max(np.abs(b[~special]))))


def storage_type(dtype: DType) -> np.dtype:
    """The NumPy type of a buffer of `dtype`: bfloat16 buffers hold bit patterns."""
    return np.dtype(np.uint16) if dtype == bfloat16 else np.dtype(dtype.np_name)


def _storage(array: np.ndarray, param: BufferParam, slot: int) -> np.ndarray:
    """The flat array of a buffer slot, checked against its parameter (a view: stores write through it)."""
    if not array.flags.c_contiguous:
        raise ValueError(f"buffer b{slot} is not contiguous")
    flat = array.reshape(-1)
    if param.dtype == bfloat16 and flat.dtype.itemsize == 2:
        flat = flat.view(np.uint16)
    if flat.dtype != storage_type(param.dtype) or flat.size != param.size:
        raise ValueError(f"buffer b{slot} is {flat.dtype}[{flat.size}], the kernel takes {param.dtype}[{param.size}]")
    return flat


def _decode(data: np.ndarray, dtype: DType) -> np.ndarray:
    """A buffer's elements as values of `dtype` (16-bit floats as exact float32)."""
    if dtype == bfloat16:
        return bfloat16_to_float32(data)
    if dtype == float16:
        return data.astype(np.float32)
    return data


def _encode(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Values of `dtype` as a buffer of `dtype` holds them."""
    if dtype == bfloat16:
        return bfloat16_bits(values)
    return values.astype(storage_type(dtype))


def _register_type(dtype: DType) -> np.dtype:
    """The NumPy type the interpreter holds values of `dtype` in: float32 for the 16-bit floats."""
    return np.dtype(np.float32) if dtype in HALF_FLOATS else np.dtype(dtype.np_name)


def _scalar(value: Scalar, dtype: DType) -> np.ndarray:
    """A constant or parameter as a value of `dtype`: integers wrap, floats round to nearest even
    (to a 16-bit float through float32, as the runtimes convert parameters)."""
    if dtype == bool_:
        return np.array(bool(value))
    if dtype.is_int:
        return np.array(wrap(int(value), dtype), dtype.np_name)
    return _cast(np.array(float(value)), float64, dtype)


# ---- the loop nest --------------------------------------------------------------------------------------

class _Grid:
    """The axes of a loop nest's variables: the output loops first, then each reduction's own loops."""

    def __init__(self, loops: Sequence[Var], values: Sequence[Value]):
        self.axes: dict[Var, int] = {v: i for i, v in enumerate(loops)}
        for v in values:
            if v.op is VOp.REDUCE:
                for var in v.arg[1]:
                    self.axes.setdefault(var, len(self.axes))
        self.named = {var.name: var for var in self.axes}  # a `Stride`'s loops
        self.sizes = [1] * len(self.axes)
        for var, axis in self.axes.items():
            self.sizes[axis] = var.size

    def index(self, var: Var) -> np.ndarray:
        """`var` as an int64 array along its own axis."""
        shape = [1] * len(self.sizes)
        shape[self.axes[var]] = var.size
        return np.arange(var.size, dtype=np.int64).reshape(shape)

    def span(self, vars: Sequence[Var]) -> tuple[int, ...]:
        """The shape of an array that runs over `vars` and is 1 along every other axis."""
        shape = [1] * len(self.sizes)
        for var in vars:
            shape[self.axes[var]] = var.size
        return tuple(shape)

    def expr(self, e: Expr) -> np.ndarray:
        """An index expression's values (int64), with Python's floor division and modulo."""
        out = np.full([1] * len(self.sizes), e.const, dtype=np.int64)
        for atom, k in e.terms:
            if isinstance(atom, Var):
                term = self.index(atom)
            elif isinstance(atom, Stride):
                term = self.expr(atom.x) * math.prod(self.named[name].size for name in atom.by)
            elif isinstance(atom, Div):
                term = np.floor_divide(self.expr(atom.x), atom.c)
            else:
                assert isinstance(atom, Mod)
                term = np.mod(self.expr(atom.x), atom.c)
            out = out + k * term
        return out

    def valid(self, bounds: Bounds) -> np.ndarray:
        """Where every bound `lo <= expr < hi` holds."""
        ok = np.ones([1] * len(self.sizes), dtype=bool)
        for b in bounds:
            e = self.expr(b.expr)
            ok = ok & (b.lo <= e) & (e < b.hi)
        return ok


def execute(kernel: Kernel, slots: Sequence[np.ndarray], params: Sequence[Scalar]) -> None:
    """Run one loop nest on an array for every slot of `kernel.buffers` (scratch included)."""
    if len(slots) != len(kernel.buffers) or len(params) != len(kernel.params):
        raise ValueError(f"{kernel.name} takes {len(kernel.buffers)} slots and {len(kernel.params)} parameters")
    buffers = [_storage(a, p, i) for i, (a, p) in enumerate(zip(slots, kernel.buffers))]
    values = _evaluate(kernel.loops, [v for s in kernel.stores for v in s.roots()], kernel.buffers, buffers, params)
    grid = _Grid(kernel.loops, [])
    for store in kernel.stores:  # after every value: loads never see this kernel's stores
        if store.value.dtype != kernel.buffers[store.buf].dtype:
            raise TypeError(f"a store of {store.value.dtype} into a buffer of {kernel.buffers[store.buf].dtype}")
        value, rank = values[id(store.value)], len(kernel.loops)
        if store.at is None:
            _store(buffers[store.buf], grid.expr(store.index), _outer(value, rank), store.value.dtype,
                   grid.span(kernel.loops))
        else:
            _scatter(buffers[store.buf], store, *(_outer(values[id(v)], rank) for v in (store.at, store.mask)),
                     _outer(value, rank), grid.span(kernel.loops))


def _evaluate(loops: Sequence[Var], roots: Sequence[Value], buffer_params: Sequence[BufferParam],
             buffers: Sequence[np.ndarray], params: Sequence[Scalar]) -> dict[int, np.ndarray]:
    """Every value `roots` need (by id) over the grid of `loops`, reading `buffers` (the flat storage of
    the slots `buffer_params` describes) and `params`."""
    order = toposort(list(roots))
    grid = _Grid(loops, order)
    decoded: dict[int, np.ndarray] = {}
    values: dict[int, np.ndarray] = {}
    with np.errstate(all="ignore"):  # wrapping integers and IEEE specials are the semantics, not accidents
        for v in order:
            srcs = [values[id(s)] for s in v.srcs]
            if v.op is VOp.LOAD:
                slot = v.arg[0]
                if slot not in decoded:
                    decoded[slot] = _decode(buffers[slot], buffer_params[slot].dtype)
                out = _load(v, grid, decoded[slot], buffer_params[slot].dtype)
            elif v.op is VOp.CONST:
                out = _scalar(v.arg, v.dtype)
            elif v.op is VOp.PARAM:
                out = _scalar(params[v.arg], v.dtype)
            elif v.op is VOp.INDEX:
                out = grid.expr(v.arg)
            elif v.op is VOp.VALID:
                out = grid.valid(v.arg)
            elif v.op is VOp.CAST:
                out = _cast(srcs[0], v.srcs[0].dtype, v.dtype)
            elif v.op is VOp.BITCAST:
                out = _bitcast(srcs[0], v.srcs[0].dtype, v.dtype)
            elif v.op is VOp.GATHER:
                slot = v.arg
                if slot not in decoded:
                    decoded[slot] = _decode(buffers[slot], buffer_params[slot].dtype)
                out = _gather(v, decoded[slot], buffer_params[slot].dtype, *srcs)
            elif v.op is VOp.ALU:
                out = alu(v.arg, v.srcs[-1].dtype, srcs)
            else:
                out = _reduce(v, grid, srcs[0])
            out = np.asarray(out)
            # Every rule computes in the value's own type: a silent widening would round twice.
            assert out.dtype == _register_type(v.dtype), f"{v} computed as {out.dtype}"
            values[id(v)] = out
    return values


def _outer(value: np.ndarray, rank: int) -> np.ndarray:
    """A value without the (size 1) axes of the reductions that computed it: over the first `rank` axes."""
    return value.reshape(value.shape[:rank])


def _load(v: Value, grid: _Grid, data: np.ndarray, dtype: DType) -> np.ndarray:
    """A load: the buffer's element at the index where the bounds hold, 0 elsewhere (nothing is read there)."""
    _, index, bounds = v.arg
    if v.dtype != dtype:
        raise TypeError(f"a load of {v.dtype} from a buffer of {dtype}")
    idx, ok = np.broadcast_arrays(grid.expr(index), grid.valid(bounds))
    at = idx[ok]
    if at.size and (at.min() < 0 or at.max() >= data.size):
        raise IndexError(f"a valid lane of a load reads element {at.min() if at.min() < 0 else at.max()} "
                         f"of a buffer of {data.size}")
    out = np.zeros(idx.shape, dtype=_register_type(dtype))
    out[ok] = data[at]
    return out


def _gather(v: Value, data: np.ndarray, dtype: DType, index: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """A gather: the buffer's element at the computed index where valid, 0 elsewhere (nothing read there)."""
    if v.dtype != dtype:
        raise TypeError(f"a gather of {v.dtype} from a buffer of {dtype}")
    idx, ok = np.broadcast_arrays(index, valid)
    at = idx[ok]
    if at.size and (at.min() < 0 or at.max() >= data.size):
        raise IndexError(f"a valid lane of a gather reads element {at.min() if at.min() < 0 else at.max()} "
                         f"of a buffer of {data.size}")
    out = np.zeros(idx.shape, dtype=_register_type(dtype))
    out[ok] = data[at]
    return out


def _store(buffer: np.ndarray, index: np.ndarray, value: np.ndarray, dtype: DType, shape: tuple[int, ...]) -> None:
    """Write a store's value at every output point (`shape`) to its index."""
    idx = np.broadcast_to(index, shape).reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= buffer.size):
        raise IndexError(f"a store writes element {idx.min() if idx.min() < 0 else idx.max()} "
                         f"of a buffer of {buffer.size}")
    buffer[idx] = _encode(np.broadcast_to(value, shape).reshape(-1), dtype)


def _scatter(buffer: np.ndarray, store: Store, at: np.ndarray, mask: np.ndarray, value: np.ndarray,
             shape: tuple[int, ...]) -> None:
    """A scatter's store: each point where `mask` holds, in row-major order, writes (or folds) its value at
    `at`; a later point's write to an element lands after an earlier one's."""
    at, mask, value = (np.broadcast_to(a, shape).reshape(-1) for a in (at, mask, value))
    at, value = at[mask], value[mask]
    if at.size and (at.min() < 0 or at.max() >= buffer.size):
        raise IndexError(f"a scatter writes element {at.min() if at.min() < 0 else at.max()} of a buffer of "
                         f"{buffer.size}")
    dtype = store.value.dtype  # not a 16-bit float where it folds: no ALU op takes those
    if store.combine is None:
        buffer[at] = _encode(value, dtype)  # NumPy assigns repeated indexes in order: the last one stays
        return
    data = _decode(buffer, dtype)
    with np.errstate(all="ignore"):
        for i, v in zip(at.tolist(), value):  # in order, each fold rounded in the value's dtype
            data[i] = alu(store.combine.combine(dtype), dtype, [data[i:i + 1], np.asarray(v)[None]])[0]
    buffer[:] = _encode(data, dtype)


def argsort(sort: Sort, slots: Sequence[np.ndarray]) -> None:
    """A sort: each row's positions in NumPy's stable order (NaN after every number, -0.0 equal to 0.0);
    descending, the stable ascending order of the reversed row, reversed and mapped back, which keeps equal
    keys in their order and puts NaN first. With `values`, the keys read in that order (at the positions `take` only, where it names
    any); with `first`, each row's first `first` only."""
    keys = _storage(slots[1], sort.buffers[1], 1).reshape(sort.rows, sort.n)
    if sort.descending:
        order = sort.n - 1 - np.argsort(keys[:, ::-1], axis=-1, kind="stable")[:, ::-1]
    else:
        order = np.argsort(keys, axis=-1, kind="stable")
    out = np.take_along_axis(keys, order, axis=-1) if sort.values else order
    if sort.take:
        out = out[:, list(sort.take)]
    elif sort.first:
        out = out[:, :sort.first]
    _storage(slots[0], sort.buffers[0], 0)[:] = out.reshape(-1)


def scan(s: Scan, slots: Sequence[np.ndarray]) -> None:
    """A scan: each row's running fold in each lane, element after element, rounded in the dtype at each step."""
    dtype = s.dtype
    src = _decode(_storage(slots[1], s.buffers[1], 1), dtype).reshape(s.rows, s.n, s.inner)
    out = np.empty_like(src)
    combine = s.op.combine(dtype)
    with np.errstate(all="ignore"):
        if s.n:
            out[:, 0] = src[:, 0]
        for i in range(1, s.n):
            out[:, i] = alu(combine, dtype, [out[:, i - 1], src[:, i]])
    _storage(slots[0], s.buffers[0], 0)[:] = _encode(out.reshape(-1), dtype)


def library_call(call: LibraryCall, slots: Sequence[np.ndarray]) -> None:
    """A library call: its routine, as `kernels/lapack.py` defines it, on the whole batch."""
    operands = [_storage(a, p, i + 1).reshape(call.batch, *shape)
                for i, (a, p, shape) in enumerate(zip(slots[1:], call.buffers[1:], call.shapes))]
    lapack.run(call.routine, operands, _storage(slots[0], call.buffers[0], 0).reshape(call.batch, -1), 0, call.batch)


def contract(c: Contraction, slots: Sequence[np.ndarray], params: Sequence[Scalar]) -> None:
    """A contraction on an array for every slot: `C[b, m, n] = sum_k a[b, m, k] * bv[b, k, n]` into slot
    `c.product`, then the epilogue."""
    buffers = [_storage(a, p, i) for i, (a, p) in enumerate(zip(slots, c.buffers))]
    nb, m, n, k = c.sizes
    values = _evaluate(c.vars, [c.a, c.bv], c.buffers, buffers, params)
    dtype, out = compute_dtype(c.dtype), c.buffers[c.product].dtype
    with np.errstate(all="ignore"):
        a = np.broadcast_to(_cast(_outer(values[id(c.a)], 4), c.a.dtype, dtype), (nb, m, 1, k)).reshape(nb, m, k)
        bv = np.broadcast_to(_cast(_outer(values[id(c.bv)], 4), c.bv.dtype, dtype), (nb, 1, n, k)).reshape(nb, n, k)
        product = np.matmul(a, bv.transpose(0, 2, 1))
        buffers[c.product][:] = _encode(_cast(product, dtype, out).reshape(-1), out)
    if c.epilogue is not None:
        execute(c.epilogue, slots, params)


# ---- casts -----------------------------------------------------------------------------------------

def _round_half(x: np.ndarray, dtype: DType) -> np.ndarray:
    """float32 values rounded to a 16-bit float (to nearest even, overflow to inf), held as float32."""
    if dtype == bfloat16:
        return bfloat16_to_float32(bfloat16_bits(x))
    return x.astype(np.float16).astype(np.float32)


def _float_to_int(x: np.ndarray, dst: DType) -> np.ndarray:
    """Truncation toward zero, saturated to the int64 range, or for uint64 to [-2**63, 2**64 - 1] (NaN gives
    0), then wrapped to `dst`'s width; by Python's exact integers."""
    top = 2**64 - 1 if dst == uint64 else 2**63 - 1
    clipped = np.clip(np.trunc(x.astype(np.float64)), -2.0**63, 2.0**64)  # integers in that range, or NaN
    ints = [0 if math.isnan(v) else min(int(v), top) for v in clipped.reshape(-1).tolist()]
    return np.array([wrap(i, dst) for i in ints], dst.np_name).reshape(x.shape)


def _cast(x: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """`x` of dtype `src` converted to `dst` (see the module docstring)."""
    x = np.asarray(x)
    if src == dst:
        return x
    if dst in HALF_FLOATS:
        return _round_half(_cast(x, src, float32), dst)
    if src in HALF_FLOATS:  # already float32, exactly
        src = float32
    if dst == bool_:
        return x != 0
    if src.is_float and dst.is_int:
        return _float_to_int(x, dst)
    return x.astype(dst.np_name)


def _bitcast(x: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """`x`'s bits, as a buffer of `src` holds them, read as values of `dst`."""
    return _decode(_encode(np.asarray(x), src).view(storage_type(dst)), dst)


# ---- ALU ops ------------------------------------------------------------------------------------------

def _float_floordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Float floor division: `a - fmod(a, b)` is a multiple of b, so its quotient is exact where `floor(a / b)`
    could round up across an integer (PyTorch's and NumPy's way). Where an operand is infinite or the divisor
    zero, `floor(a / b)`, as the array API says (`inf // 2` is inf, `-1 // inf` is -0.0; NumPy gives NaN and
    -1.0 there, from Python's divmod)."""
    mod = np.fmod(a, b)
    div = (a - mod) / b
    div = np.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
    floor = np.floor(div)
    floor = np.where(div - floor > 0.5, floor + 1, floor)
    out = np.where(div == 0, np.copysign(np.zeros_like(div), a / b), floor)
    return np.where(np.isinf(a) | np.isinf(b) | (b == 0), np.floor(a / b), out)


def _float_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Python's remainder, the sign of the divisor: fmod, then b added where the signs differ, and a zero
    with b's sign (-4.0 % 2.0 is 0.0, 4.0 % -2.0 is -0.0), as Python, NumPy and the array API (PyTorch keeps
    the dividend's)."""
    r = np.fmod(a, b)
    r = np.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
    return np.where(r == 0, np.copysign(r, b), r)


def _int_floordiv(dt: DType, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Python's floor division; 0 for a zero divisor; MIN // -1 wraps to MIN (C's division would trap)."""
    if dt == bool_:  # b is 0 or 1: a // 1 is a, and a zero divisor gives 0
        return a & b
    minus_one = (b == -1) if dt.is_signed else np.zeros_like(b, dtype=bool)
    safe = np.where((b == 0) | minus_one, 1, b).astype(a.dtype)
    q = np.where(minus_one, -a, np.floor_divide(a, safe))  # -MIN wraps to MIN
    return np.where(b == 0, 0, q)


def _int_mod(dt: DType, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Python's modulo (the divisor's sign); 0 for a zero divisor."""
    if dt == bool_:  # a % 1 is 0, and a zero divisor gives 0
        return np.zeros(np.broadcast_shapes(a.shape, b.shape), dtype=bool)
    safe = np.where(b == 0, 1, b).astype(a.dtype)
    return np.where(b == 0, 0, np.mod(a, safe))


def _divisors_in_domain(dt: DType, a: np.ndarray, b: np.ndarray) -> None:
    """TRUNCDIV's and REM's divisors: neither 0 nor, dividing MIN, -1 (legalization guards both)."""
    overflow = (a == np.iinfo(dt.np_name).min) & (b == -1) if dt.is_signed else False
    if np.any(b == 0) or np.any(overflow):
        raise ValueError(f"a divisor outside the domain of an integer division of {dt}")


def _truncdiv(dt: DType, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's integer division: toward zero. `a - fmod(a, b)` is a multiple of b, so floor division is exact."""
    _divisors_in_domain(dt, a, b)
    return np.floor_divide(a - np.fmod(a, b), b)


def _rem(dt: DType, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's `%` and `fmod`: the remainder of division toward zero, the dividend's sign."""
    if dt.is_int:
        _divisors_in_domain(dt, a, b)
    return np.fmod(a, b)


def _shift(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """A shift by amounts in [0, bits): NumPy's shifts are C's, arithmetic on signed and logical on unsigned."""
    def shift(dt: DType, x: np.ndarray, by: np.ndarray) -> np.ndarray:
        if np.any(by < 0) or np.any(by >= dt.bits):
            raise ValueError(f"a shift of {dt} outside [0, {dt.bits})")
        return fn(x, by)
    return shift


def _numpy_shift(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """NumPy's shift: C's for a count in [0, bits); any other count shifts every bit out (0, or -1 for a
    negative value shifted right, whose sign fills it)."""
    def shift(dt: DType, x: np.ndarray, by: np.ndarray) -> np.ndarray:
        inside = (by >= 0) & (by < dt.bits)
        shifted = fn(x, np.where(inside, by, 0).astype(by.dtype))
        zeros = np.zeros_like(x)
        spilled = np.where(x < 0, ~zeros, zeros) if fn is np.right_shift else zeros
        return np.where(inside, shifted, spilled)
    return shift


def _int_pow(dt: DType, base: np.ndarray, exp: np.ndarray) -> np.ndarray:
    """Exponentiation by squaring over the exponent's bits, wrapping; a negative exponent truncates
    `1 / base**-exp` toward zero, leaving only bases 1 and -1."""
    if dt == bool_:
        return base | ~exp
    bits = exp.astype(f"uint{dt.bits}")
    result = np.ones(np.broadcast_shapes(base.shape, exp.shape), dtype=base.dtype)
    square = base
    for _ in range(dt.bits):
        result = np.where(bits & 1, result * square, result)
        square = square * square
        bits = bits >> 1
    if not dt.is_signed:
        return result
    one = np.ones_like(result)
    inverse = np.where(base == 1, one, np.where(base == -1, np.where(exp & 1, -one, one), 0 * one))
    return np.where(exp < 0, inverse, result)


def _maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754-2019 maximum: NaN wins, and +0.0 is above -0.0."""
    equal = np.where(np.signbit(a), b, a)  # of two equal values, the one without a sign bit
    return np.where(np.isnan(a) | np.isnan(b), np.nan, np.where(a == b, equal, np.where(a > b, a, b)))


def _minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754-2019 minimum: NaN wins, and -0.0 is below +0.0."""
    equal = np.where(np.signbit(a), a, b)
    return np.where(np.isnan(a) | np.isnan(b), np.nan, np.where(a == b, equal, np.where(a < b, a, b)))


def _widened(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """`fn` evaluated in float64 and rounded to the operands' dtype: nearly correctly rounded in float32."""
    def widened(*xs: np.ndarray) -> np.ndarray:
        return fn(*(x.astype(np.float64) for x in xs)).astype(xs[0].dtype)
    return widened


_erf = np.frompyfunc(math.erf, 1, 1)

BOOLS, INTS, FLOATS = "b", "iu", "f"
ANY = BOOLS + INTS + FLOATS


def _by_kind(boolean: Callable, integer: Callable, floating: Callable) -> Callable:
    """One op's semantics on bools, integers and floats, as `fn(dtype, *operands)`."""
    def fn(dt: DType, *xs: np.ndarray) -> np.ndarray:
        return (boolean if dt == bool_ else floating if dt.is_float else integer)(*xs)
    return fn


def _same(fn: Callable) -> Callable:
    """The same NumPy function on every kind (it wraps integers and rounds floats in their dtype)."""
    return lambda dt, *xs: fn(*xs)


def _identity_unless_float(fn: Callable) -> Callable:
    """Rounding ops: `fn` on floats, the identity on integers and bools."""
    return lambda dt, x: fn(x) if dt.is_float else x


# op -> (the kinds of operand dtype it takes, fn(operand dtype, *operands)); a comparison's and a WHERE's
# operand dtype is that of its last operand, as the backends read it.
ALU: dict[Alu, tuple[str, Callable[..., np.ndarray]]] = {
    Alu.NEG: (ANY, _by_kind(lambda x: x, np.negative, np.negative)),
    Alu.NOT: (BOOLS + INTS, _same(np.invert)),
    Alu.ABS: (ANY, _by_kind(lambda x: x, np.abs, np.abs)),
    Alu.RECIP: (FLOATS, _same(lambda x: np.divide(x.dtype.type(1), x))),
    Alu.EXP: (FLOATS, _same(_widened(np.exp))),
    Alu.EXP2: (FLOATS, _same(_widened(np.exp2))),
    Alu.EXPM1: (FLOATS, _same(_widened(np.expm1))),
    Alu.LOG: (FLOATS, _same(_widened(np.log))),
    Alu.LOG2: (FLOATS, _same(_widened(np.log2))),
    Alu.LOG1P: (FLOATS, _same(_widened(np.log1p))),
    Alu.SQRT: (FLOATS, _same(np.sqrt)),
    Alu.SIN: (FLOATS, _same(_widened(np.sin))),
    Alu.COS: (FLOATS, _same(_widened(np.cos))),
    Alu.TAN: (FLOATS, _same(_widened(np.tan))),
    Alu.TANH: (FLOATS, _same(_widened(np.tanh))),
    Alu.ERF: (FLOATS, _same(_widened(lambda x: _erf(x).astype(np.float64)))),
    Alu.FLOOR: (ANY, _identity_unless_float(np.floor)),
    Alu.CEIL: (ANY, _identity_unless_float(np.ceil)),
    Alu.ROUND: (ANY, _identity_unless_float(np.rint)),
    Alu.TRUNC: (ANY, _identity_unless_float(np.trunc)),
    Alu.ADD: (ANY, _by_kind(np.logical_or, np.add, np.add)),
    Alu.SUB: (ANY, _by_kind(np.logical_xor, np.subtract, np.subtract)),
    Alu.MUL: (ANY, _by_kind(np.logical_and, np.multiply, np.multiply)),
    Alu.DIV: (FLOATS, _same(np.divide)),
    Alu.FLOORDIV: (ANY, lambda dt, a, b: _float_floordiv(a, b) if dt.is_float else _int_floordiv(dt, a, b)),
    Alu.MOD: (ANY, lambda dt, a, b: _float_mod(a, b) if dt.is_float else _int_mod(dt, a, b)),
    Alu.TRUNCDIV: (INTS, _truncdiv),
    Alu.REM: (INTS + FLOATS, _rem),
    Alu.SHL: (INTS, _shift(np.left_shift)),
    Alu.SHR: (INTS, _shift(np.right_shift)),
    Alu.POW: (ANY, lambda dt, a, b: _widened(np.power)(a, b) if dt.is_float else _int_pow(dt, a, b)),
    Alu.ATAN2: (FLOATS, _same(_widened(np.arctan2))),
    Alu.LSHIFT: (INTS, _numpy_shift(np.left_shift)),
    Alu.RSHIFT: (INTS, _numpy_shift(np.right_shift)),
    Alu.MAX: (ANY, _by_kind(np.logical_or, np.maximum, _maximum)),
    Alu.MIN: (ANY, _by_kind(np.logical_and, np.minimum, _minimum)),
    Alu.CMPLT: (ANY, _same(np.less)),
    Alu.CMPLE: (ANY, _same(np.less_equal)),
    Alu.CMPEQ: (ANY, _same(np.equal)),
    Alu.CMPNE: (ANY, _same(np.not_equal)),  # unordered: true for NaN
    Alu.AND: (BOOLS + INTS, _same(np.bitwise_and)),
    Alu.OR: (BOOLS + INTS, _same(np.bitwise_or)),
    Alu.XOR: (BOOLS + INTS, _same(np.bitwise_xor)),
    Alu.WHERE: (ANY, lambda dt, c, a, b: np.where(c, a, b)),
}


def alu(op: Alu, dtype: DType, operands: Sequence[np.ndarray]) -> np.ndarray:
    """`op` on operands whose dtype (the last operand's) is `dtype`, by its row of `ALU`."""
    kinds, fn = ALU[op]
    if dtype in HALF_FLOATS:
        raise TypeError(f"{op.label} on {dtype}: 16-bit floats are computed in float32 (cast them first)")
    if dtype.kind not in kinds:
        raise TypeError(f"{op.label} does not take {dtype}")
    return fn(dtype, *operands)


# ---- reductions ---------------------------------------------------------------------------------------

def _extremum(op: ReduceOp, x: np.ndarray, axes: tuple[int, ...], dt: DType) -> np.ndarray:
    """A MAX or MIN reduction as the elementwise op folds it: NaN wins, and a zero extremum is +0.0 for
    MAX where the range holds a +0.0 (-0.0 for MIN where it holds a -0.0)."""
    maximum = op is ReduceOp.MAX
    fold = np.max if maximum else np.min
    out = fold(x, axis=axes, keepdims=True, initial=op.identity(dt))  # NumPy's max and min propagate NaN
    if not dt.is_float:
        return out
    winner = x.dtype.type(0.0 if maximum else -0.0)
    held = np.any((x == 0) & (np.signbit(x) == np.signbit(winner)), axis=axes, keepdims=True)
    return np.where(out == 0, np.where(held, winner, -winner), out)


def _reduce(v: Value, grid: _Grid, src: np.ndarray) -> np.ndarray:
    """A REDUCE over its own loops: the source broadcast along them, then folded from the identity."""
    op, ranges = v.arg
    dt = v.dtype
    if dt in HALF_FLOATS:
        raise TypeError(f"{op.value} over {dt}: 16-bit floats are reduced in float32 (cast them first)")
    axes = tuple(grid.axes[var] for var in ranges)
    shape = np.broadcast_shapes(src.shape, grid.span(ranges))
    x = np.broadcast_to(src, shape)
    if dt == bool_:
        return (np.any if op in (ReduceOp.SUM, ReduceOp.MAX) else np.all)(x, axis=axes, keepdims=True)
    if op is ReduceOp.SUM:
        return np.sum(x, axis=axes, keepdims=True, dtype=x.dtype)
    if op is ReduceOp.PROD:
        return np.prod(x, axis=axes, keepdims=True, dtype=x.dtype)
    return _extremum(op, x, axes, dt)
