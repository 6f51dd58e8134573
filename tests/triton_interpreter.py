"""Storage for Triton's interpreter, so the op suite can run on the Triton backend without a GPU:

    LT_DEVICE=cuda TRITON_INTERPRET=1 python -m pytest tests/

Under TRITON_INTERPRET=1 the cuda device runs its Triton kernels in Triton's interpreter, which reads
its tensor arguments through torch's storage API, so memory there must be torch CPU tensors.
lazytensor never imports torch itself; importing this module registers torch as that storage.

Triton reads TRITON_INTERPRET once, when it is imported, and torch imports triton on its own (building
a torch optimizer does, through torch._dynamo). Unless this session is for a GPU (LT_DEVICE=cuda
without TRITON_INTERPRET), triton is imported here, interpreted, so that tests/test_triton.py can run
it in the interpreter whatever ran before.
"""
from __future__ import annotations

import os
import sys

import torch

from lazytensor.kernels.triton.targets import interpreting, set_interpreter_storage


def _storage(nbytes: int) -> torch.Tensor:
    try:
        return torch.empty(nbytes, dtype=torch.uint8)
    except RuntimeError as e:  # torch's allocator says "can't allocate memory" this way
        raise MemoryError(str(e)) from None


set_interpreter_storage(_storage)

_gpu_session = os.environ.get("LT_DEVICE", "").strip().lower().startswith("cuda") and not interpreting()
if "triton" not in sys.modules and not _gpu_session:
    _saved = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        import triton.language  # noqa: F401
    except ImportError:  # no triton: nothing to prepare
        pass
    finally:
        if _saved is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = _saved
