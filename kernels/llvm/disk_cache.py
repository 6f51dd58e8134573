"""The persistent compile cache: the object code of every LLVM module compiled, on disk, so that a new process
running the same program compiles nothing (it renders its kernels, then loads their code).

An entry is keyed by everything the code depends on: the module's LLVM IR as rendered, whether it was vectorized
wide, the host (CPU name and features), llvmlite's version and the pass pipeline (`compiler.py`'s text). It holds
the optimized IR (for `LT_DEBUG`, dumps) and the object code, behind a header and a SHA-256 of both: an entry
that is truncated, corrupt or not ours fails the check and is removed, then compiled again; it is never loaded.
Writes go to a temporary file renamed into place, so a reader never sees half an entry and two processes filling
the cache at once are safe (the last rename wins, with the same content). The cache holds at most
`LT_CACHE_MAX_MB` megabytes (1024 by default): past that, the entries used longest ago go.

Where: `$LT_CACHE_DIR/llvm` (by default `~/.cache/lazytensor/llvm`); `LT_CACHE_DIR=` (empty) or
`set_enabled(False)` turns the cache off.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import zlib
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

MAGIC = b"LTCACHE1"
_DIGEST = 32
_switch: list[bool] = []  # `set_enabled`'s choice, if made
_lock = threading.Lock()
_writes = 0  # since the last size check
CHECK_SIZE_EVERY = 64  # writes between two checks of the cache's size


def set_enabled(on: bool) -> None:
    """Turn the persistent cache on or off for this process (overriding `LT_CACHE_DIR`'s default)."""
    _switch[:] = [on]


def directory() -> Path | None:
    """Where entries live, or None where the cache is off."""
    value = os.environ.get("LT_CACHE_DIR")
    if (_switch and not _switch[0]) or value == "":
        return None
    return Path(value or Path.home() / ".cache" / "lazytensor") / "llvm"


_host: list[str] = []


def _host_key() -> str:
    """What the code depends on besides its source: the host CPU, llvmlite, and the pass pipeline."""
    if not _host:
        pipeline = (Path(__file__).parent / "compiler.py").read_bytes()
        _host.append("|".join([llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten(),
                               llvmlite.__version__, hashlib.sha256(pipeline).hexdigest()]))
    return _host[0]


def key(source: str, wide: bool) -> str:
    """The entry's name for a module rendered as `source`, compiled wide or not, on this host."""
    return hashlib.sha256(f"{_host_key()}|{int(wide)}|{source}".encode()).hexdigest()


def _path(root: Path, name: str) -> Path:
    return root / name[:2] / name


def load(source: str, wide: bool) -> tuple[str, bytes] | None:
    """The optimized IR and object code kept for this module, or None (not kept, cache off, or an entry that
    fails its check, which is removed)."""
    root = directory()
    if root is None:
        return None
    path = _path(root, key(source, wide))
    try:
        data = path.read_bytes()
    except OSError:
        return None
    body = data[len(MAGIC) + _DIGEST:]
    if not data.startswith(MAGIC) or hashlib.sha256(body).digest() != data[len(MAGIC):len(MAGIC) + _DIGEST] \
            or len(body) < 8:
        path.unlink(missing_ok=True)
        return None
    size = int.from_bytes(body[:8], "little")
    try:
        optimized = zlib.decompress(body[8:8 + size]).decode()
    except (zlib.error, UnicodeDecodeError):
        path.unlink(missing_ok=True)
        return None
    os.utime(path)  # used now: the last to be evicted
    return optimized, body[8 + size:]


def store(source: str, wide: bool, optimized: str, obj: bytes) -> None:
    """Keep a compiled module (best effort: a cache that cannot be written is no error)."""
    global _writes
    root = directory()
    if root is None:
        return
    path = _path(root, key(source, wide))
    ir = zlib.compress(optimized.encode(), 1)
    body = len(ir).to_bytes(8, "little") + ir + obj
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + hashlib.sha256(body).digest() + body)
        os.replace(tmp, path)
    except OSError:
        return
    with _lock:
        _writes += 1
        due = _writes >= CHECK_SIZE_EVERY
        if due:
            _writes = 0
    if due:
        evict(root)


def evict(root: Path, limit: int | None = None) -> None:
    """Remove the entries used longest ago until the cache holds at most `limit` bytes (`LT_CACHE_MAX_MB`)."""
    limit = int(os.environ.get("LT_CACHE_MAX_MB", "1024")) << 20 if limit is None else limit
    entries = []
    for path in root.glob("*/*"):
        try:
            st = path.stat()
        except OSError:
            continue
        entries.append((st.st_mtime, st.st_size, path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        path.unlink(missing_ok=True)
        total -= size


def clear() -> None:
    """Remove every entry."""
    root = directory()
    if root is not None:
        evict(root, 0)


__all__ = ["clear", "directory", "evict", "load", "set_enabled", "store"]
