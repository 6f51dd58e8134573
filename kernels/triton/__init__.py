"""The GPU backend: kernel IR to Triton source, run on NVIDIA GPUs or in Triton's CPU interpreter.

`render` turns a `Kernel` into the source of a Triton module, and `gemm` a
`Contraction` (a matmul) into a tl.dot kernel; `cuda` binds the CUDA driver API
(device memory, copies, streams); `targets` is where kernels run (a GPU, or the
interpreter under TRITON_INTERPRET=1); `runtime` writes, imports, compiles and
launches the rendered modules. Only `runtime` imports triton, so importing this
package costs nothing on a CPU-only path.
"""
from .gemm import set_allow_tf32, tf32_allowed
from .render import Tiling, TritonSource, render

__all__ = ["Tiling", "TritonSource", "render", "set_allow_tf32", "tf32_allowed"]
