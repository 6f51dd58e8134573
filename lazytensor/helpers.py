"""Small utilities with no lazytensor dependencies: environment flags and the user's frame."""
from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

_PACKAGE_DIRS = (str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent / "kernels"))


# The mapping os.environ reads and writes (encoded name -> encoded value), which every change made through
# os.environ (or a test's monkeypatch) updates: looking a name up there skips the encoding and decoding that cost
# most of os.environ.get, a microsecond a flag, several of which every realize reads. Where an os module keeps no
# such mapping, os.environ itself.
_environ = getattr(os.environ, "_data", os.environ)
_encode_name = getattr(os.environ, "encodekey", str)
_decode_value = getattr(os.environ, "decodevalue", str)
# name -> (its key in `_environ`, the raw value parsed last, the parse function, what it gave)
_parsed: dict[str, tuple[Any, Any, Callable[[str], Any], Any]] = {}


def env_value(name: str, parse: Callable[[str], T]) -> T:
    """`parse` of the environment variable `name`'s text ("" where it is unset), read at each call so that tests
    and programs can change it, but parsed once per value: the raw value os.environ holds is compared by
    identity with the one parsed last (the cache keeps that one alive, so another value is another object).
    `parse` is a function defined once, not a lambda made at each call (which would parse at each call)."""
    known = _parsed.get(name)
    if known is not None:
        key, last, parsed_by, value = known
        if _environ.get(key) is last and parsed_by is parse:
            return value
    else:
        key = _encode_name(name)
    raw = _environ.get(key)
    value = parse("" if raw is None else _decode_value(raw))
    _parsed[name] = (key, raw, parse, value)  # one entry: a thread reading it meanwhile sees the old or the new
    return value


# names -> their keys in `_environ`
_keys: dict[tuple[str, ...], tuple[Any, ...]] = {}


def any_set(names: tuple[str, ...]) -> bool:
    """Whether any of the environment variables `names` is set, to anything: a look-up each, nothing parsed. A
    path every realize takes asks this of the flags that change what it does, and reads them only where one is."""
    keys = _keys.get(names)
    if keys is None:
        keys = _keys[names] = tuple(map(_encode_name, names))
    for key in keys:
        if key in _environ:
            return True
    return False


def _int_or_none(text: str) -> int | None:
    return int(text) if text.strip() else None


def getenv(name: str, default: int = 0) -> int:
    """An integer environment flag (`default` where unset or blank), read at each call so tests can flip it."""
    value = env_value(name, _int_or_none)
    return default if value is None else value


# file name -> whether it is lazytensor's: every op asks of each frame under it, a dozen deep in a composite op
_inside: dict[str, bool] = {}


def user_line(depth: int = 1) -> tuple[str, int | None]:
    """The file and line of the innermost caller outside lazytensor, from the frame `depth` calls up (1: the
    caller's): where the user wrote the op (`('<unknown>', None)` where no frame is the user's); inside
    `KnownUserLine`, its line. The pair, not its `file:line` text, which only an error or a debug line needs;
    and not the frame, which would keep the locals of the user's function alive."""
    if (known := _known.line) is not None:
        return known
    frame, inside = sys._getframe(depth), _inside
    while frame is not None:
        filename = frame.f_code.co_filename
        try:
            ours = inside[filename]
        except KeyError:
            ours = inside[filename] = filename.startswith(_PACKAGE_DIRS)
        if not ours:
            return filename, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", None


def is_ours(fn: Any) -> bool:
    """Whether `fn` is a Python function written in lazytensor's own files (so not the user's code)."""
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_filename.startswith(_PACKAGE_DIRS)


class _Known(threading.local):
    """The line of this thread's innermost `KnownUserLine` block, None outside any. A default on the class, which a
    thread that set none reads: a thread-local attribute it lacks costs `getattr(local, name, None)` an exception
    raised and caught, a microsecond, and every op outside a block asks (two of a loop's nine per small realize)."""

    line: tuple[str, int | None] | None = None


_known = _Known()


class KnownUserLine:
    """A block of lazytensor code that runs none of the user's, all of it serving the user's `line` (a backward
    pass's own rules, a built-in optimizer's update): inside it `user_line` answers `line` without walking the
    stack, which is what the walk would find. Each frame the walk passes costs about half a microsecond (Python
    3.11 makes a frame object of it), and the ops of a backward pass are made eight or more frames below the
    user's. `KnownUserLine(None)` around a call into the user's code (a hook, a custom backward) walks again.
    Per thread; nested blocks restore the line outside them."""

    __slots__ = ("line", "outer")

    def __init__(self, line: tuple[str, int | None] | None):
        self.line = line

    def __enter__(self) -> None:
        self.outer = _known.line
        _known.line = self.line

    def __exit__(self, *exc: object) -> None:
        _known.line = self.outer


def user_call() -> tuple[str, str]:
    """The lazytensor function the user called (the outermost one on the stack) and `file:line` of the call."""
    frame, name = sys._getframe(1), "<unknown>"
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIRS):
        name, frame = frame.f_code.co_name, frame.f_back
    return name, "<unknown>" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def prod(xs) -> int:
    out = 1
    for x in xs:
        out *= x
    return out
