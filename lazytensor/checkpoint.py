"""Checkpoints: `lt.save(obj, path)` and `lt.load(path)` of a tensor or a state dict, in the safetensors format, so
a model moves between lazytensor and PyTorch (`safetensors.torch.load_file`/`save_file` read and write the same
files, as does the `safetensors` package for NumPy, JAX and others).

The format (huggingface.co/docs/safetensors): an 8-byte little-endian header size, a JSON header naming each
tensor's dtype, shape and byte range, padded with spaces to 8 bytes, then the tensors' bytes, little-endian and
row-major. Reading checks every range against the file, so a truncated or malformed file is a ValueError, never
a crash; it builds nothing but tensors (no pickle, so loading someone else's checkpoint runs no code of theirs).
A single tensor is saved under the name "tensor", with the header's metadata saying so, and loads as a tensor.

A general checkpoint (PyTorch's tutorial: `{"epoch": 5, "model": model.state_dict(), "optimizer":
optimizer.state_dict(), "loss": 0.3}`), nested dicts, lists and tuples of tensors and of None, bools, ints, floats
and strings, keeps its tensors as the file's tensors, named by their path ("model.fc.weight",
"optimizer.state.0.exp_avg"), and its structure and other values as JSON in the header's metadata under
"lazytensor.tree": other readers see the tensors, `load` gives back the structure.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from . import dtypes
from .device import get_device
from .graph import Node
from .tensor import Tensor

# safetensors' dtype names
CODES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "uint16": "U16", "int32": "I32", "uint32": "U32",
         "int64": "I64", "uint64": "U64", "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64"}
NAMES = {code: name for name, code in CODES.items()}
_SINGLE = "tensor"
_TREE = "lazytensor.tree"  # the metadata key of a checkpoint's structure
_MAX_HEADER = 100 << 20  # bytes: a larger header is not a checkpoint


def save(obj: Any, path: str | os.PathLike, metadata: dict[str, str] | None = None) -> None:
    """Write a tensor, a dict of named tensors (a state dict), or a general checkpoint (nested dicts, lists and
    tuples of tensors and plain values, see the module's doc) to `path` as safetensors (realizing the tensors)."""
    if isinstance(obj, Tensor):
        tensors, meta = {_SINGLE: obj}, {"lazytensor": "tensor"}
    elif isinstance(obj, dict) and all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items()):
        tensors, meta = obj, {}
    else:
        tensors = {}
        meta = {_TREE: json.dumps(_encoded(obj, "", tensors), allow_nan=True)}
    meta.update(metadata or {})
    header: dict[str, Any] = {"__metadata__": meta} if meta else {}
    blobs, offset = [], 0
    for name, t in tensors.items():
        bits = t._host_bits()  # as the buffer holds them: bfloat16 as its bits
        data = np.ascontiguousarray(bits).astype(bits.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": CODES[t.dtype.name], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = Path(f"{path}.tmp")
    with open(tmp, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        f.writelines(blobs)
    tmp.replace(path)


def _encoded(obj: Any, path: str, tensors: dict[str, Tensor]) -> Any:
    """`obj` as JSON, its tensors moved into `tensors` under names made of their path."""
    if isinstance(obj, Tensor):
        name = path or _SINGLE
        while name in tensors:
            name += "'"
        tensors[name] = obj
        return {"tensor": name}
    if isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
        obj = obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"value": obj}
    if isinstance(obj, dict):
        for k in obj:
            if not (k is None or isinstance(k, (bool, int, float, str))):
                raise TypeError(f"save: a checkpoint's dict keys must be None, bool, int, float or str; "
                                f"{path or 'the top'} has a key of type {type(k).__name__}")
        return {"dict": [[k, _encoded(v, f"{path}.{k}" if path else str(k), tensors)] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        items = [_encoded(v, f"{path}.{i}" if path else str(i), tensors) for i, v in enumerate(obj)]
        return {"list" if isinstance(obj, list) else "tuple": items}
    raise TypeError("save: expects a Tensor, a dict of str to Tensor (a state dict), or a checkpoint of nested "
                    f"dicts, lists and tuples of tensors, None, bools, ints, floats and strings; "
                    f"{path or 'the object'} is a {type(obj).__name__}")


def _decoded(tree: Any, tensors: dict[str, Tensor], path: str) -> Any:
    """The structure `_encoded` wrote, its tensors taken from `tensors`."""
    if type(tree) is dict and len(tree) == 1:
        (kind, body), = tree.items()
        if kind == "tensor" and body in tensors:
            return tensors[body]
        if kind == "value" and (body is None or isinstance(body, (bool, int, float, str))):
            return body
        if kind == "dict" and type(body) is list and all(type(kv) is list and len(kv) == 2 for kv in body):
            return {k: _decoded(v, tensors, path) for k, v in body}
        if kind in ("list", "tuple") and type(body) is list:
            items = [_decoded(v, tensors, path) for v in body]
            return items if kind == "list" else tuple(items)
    raise ValueError(f"load: {path}: a malformed checkpoint structure in its metadata")


def load(path: str | os.PathLike, device: Any = None, *, map_location: Any = None,
         weights_only: bool | None = None) -> Any:
    """What `save` (or safetensors' own writers) wrote at `path`: a tensor, a dict of named tensors, or a
    checkpoint's structure, on `device` (the default device if None; `map_location` is PyTorch's name for it).
    `weights_only` is accepted for PyTorch's calls: loading never unpickles, so every load is weights only."""
    if map_location is not None:
        if device is not None:
            raise TypeError("load: give device or map_location, not both")
        device = map_location
    data = Path(path).read_bytes()
    if len(data) < 8:
        raise ValueError(f"load: {path} is not a safetensors file (too short)")
    size = int.from_bytes(data[:8], "little")
    if size > min(_MAX_HEADER, len(data) - 8):
        raise ValueError(f"load: {path} is not a safetensors file (header of {size} bytes)")
    try:
        header = json.loads(data[8:8 + size])
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"load: {path} is not a safetensors file ({e})") from None
    if type(header) is not dict:
        raise ValueError(f"load: {path} is not a safetensors file (its header is not a JSON object)")
    meta = header.pop("__metadata__", {}) or {}
    body, target = memoryview(data)[8 + size:], get_device(device)
    out = {}
    for name, entry in header.items():
        try:
            code, shape, (begin, end) = entry["dtype"], [int(n) for n in entry["shape"]], entry["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"load: {path}: a malformed entry for {name!r}") from None
        if code not in NAMES:
            raise ValueError(f"load: {path}: {name!r} has dtype {code}, which lazytensor does not have")
        dtype = dtypes.to_dtype(NAMES[code])
        storage = dtypes.to_numpy_dtype(dtype).newbyteorder("<")
        if not (0 <= begin <= end <= len(body)) or end - begin != int(np.prod(shape)) * storage.itemsize \
                or min(shape, default=0) < 0:
            raise ValueError(f"load: {path}: the bytes of {name!r} do not match its dtype and shape (truncated?)")
        bits = np.frombuffer(body[begin:end], storage).astype(storage.newbyteorder("="), copy=True)
        out[name] = Tensor(Node.from_buffer(target.from_numpy(bits, dtype), dtype, tuple(shape), target.name))
    if meta.get("lazytensor") == "tensor" and set(out) == {_SINGLE}:
        return out[_SINGLE]
    if _TREE in meta:
        try:
            tree = json.loads(meta[_TREE])
        except (TypeError, json.JSONDecodeError):
            raise ValueError(f"load: {path}: a malformed checkpoint structure in its metadata") from None
        return _decoded(tree, out, str(path))
    return out


__all__ = ["load", "save"]
