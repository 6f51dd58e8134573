"""Small utilities with no lazytensor dependencies: environment flags and the user's frame."""
from __future__ import annotations

import os
import sys
from pathlib import Path

_PACKAGE_DIRS = (str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent / "kernels"))


def getenv(name: str, default: int = 0) -> int:
    """An integer environment flag, read at each call so tests can flip it."""
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


# file name -> whether it is lazytensor's: every op asks of each frame under it, a dozen deep in a composite op
_inside: dict[str, bool] = {}


def user_line(depth: int = 1) -> tuple[str, int | None]:
    """The file and line of the innermost caller outside lazytensor, from the frame `depth` calls up (1: the
    caller's): where the user wrote the op (`('<unknown>', None)` where no frame is the user's). The pair, not
    its `file:line` text, which only an error or a debug line needs; and not the frame, which would keep the
    locals of the user's function alive."""
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
