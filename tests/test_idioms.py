"""The idiom benchmark's programs (benchmarks/bench_idioms.py: array code written the way NumPy and PyTorch
tutorials write it), small, against NumPy (torch eager where NumPy has no spelling), on the device the suite
runs on: what the benchmark times on the CPU computes the same on the Triton backend (issue "No performance
cliffs", item 4)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from bench_idioms import idioms
from suite import mismatch, to_numpy

SCALE = 32  # every dimension over 32 (4 at least): 2**22 elements become 4096, 4096x1024 128x32
IDIOMS = {idiom.name: idiom for idiom in idioms(SCALE)}


@pytest.mark.parametrize("name", IDIOMS)
def test_idiom_computes_what_numpy_computes(name):
    idiom = IDIOMS[name]
    arrays = idiom.make(np.random.default_rng(0))
    oracle = "numpy" if "numpy" in idiom.runs else "torch"
    expected = to_numpy(idiom.runs[oracle]([a.copy() for a in arrays])())
    got = to_numpy(idiom.runs["lazytensor"](arrays)())
    if oracle == "numpy":  # torch's dtypes follow its own promotion (float32 for Python floats, ...)
        assert got.dtype == expected.dtype, f"{name}: dtype {got.dtype}, NumPy's {expected.dtype}"
    assert (wrong := mismatch(got, expected.astype(np.float64))) is None, f"{name}: {wrong}"
