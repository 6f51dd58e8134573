"""Checked kernels (`LT_CHECK_BOUNDS=1`): every load and store tests its index against its buffer's size.

A backend compiles a kernel checked when `CHECK` is true at compile time: `LT_CHECK_BOUNDS` set to anything
but 0 when lazytensor is imported (tests set `CHECK` itself; reading the environment on every compile would
cost a realize microseconds). It caches the checked and the unchecked program of a kernel apart, so turning
the mode on or off recompiles nothing twice, and unchecked kernels are exactly what they are without it.

The protocol between a checked kernel and its runtime: the kernel receives FAULT_SLOTS 8-byte slots after
its scalar parameters, zero before a launch (the fault record). An access to elements that are not all
inside their buffer is not made, to that buffer or anywhere else the kernel does not own (a backend
redirects it to memory of its own), and the first such access of the launch is recorded: `fault_code` of
the buffer and the kind of access in the first slot, the index in the second. After the launch the runtime
calls `check`, which raises `OutOfBounds`; the frontend restates it with the user's line. A backend need not
test at run time an access it proves inside its buffer for every iteration the kernel can run.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

from .dtype import SHORT_NAMES
from .ir import BufferParam

FAULT_SLOTS = 2
CHECK = os.environ.get("LT_CHECK_BOUNDS", "").strip() not in ("", "0")


def fault_code(buffer: int, store: bool) -> int:
    """What a checked kernel records for a faulting access to buffer slot `buffer` (never 0)."""
    return 1 + 2 * buffer + store


class OutOfBounds(IndexError):
    """A checked kernel indexed a buffer outside its size (the access was not made). `position` is the
    kernel's place among the kernels of a launch that runs several as one (a batch), else None."""

    def __init__(self, kernel: str, buffers: Sequence[BufferParam], code: int, index: int,
                 position: int | None = None):
        self.kernel, self.buffer, self.store, self.index = kernel, (code - 1) // 2, bool((code - 1) % 2), index
        self.position = position
        param = buffers[self.buffer]
        kind = f"{SHORT_NAMES[param.dtype]}[{param.size}]{' scratch' if param.scratch else ''}"
        super().__init__(f"kernel {kernel}: {'a store to' if self.store else 'a load from'} b{self.buffer} "
                         f"({kind}) at index {index} reaches outside its {param.size} elements")


def check(kernel: str, buffers: Sequence[BufferParam], record: Sequence[int], position: int | None = None) -> None:
    """Raise `OutOfBounds` if the fault record (the FAULT_SLOTS after a launch's parameters) holds a fault
    of kernel `kernel`, whose buffer slots are `buffers`, at `position` in its batch if any."""
    if record[0]:
        raise OutOfBounds(kernel, buffers, record[0], record[1], position)
