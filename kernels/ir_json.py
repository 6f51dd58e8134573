"""The kernel IR as JSON, and back: what a dump folder keeps of a kernel (`kernel.json`) for a replay in
another process.

Only the IR's own types are written and rebuilt (the classes in `KINDS`, the IR's enums, the dtypes, and
tuples, lists, frozensets and scalars of them): loading a file builds nothing else, so replaying a dump
from someone else's bug report runs no code of theirs, unlike a pickle. Shared values stay shared: a
`Value` the DAG reaches twice is written once and referred to by its number, and rebuilt through the
constructors, which intern it again. A float is written exactly (`float.hex`), NaN and infinities included.
"""
from __future__ import annotations

import dataclasses
import json
from enum import Enum
from typing import Any

from . import dtype as dtypes
from .expr import Bound, Div, Expr, Mod, Stride, Var
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
)

FORMAT = 1  # the layout's version, written into every file

KINDS = {cls.__name__: cls for cls in (Kernel, Contraction, Scatter, Sort, Scan, LibraryCall, Store, BufferParam,
                                       Var, Div, Mod, Stride, Expr)}
ENUMS = {cls.__name__: cls for cls in (Alu, ReduceOp, VOp)}
DTYPES = {d.name: d for d in vars(dtypes).values() if isinstance(d, dtypes.DType)}

IRKernel = Kernel | Contraction | Scatter | Sort | Scan | LibraryCall
KERNEL_KINDS = (Kernel, Contraction, Scatter, Sort, Scan, LibraryCall)


class _Writer:
    def __init__(self) -> None:
        self.values: list[Any] = []     # the Values, each after its sources
        self.numbers: dict[int, int] = {}

    def value(self, v: Value) -> int:
        if (n := self.numbers.get(id(v))) is None:
            srcs = [self.value(s) for s in v.srcs]
            self.values.append([v.op.name, v.dtype.name, srcs, self.encode(v.arg)])
            n = self.numbers[id(v)] = len(self.values) - 1
        return n

    def encode(self, x: Any) -> Any:
        if x is None or isinstance(x, (bool, int, str)):
            return x
        if isinstance(x, float):
            return {"float": x.hex()}
        if isinstance(x, Value):
            return {"value": self.value(x)}
        if isinstance(x, Enum):
            return {"enum": type(x).__name__, "name": x.name}
        if isinstance(x, dtypes.DType):
            return {"dtype": x.name}
        if isinstance(x, Bound):
            return {"bound": [self.encode(x.expr), x.lo, x.hi]}
        if isinstance(x, (tuple, list, frozenset)):
            kind = {tuple: "tuple", list: "list", frozenset: "frozenset"}[type(x)]
            return {kind: [self.encode(y) for y in x]}
        name = type(x).__name__
        if KINDS.get(name) is not type(x):
            raise TypeError(f"cannot write a {name} as kernel IR")
        return {"kind": name, "fields": {f.name: self.encode(getattr(x, f.name))
                                         for f in dataclasses.fields(x) if f.init}}


class _Reader:
    def __init__(self, values: list[Any]) -> None:
        self.values: list[Value] = []
        for op, dtype, srcs, arg in values:
            self.values.append(Value(VOp[op], DTYPES[dtype], tuple(self.values[s] for s in srcs), self.decode(arg)))

    def decode(self, x: Any) -> Any:
        if x is None or isinstance(x, (bool, int, str)):
            return x
        if not isinstance(x, dict) or len(x) not in (1, 2):
            raise ValueError(f"not kernel IR: {x!r:.80}")
        if "float" in x:
            return float.fromhex(x["float"])
        if "value" in x:
            return self.values[x["value"]]
        if "enum" in x:
            return ENUMS[x["enum"]][x["name"]]
        if "dtype" in x:
            return DTYPES[x["dtype"]]
        if "bound" in x:
            expr, lo, hi = x["bound"]
            return Bound(self.decode(expr), lo, hi)
        for kind, make in (("tuple", tuple), ("list", list), ("frozenset", frozenset)):
            if kind in x:
                return make(self.decode(y) for y in x[kind])
        if "kind" in x and x["kind"] in KINDS:
            return KINDS[x["kind"]](**{k: self.decode(v) for k, v in x["fields"].items()})
        raise ValueError(f"not kernel IR: {x!r:.80}")


def dumps(kernel: IRKernel) -> str:
    """`kernel` as JSON text."""
    writer = _Writer()
    body = writer.encode(kernel)
    return json.dumps({"format": FORMAT, "values": writer.values, "kernel": body})


def loads(text: str) -> IRKernel:
    """The kernel `dumps` wrote. Raises ValueError for anything else (another format, another type)."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a kernel IR file of format {FORMAT}")
    kernel = _Reader(data["values"]).decode(data["kernel"])
    if type(kernel) not in KERNEL_KINDS:
        raise ValueError(f"not a kernel: {type(kernel).__name__}")
    return kernel


__all__ = ["FORMAT", "dumps", "loads"]
