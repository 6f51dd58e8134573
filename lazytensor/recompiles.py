"""The recompile log: `LT_LOG=recompiles` prints (to stderr) one line per kernel compiled and per call an `lt.jit`
function records, each with its reason and the user's line that caused it.

A kernel's reason compares it with the last kernel compiled of the same family (the same ops in the same kind of
kernel, on the same device, reading and writing tensors of the same ranks): a new shape names each tensor whose
shape changed and from what, a new dtype each whose dtype changed; a kernel of no family seen before is a new
kernel structure. A jit record's reason compares the call's signature with the function's last recorded one: a
tensor argument's new shape, dtype or device, or a static argument's new value; or says why a signature already
seen records again (the calls before it have not settled yet, or a replay found its state rebound).

`LT_LOG` is read at each compile and record, as `LT_DEBUG` is; it is a comma-separated list of topics, of which
`recompiles` is the one there is.
"""
from __future__ import annotations

import sys
import threading
from typing import Any

from .graph import Node
from .helpers import env_value

_families: dict[tuple, list[tuple[str, Any, tuple[int, ...]]]] = {}  # family -> (role, dtype, shape) per tensor
_lock = threading.Lock()


def enabled() -> bool:
    """Whether `LT_LOG` asks for the recompile log."""
    return env_value("LT_LOG", _names_recompiles)


def _names_recompiles(text: str) -> bool:
    return "recompiles" in text.split(",")


def _tensors(outputs: list[Node], inputs: list[Node]) -> list[tuple[str, Any, tuple[int, ...]]]:
    return [*((f"output {k}", n.dtype, n.shape) for k, n in enumerate(outputs)),
            *((f"input {k}", n.dtype, n.shape) for k, n in enumerate(inputs))]


def _family(name: str, device: str, tensors: list[tuple[str, Any, tuple[int, ...]]]) -> tuple:
    kind_and_ops = name.rsplit("_", 2)[0]  # a kernel's name ends with its output shape and a hash of its body
    return device, kind_and_ops, tuple((role, len(shape)) for role, _, shape in tensors)


def _changes(before: list[tuple[str, Any, tuple[int, ...]]], now: list[tuple[str, Any, tuple[int, ...]]]) -> str:
    dtypes = [f"{role} {d.name} was {d0.name}" for (role, d0, _), (_, d, _) in zip(before, now) if d != d0]
    if dtypes:
        return "new dtype: " + ", ".join(dtypes)
    shapes = [f"{role} {list(s)} was {list(s0)}" for (role, _, s0), (_, _, s) in zip(before, now) if s != s0]
    return "new shape: " + ", ".join(shapes) if shapes else "a new kernel body with the same ops and shapes (other constants or fused structure)"


def kernel_compiled(name: str, device: str, outputs: list[Node], inputs: list[Node], origin: str,
                    seconds: float, generic_over: str | None = None) -> None:
    """Note the compile of kernel `name` (for the op at `origin`) in its family, and log it with its reason where
    the log is on; `generic_over` names the loop variable whose every size the code compiled serves, if any
    (`kernels/symbolic.py`). Noted either way (compiles are rare), so a log turned on later compares with what
    came before."""
    tensors = _tensors(outputs, inputs)
    family = _family(name, device, tensors)
    with _lock:
        before = _families.get(family)
        _families[family] = tensors
    if not enabled():
        return
    reason = "new kernel structure" if before is None else _changes(before, tensors)
    if generic_over is not None:
        reason += f"; compiled generic over {generic_over}, which serves every size of it from now on"
    print(f"lt: compiled {name} on {device} in {seconds * 1e3:.1f} ms: {reason}  <- {origin}", file=sys.stderr)


def _spec_text(spec: Any, other: Any) -> str:
    """An argument's spec as `lt.jit` keys it, a tensor's (Tensor, shape, dtype, device) or a static value's
    (type, value); its device only where `other`'s differs."""
    if len(spec) == 4:
        return f"{spec[2].name}{list(spec[1])}" + (f" on {spec[3]}" if len(other) != 4 or other[3] != spec[3] else "")
    return repr(spec[1])


def jit_reason(signature: tuple, last: tuple | None, reason: str) -> str:
    """Why a jitted function records a call: for a new `signature` (the structure of its arguments, the spec of
    each tensor or static value in it, as `lt.jit` keys its recordings; arguments counted in that order, inside
    tuples, lists and dicts; and the default float dtype), the difference from the `last` one it recorded; else
    `reason`."""
    if last is None or signature == last:
        return reason
    if len(signature[1]) != len(last[1]) or signature[0] != last[0]:
        return "new signature: the arguments' structure changed"
    if signature[2] != last[2]:
        return f"new signature: the default float dtype is {signature[2].name}, was {last[2].name}"
    changed = [f"argument {k}: {_spec_text(s, s0)} was {_spec_text(s0, s)}"
               for k, (s0, s) in enumerate(zip(last[1], signature[1])) if s0 != s]
    return "new signature: " + ", ".join(changed)


def jit_recorded(name: str, reason: str, origin: str) -> None:
    """Log that the jitted function `name` records the call at `origin`, and why (`jit_reason`)."""
    print(f"lt: lt.jit records {name}: {reason}  <- {origin}", file=sys.stderr)
