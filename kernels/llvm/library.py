"""The CPU's library calls: a `LibraryCall` runs its routine (`kernels/lapack.py`: LAPACK through NumPy) on NumPy
arrays over the memory of its buffers, a range of its batch of matrices at a time.

The runtime runs chunks `fn(buffers, params, lo, hi)` of compiled functions on its thread pool (`runtime.py`). A
library call's function is Python's, `chunk_function`, which the runtime turns into a ctypes callback of that
signature: a chunk like any other, so a library call runs in a batch among compiled kernels (an `lt.jit`
replay), and its matrices are shared out among the threads (NumPy's LAPACK calls release the GIL while they
compute).

Memory: the arrays are made from the addresses in the buffer table of the call and live only inside it; the
caller holds the buffers until every chunk has run. An error cannot cross the callback (ctypes would print it and
go on), so a chunk keeps it, by the address of the call's parameter slots (one per call: thread-safe), with the
frames of its traceback cleared of their arrays, and the caller raises it once the chunks have run (`failure`),
as it reports a checked kernel's fault.
"""
from __future__ import annotations

import ctypes
import threading
import traceback
from collections.abc import Callable

import numpy as np

from ..ir import BufferParam, LibraryCall
from ..lapack import LibraryError, run

_failures: dict[int, BaseException] = {}  # by the address of a call's parameter slots
_lock = threading.Lock()


def chunk_function(call: LibraryCall) -> Callable[[int, int, int, int], None]:
    """What a chunk of `call` runs: `fn(buffers, params, lo, hi)`, the routine on entries [lo, hi) of the batch,
    `buffers` the address of the table of buffer addresses, `params` that of the call's parameter slots."""
    def chunk(buffers: int, params: int, lo: int, hi: int) -> None:
        try:
            _run(call, buffers, lo, hi)
        except BaseException as e:  # noqa: BLE001 (kept for the caller, which raises it: see the module docstring)
            _keep(params, e)
    return chunk


def _run(call: LibraryCall, buffers: int, lo: int, hi: int) -> None:
    table = (ctypes.c_void_p * len(call.buffers)).from_address(buffers)
    out, *operands = (_array(address, param) for address, param in zip(table, call.buffers))
    matrices = [a.reshape(call.batch, *shape) for a, shape in zip(operands, call.shapes)]
    run(call.routine, matrices, out.reshape(call.batch, call.numel // call.batch), lo, hi)


def _array(address: int | None, param: BufferParam) -> np.ndarray:
    """The buffer at `address` as a flat array (no copy)."""
    dtype = np.dtype(param.dtype.np_name)
    if param.size == 0:
        return np.empty(0, dtype)
    memory = (ctypes.c_char * (param.size * dtype.itemsize)).from_address(address)
    return np.frombuffer(memory, dtype)


def _keep(params: int, e: BaseException) -> None:
    """Keep a chunk's error for its call: the first matrix's failure, or anything else (an interrupt) first."""
    traceback.clear_frames(e.__traceback__)  # no array over the buffers may outlive the call
    with _lock:
        kept = _failures.get(params)
        if kept is None or isinstance(kept, LibraryError) and \
                (not isinstance(e, LibraryError) or e.index < kept.index):
            _failures[params] = e


def failure(params: int) -> BaseException | None:
    """The error the chunks of the call whose parameter slots are at address `params` kept, if any (given once)."""
    with _lock:
        return _failures.pop(params, None)


__all__ = ["chunk_function", "failure"]
