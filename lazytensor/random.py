"""Random numbers generated inside kernels: counter-based, so they fuse and repeat bit for bit.

Each draw is Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as
1, 2, 3", SC'11) applied to a counter built from the element's position (an
IOTA node) and a per-call offset, under a key made from the seed. A word of
Philox is one graph node (PHILOX), which the kernel that reads it expands into
the rounds' integer arithmetic (`kernels.philox.philox_rounds`): recording a draw costs a few
nodes, however many rounds the kernel runs. Nothing is
generated on the host: `lt.rand(n) * 2` is one kernel, a dropout mask is
computed inside the kernel that applies it, and the same seed gives the same
bits on every backend, since the generator is integer arithmetic only.

The rounds themselves, on int64 words, are in `kernels/philox.py`, beside the
IR that lowering expands them into.

The seed and the offset are kernel parameters (SCALAR nodes), so new draws run
the same compiled kernel. `manual_seed(s)` resets the offset; every call takes
the next offset, so a program makes the same draws after the same seed.

- uniform floats use the top 24 bits of a word (float32; 11 for float16 and 8
  for bfloat16, as PyTorch) or 53 bits of two words (float64): `k * 2**-24`
  lies in [0, 1), and every such k is exact in the dtype, so none rounds to 1;
- normal floats use the Box-Muller transform of two words (in float32 for the
  16-bit floats, rounded once);
- integers in [low, high) use the multiply-high method on one word (a span up
  to 2**32) or the remainder of 63 random bits (wider spans).
"""
from __future__ import annotations

import math
import os
import threading
from typing import Any

import numpy as np

from . import dtypes, recipe
from .creation import _iota, factory
from .device import get_device
from .dtypes import DType, default_int
from .errors import DTypeError, JitError, ShapeError
from .graph import Op
from .helpers import prod
from .kernels.ir import Alu
from .kernels.philox import M32
from .movement import shape_arg
from .realize import is_recording
from .tensor import Tensor, broadcast_shapes

OFFSET_BIAS = 1 << 62
DEFAULT_SEED = 67280421310721  # PyTorch's default, as a reminder that an unseeded run is still repeatable


class Generator:
    """A stream of random draws of its own (PyTorch's `torch.Generator`): a seed and the number of draws taken.
    Functions that draw take it as `generator=` (`lt.randn(3, generator=g)`, `t.normal_(generator=g)`,
    `random_split(..., generator=g)`); without one they draw from the default stream that `manual_seed` seeds
    (one per thread). Two generators of one seed give the same draws; a generator is not shared between threads
    safely (as NumPy's), nor drawn from inside `lt.jit` (a replay would not advance it: a JitError)."""

    def __init__(self, device: Any = None) -> None:
        self.device = get_device(device).name
        self._seed, self.offset = DEFAULT_SEED, 0

    def manual_seed(self, seed: int) -> Generator:
        """Seed this generator (63 bits are used); returns it, as PyTorch's: `Generator().manual_seed(42)`."""
        seed = int(seed)
        if not -(1 << 63) <= seed < (1 << 64):
            raise ValueError(f"manual_seed: the seed must fit in 64 bits, got {seed}")
        self._seed, self.offset = seed & ((1 << 64) - 1), 0
        return self

    def seed(self) -> int:
        """Seed this generator from the operating system's entropy; returns the seed."""
        self.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        return self._seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> tuple[int, int]:
        """(seed, offset): `set_state` of it repeats the draws that follow."""
        return self._seed, self.offset

    def set_state(self, state: tuple[int, int]) -> Generator:
        self._seed, self.offset = int(state[0]), int(state[1])
        return self


class _DefaultGenerator(threading.local, Generator):
    """The default stream, one per thread: a thread's draws do not depend on what other threads draw."""

    def __init__(self) -> None:
        Generator.__init__(self, "cpu")


_gen = _DefaultGenerator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator: the draws that follow are the same in every run and on every backend.
    (63 bits of the seed are used: s and s + 2**63 give the same numbers.) Returns the generator, as PyTorch's."""
    return _gen.manual_seed(seed)


seed = manual_seed


def initial_seed() -> int:
    return _gen.initial_seed()


def get_rng_state() -> tuple[int, int]:
    """(seed, offset): pass it to `set_rng_state` to repeat the draws that follow."""
    return _gen.get_state()


def set_rng_state(state: tuple[int, int]) -> None:
    _gen.set_state(state)


def offset_parameter(offset: int) -> int:
    """The kernel parameter that carries draw number `offset` (see `_words`)."""
    return -OFFSET_BIAS - offset


def parameter_offset(value: Any) -> int | None:
    """The draw number a kernel parameter carries, or None for a parameter that carries none. `lt.jit`
    uses it to give a replayed kernel the draws that follow, as running the function again would."""
    return -OFFSET_BIAS - value if type(value) is int and value <= -OFFSET_BIAS else None


# ---- Philox-4x32-10 on int64 tensors ------------------------------------------------------------


def philox(counter: tuple[Any, Any, Any, Any], key: tuple[Any, Any]) -> tuple[Any, ...]:
    """Philox-4x32-10 on four int64 tensors of 32-bit words with a two-word key (all broadcastable to one
    shape): the four output words, each in [0, 2**32). One graph node per word: kernels expand it into
    the rounds' integer arithmetic (`philox_rounds`), so a draw costs a few nodes to record, not hundreds."""
    shape = broadcast_shapes(*(t.shape for t in (*counter, *key)), op="philox")
    srcs = tuple(t.broadcast_to(shape) for t in (*counter, *key))
    return tuple(Tensor._make(Op.PHILOX, dtypes.int64, shape, srcs, word) for word in range(4))


def _words(shape: tuple[int, ...], device: str, n_words: int, generator: Generator | None = None) -> list[Any]:
    """`n_words` independent random 32-bit words (int64 tensors of `shape`) for the next draw of `generator`
    (the default stream if None).

    The counter is (index low, index high, offset low, offset high) and the key (seed low, seed high).
    The seed and the offset reach the kernel as two int64 parameters, `seed` (>= 0) and
    `-2**62 - offset`. Graph nodes of equal scalars are one node, which changes a kernel's structure
    (and so compiles it again): the offset, which changes at every call, is kept far from the seed
    and from the scalars programs use, so every draw runs the same kernel."""
    if generator is None:
        generator = _gen
    elif is_recording():
        raise JitError("random: a draw from a Generator passed as generator= inside lt.jit: a replay would not "
                       "advance it; draw from the default stream (lt.manual_seed) inside jitted functions")
    offset = generator.offset
    generator.offset += 1
    scalars = (generator._seed & ((1 << 63) - 1), offset_parameter(offset))
    return list(recipe.apply(_philox_words, (shape, get_device(device).name, n_words), scalars, ()))


def _philox_words(flags: tuple[tuple[int, ...], str, int], scalars: tuple[int, int]) -> tuple[Any, ...]:
    """`_words`'s graph (`recipe.apply` records it once per shape): `flags` the shape, the device and the number
    of words, `scalars` the seed and the offset's parameter."""
    shape, dev, n_words = flags
    seed, offset = scalars
    n = prod(shape)
    index = _iota(n, dev).reshape(shape)
    seed_ = Tensor._scalar(seed, dtypes.int64, dev, "random", shape)
    neg = Tensor._scalar(offset, dtypes.int64, dev, "random", shape)
    off = _int_op(Alu.SUB, _int_op(Alu.MUL, neg, -1), OFFSET_BIAS)
    lo, hi = (index, index._const(0, dtypes.int64, dev).broadcast_to(shape)) if n <= M32 else \
        (_int_op(Alu.AND, index, M32), _int_op(Alu.FLOORDIV, index, 1 << 32))
    words = philox((lo, hi,
                    _int_op(Alu.AND, off, M32), _int_op(Alu.FLOORDIV, off, 1 << 32)),
                   (_int_op(Alu.AND, seed_, M32), _int_op(Alu.FLOORDIV, seed_, 1 << 32)))
    return words[:n_words]


def _int_op(op: Alu, t: Any, value: int) -> Any:
    """`t op value` for an int64 tensor with `value` baked in as a constant (a division by a power of
    two compiles to a shift), not passed as a parameter."""
    return t._alu(op, dtypes.int64, t._const(value, dtypes.int64, t.device).broadcast_to(t.shape))


def _float_dtype(dtype: Any) -> DType:
    dt = dtypes.dtype_or_default(dtype)
    if not dt.is_float:
        raise TypeError(f"random: a floating-point dtype is needed here, got {dt.name}")
    return dt


def _uniform01(words: list[Any], dtype: DType) -> Any:
    """Floats in [0, 1) from the top bits of a word, as many as the dtype's significand holds, or 53 bits
    of two words (float64)."""
    if dtype == dtypes.float64:
        a = _int_op(Alu.FLOORDIV, words[0], 1 << 5)  # 27 bits
        b = _int_op(Alu.FLOORDIV, words[1], 1 << 6)  # 26 bits
        return (a.cast(dtypes.float64) * float(1 << 26) + b.cast(dtypes.float64)) * (2.0 ** -53)
    digits = dtypes.finfo(dtype).digits
    return _int_op(Alu.FLOORDIV, words[0], 1 << (32 - digits)).cast(dtype) * (2.0 ** -digits)


def _shape(args: tuple[Any, ...], size: Any, name: str) -> tuple[int, ...]:
    if size is not None:
        return shape_arg((size,) if isinstance(size, int) else size, name)
    return shape_arg(args, name)


@factory
def rand(*shape: Any, size: Any = None, dtype: Any = None, device: Any = None,
         generator: Generator | None = None) -> Any:
    """Uniform floats in [0, 1): `rand(2, 3)` or `rand((2, 3))`."""
    shape = _shape(shape, size, "rand")
    dt = _float_dtype(dtype)
    return _uniform01(_words(shape, device, 2 if dt == dtypes.float64 else 1, generator), dt)


@factory
def uniform(low: float = 0.0, high: float = 1.0, size: Any = (), dtype: Any = None, device: Any = None,
            generator: Generator | None = None) -> Any:
    """Uniform floats in [low, high)."""
    shape = _shape((), size, "uniform")
    return rand(shape, dtype=dtype, device=device, generator=generator) * (high - low) + low


@factory
def randn(*shape: Any, size: Any = None, dtype: Any = None, device: Any = None,
          generator: Generator | None = None) -> Any:
    """Standard normal floats (Box-Muller: sqrt(-2 ln(1 - u1)) * cos(2 pi u2))."""
    shape = _shape(shape, size, "randn")
    dt = _float_dtype(dtype)
    compute = dtypes.float64 if dt == dtypes.float64 else dtypes.float32
    words = _words(shape, device, 4 if dt == dtypes.float64 else 2, generator)
    u1 = _uniform01(words[0:2] if dt == dtypes.float64 else words[0:1], compute)
    u2 = _uniform01(words[2:4] if dt == dtypes.float64 else words[1:2], compute)
    radius = ((1 - u1).log() * -2.0).sqrt()  # 1 - u1 is in (0, 1]: no log(0)
    return (radius * (u2 * (2 * math.pi)).cos()).cast(dt)


@factory
def normal(mean: float = 0.0, std: float = 1.0, size: Any = (), dtype: Any = None, device: Any = None,
           generator: Generator | None = None) -> Any:
    shape = _shape((), size, "normal")
    return randn(shape, dtype=dtype, device=device, generator=generator) * std + mean


def randint(low: int, high: int | None = None, size: Any = (), dtype: Any = None, device: Any = None,
            generator: Generator | None = None) -> Any:
    """Integers in [low, high) (`randint(high, size=...)` starts at 0, as does PyTorch's `randint(high, size)`),
    int64 by default. The range is at most 2**63 - 1 wide, inside int64's values, or uint64's for a uint64
    `dtype`."""
    if isinstance(high, (tuple, list)):  # PyTorch's randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    low, high = int(low), int(high)
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    shape = _shape((), size, "randint")
    dt = dtypes.to_dtype(dtype) if dtype is not None else default_int
    span = high - low
    if span > (1 << 63) - 1:
        raise ValueError(f"randint: the range [{low}, {high}) is wider than 2**63 - 1")
    words = _words(shape, device, 2, generator)
    if span <= 1 << 31:
        k = _int_op(Alu.FLOORDIV, words[0] * span, 1 << 32)  # multiply-high: < 2**63, no overflow
    else:
        k = (_int_op(Alu.MUL, _int_op(Alu.AND, words[1], 0x7FFFFFFF), 1 << 32) + words[0]) % span
    return (k.cast(dtypes.wide_int(dt)) + low).cast(dt)  # uint64's own: its low may pass int64's range


def bernoulli(p: Any, shape: Any = None, device: Any = None, generator: Generator | None = None) -> Any:
    """bool tensor, True with probability `p` (a float or a tensor of probabilities)."""
    if isinstance(p, Tensor):
        return rand(p.shape, dtype=p.dtype if p.dtype.is_float else None, device=p.device, generator=generator) < p
    return rand(shape if shape is not None else (), device=device, generator=generator) < float(p)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Tensor:
    """PyTorch's multinomial: `num_samples` indices of categories drawn from each row of weights `input` (1-d or
    2-d, non-negative, not necessarily summing to 1), int64. With replacement by the inverse of the running sum
    (a category of weight 0 is never drawn); without, the `num_samples` largest of log(w) plus Gumbel noise,
    which is drawing one after another without replacement. Weights that are negative, infinite or NaN, a row
    of no weight, or fewer positive weights than samples without replacement, are an error of the realize."""
    if input.ndim not in (1, 2):
        raise ShapeError(f"multinomial: weights must be 1-d or 2-d, got shape {input.shape}")
    if not input.dtype.is_float:
        raise DTypeError(f"multinomial: weights must be floats, got {input.dtype.name}")
    k = input.shape[-1]
    if num_samples <= 0 or (not replacement and num_samples > k):
        raise ShapeError(f"multinomial: cannot draw {num_samples} samples from {k} categories"
                         + ("" if replacement else " without replacement"))
    w = (input if input.ndim == 2 else input.reshape(1, k)).cast(dtypes.float64)
    rows = w.shape[0]
    bad = ~(w >= 0).all(-1) | w.isinf().any(-1) | ~(w > 0).any(-1)
    if replacement:
        running = w.cumsum(-1)
        cdf = running / running[:, -1:]  # the last exactly 1: a draw below it never passes the last category
        u = rand((rows, num_samples, 1), dtype=dtypes.float64, device=input.device, generator=generator)
        out = (cdf.reshape(rows, 1, k) <= u).cast(default_int).sum(-1)
        message = "multinomial: the weights of a row must be finite, non-negative and not all zero"
    else:
        gumbel = -(-rand((rows, k), dtype=dtypes.float64, device=input.device, generator=generator).log()).log()
        out = (w.log() + gumbel).topk(num_samples, -1).indices
        bad = bad | ((w > 0).cast(default_int).sum(-1) < num_samples)
        message = (f"multinomial: the weights of a row must be finite, non-negative, and {num_samples} of them "
                   "positive to draw without replacement")
    out = out._checked(bad, message)
    return out if input.ndim == 2 else out.reshape(num_samples)


@factory
def rand_like(x: Any, dtype: Any = None) -> Any:
    return rand(x.shape, dtype=dtype or (x.dtype if x.dtype.is_float else None), device=x.device)


@factory
def randn_like(x: Any, dtype: Any = None) -> Any:
    return randn(x.shape, dtype=dtype or (x.dtype if x.dtype.is_float else None), device=x.device)


def randint_like(x: Any, low: int, high: int | None = None, dtype: Any = None) -> Any:
    return randint(low, high, x.shape, dtype=dtype or x.dtype, device=x.device)


def randperm(n: int, dtype: Any = None, device: Any = None, generator: Generator | None = None) -> Any:
    """A random permutation of 0..n-1: the positions of n random keys in sorted order (ties broken by
    position)."""
    out = randint(0, 1 << 62, (n,), device=device, generator=generator).argsort(stable=True)
    return out.cast(dtypes.to_dtype(dtype) if dtype is not None else default_int)


class NumPyGenerator:
    """NumPy's `np.random.Generator` API (`lt.random.default_rng(seed)`, as `np.random.default_rng`) over a stream
    of lazytensor's: `random`, `integers`, `standard_normal`, `normal`, `uniform`, `exponential`, `choice`,
    `permutation`, `shuffle`. NumPy's dtypes: floats are float64 and integers int64 unless `dtype=` says
    otherwise. The numbers are lazytensor's (Philox), not NumPy's PCG64 stream: the same seed repeats lazytensor's
    draws, not NumPy's. `size=None` gives a 0-d tensor where NumPy gives a scalar."""

    def __init__(self, generator: Generator | None) -> None:
        self.generator = generator  # None: the default stream (`lt.manual_seed`'s), as np.random's functions

    @property
    def _device(self) -> str | None:
        return self.generator.device if self.generator is not None else None

    def random(self, size: Any = None, dtype: Any = dtypes.float64) -> Tensor:
        """Uniform floats in [0, 1)."""
        return rand(size=() if size is None else size, dtype=dtype, device=self._device, generator=self.generator)

    def integers(self, low: int, high: int | None = None, size: Any = None, dtype: Any = dtypes.int64,
                 endpoint: bool = False) -> Tensor:
        """Integers in [low, high), or [low, high] with `endpoint`; `integers(high)` starts at 0."""
        if high is None:
            low, high = 0, low
        if not all(isinstance(b, (int, np.integer)) for b in (low, high)):
            raise TypeError("integers: low and high must be integers here (arrays of bounds are not supported)")
        return randint(int(low), int(high) + bool(endpoint), () if size is None else size, dtype, self._device,
                       self.generator)

    def standard_normal(self, size: Any = None, dtype: Any = dtypes.float64) -> Tensor:
        return randn(size=() if size is None else size, dtype=dtype, device=self._device, generator=self.generator)

    def _drawn(self, draw: Any, size: Any, params: tuple[Any, ...], name: str) -> tuple[Tensor, tuple[Tensor, ...]]:
        """A draw of `size` (by default the parameters' broadcast shape, NumPy's rule), and the parameters as
        tensors."""
        from .creation import asarray
        tensors = tuple(asarray(p, device=self._device) if not isinstance(p, (int, float)) else p for p in params)
        shape = broadcast_shapes(*(t.shape for t in tensors if isinstance(t, Tensor)), op=name)
        if size is not None:
            shape = _shape((), size, name)
        return draw(size=shape, dtype=dtypes.float64, device=self._device, generator=self.generator), tensors

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Tensor:
        z, (loc, scale) = self._drawn(randn, size, (loc, scale), "normal")
        return z * scale + loc

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Any = None) -> Tensor:
        u, (low, high) = self._drawn(rand, size, (low, high), "uniform")
        return low + u * (high - low)

    def exponential(self, scale: Any = 1.0, size: Any = None) -> Tensor:
        u, (scale,) = self._drawn(rand, size, (scale,), "exponential")
        return -(1 - u).log() * scale  # 1 - u is in (0, 1]: no log(0)

    def permutation(self, x: Any, axis: int = 0) -> Tensor:
        """A shuffled copy of x along `axis`, or of `arange(x)` for an int x."""
        from .creation import asarray
        if isinstance(x, (int, np.integer)):
            return randperm(int(x), device=self._device, generator=self.generator)
        x = asarray(x, device=self._device)
        if x.ndim == 0:
            raise ShapeError("permutation: x must be an int or have at least one axis")
        axis = axis + x.ndim if axis < 0 else axis
        order = randperm(x.shape[axis], device=x.device, generator=self.generator)
        return x.take(order, axis)

    def shuffle(self, x: Tensor, axis: int = 0) -> None:
        """Shuffle x along `axis` in place."""
        x.copy_(self.permutation(x, axis))

    def choice(self, a: Any, size: Any = None, replace: bool = True, p: Any = None, axis: int = 0,
               shuffle: bool = True) -> Tensor:
        """Elements of `a` along `axis` (or of `arange(a)` for an int), drawn with or without replacement,
        uniformly or with probabilities `p`."""
        from .creation import arange, asarray
        pool = arange(int(a), device=self._device) if isinstance(a, (int, np.integer)) else \
            asarray(a, device=self._device)
        if pool.ndim == 0:
            raise ShapeError("choice: a must be an int or have at least one axis")
        n = pool.shape[axis]
        shape = () if size is None else _shape((), size, "choice")
        count = prod(shape)
        if p is None and replace:
            if n == 0 and count:
                raise ValueError("choice: cannot draw from an empty population")
            picks = randint(0, max(n, 1), shape, device=self._device, generator=self.generator)
        elif p is None:
            if count > n:
                raise ValueError(f"choice: cannot draw {count} of {n} without replacement")
            picks = randperm(n, device=self._device, generator=self.generator)[:count].reshape(shape)
        else:
            weights = asarray(p, dtype=dtypes.float64, device=self._device)
            if weights.shape != (n,):
                raise ShapeError(f"choice: p must have the population's length {n}, got shape {weights.shape}")
            if count == 0:
                picks = arange(0, device=self._device).reshape(shape)
            else:
                picks = multinomial(weights, count, replace, generator=self.generator).reshape(shape)
        return pool.take(picks, axis)


def default_rng(seed: Any = None, device: Any = None) -> NumPyGenerator:
    """NumPy's `np.random.default_rng`: a generator of its own seeded with `seed` (an int; None seeds it from the
    operating system's entropy; a NumPyGenerator is returned as is). See `NumPyGenerator`."""
    if isinstance(seed, NumPyGenerator):
        return seed
    generator = Generator(device)
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(int(seed))
    return NumPyGenerator(generator)


_numpy_default = NumPyGenerator(None)
# np.random's module functions, drawing from the default stream (`lt.manual_seed`, NumPy's `np.random.seed`)
random = _numpy_default.random
choice = _numpy_default.choice
permutation = _numpy_default.permutation
shuffle = _numpy_default.shuffle


__all__ = [
    "Generator",
    "NumPyGenerator",
    "bernoulli",
    "choice",
    "default_rng",
    "get_rng_state",
    "initial_seed",
    "manual_seed",
    "multinomial",
    "normal",
    "permutation",
    "philox",
    "rand",
    "rand_like",
    "randint",
    "randint_like",
    "randn",
    "randn_like",
    "random",
    "randperm",
    "seed",
    "set_rng_state",
    "shuffle",
    "uniform",
]
