"""The CPU backend: kernel IR to LLVM IR (`render`), compiled and called in process (`runtime`)."""
from .render import render
from .runtime import Batch, Program, compile_kernel, compile_kernels

__all__ = ["Batch", "Program", "compile_kernel", "compile_kernels", "render"]
