"""`lt.export`: a shared library and a C header that run a function's kernels from C, compiled here against the
header with the system C compiler, its outputs compared with lazytensor's."""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import lazytensor as lt
from conftest import random_array
from lazytensor import nn, optim
from lazytensor.errors import JitError

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None, reason="no C compiler")
NUMPY = {"float": np.float32, "double": np.float64, "int64_t": np.int64, "int32_t": np.int32, "uint8_t": np.uint8,
         "uint16_t": np.uint16}


def data(*shape: int, seed: int = 0, dtype: lt.DType = lt.float32) -> lt.Tensor:
    return lt.asarray(random_array(shape, dtype, seed), device="cpu")


def run_from_c(folder: Path, name: str, inputs: list[np.ndarray], threads: int = 2) -> tuple[int, list[np.ndarray]]:
    """Build a C program against the exported header that reads the inputs from files, calls the entry point and
    writes the outputs; run it; its status and outputs."""
    header = (folder / f"{name}.h").read_text()
    outs = [(ctype, int(np.prod(ast.literal_eval(shape)))) for ctype, shape in
            re.findall(r"out\d+: (\w+)(\[[\d, ]*\])", header)]
    outs = [({"float32": "float", "float64": "double", "int64": "int64_t", "int32": "int32_t",
              "bool": "uint8_t", "float16": "uint16_t"}[t], n) for t, n in outs]
    ins = [(a.dtype, a.size) for a in inputs]
    for k, a in enumerate(inputs):
        np.ascontiguousarray(a).tofile(folder / f"in{k}.bin")
    c_of = {np.dtype(v): k for k, v in NUMPY.items()}
    lines = ["#include <stdio.h>", "#include <stdlib.h>", "#include <stdint.h>", f'#include "{name}.h"',
             "int main(void) {", "    FILE *f;"]
    for k, (dt, n) in enumerate(ins):
        lines += [f"    {c_of[dt]} *in{k} = malloc({max(n, 1)} * sizeof({c_of[dt]}));",
                  (f'    f = fopen("in{k}.bin", "rb"); if (fread(in{k}, sizeof({c_of[dt]}), {n}, f) != {n}) return 9;'
                  " fclose(f);")]
    for k, (ct, n) in enumerate(outs):
        lines.append(f"    {ct} *out{k} = malloc({max(n, 1)} * sizeof({ct}));")
    args = [f"in{k}" for k in range(len(ins))] + [f"out{k}" for k in range(len(outs))]
    lines.append(f"    int status = {name}({', '.join(args)});")
    for k, (ct, n) in enumerate(outs):
        lines.append(f'    f = fopen("out{k}.bin", "wb"); fwrite(out{k}, sizeof({ct}), {n}, f); fclose(f);')
    lines += ["    return status;", "}"]
    (folder / "main.c").write_text("\n".join(lines) + "\n")
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O2", "-o", "main", "main.c", "-L.", f"-l{name}", f"-Wl,-rpath,{folder}"], cwd=folder,
                   check=True, capture_output=True)
    done = subprocess.run(["./main"], cwd=folder, capture_output=True, check=False,
                          env={**os.environ, "LT_NUM_THREADS": str(threads)})
    return done.returncode, [np.fromfile(folder / f"out{k}.bin", NUMPY[ct]) for k, (ct, _) in enumerate(outs)]


def test_an_mlp_runs_from_c_bit_for_bit(tmp_path):
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    model.to("cpu")

    def predict(x):
        return model(x).softmax(-1)

    x = data(32, 64, seed=1)
    written = lt.export(predict, x, path=tmp_path / "predict")
    assert written == [tmp_path / "libpredict.so", tmp_path / "predict.h"]
    header = (tmp_path / "predict.h").read_text()
    assert "int predict(const float *in0, float *out0);" in header and "in0: float32[32, 64]" in header
    x2 = data(32, 64, seed=2)  # new data: the library computes, it does not replay the example
    for threads in (1, 2, 3):
        status, (out,) = run_from_c(tmp_path, "predict", [x2.numpy()], threads)
        assert status == 0
        np.testing.assert_array_equal(out.reshape(32, 10), predict(x2).numpy())


def test_several_inputs_and_outputs_dtypes_reductions_and_an_index_check(tmp_path):
    w = data(96, 80, seed=3)

    def f(x, idx, n):
        h = (x @ w).tanh()  # large enough for the contraction template
        return h[idx] * 2, (n * 3 + 1) // 2, h.sum(0), x.var(1)

    x, idx, n = data(64, 96, seed=4), lt.asarray(np.array([3, 0, 63, 7]), device="cpu"), data(5, dtype=lt.int32)
    lt.export(f, x, idx, n, path=tmp_path / "several")
    assert "int several(const float *in0, const int64_t *in1, const int32_t *in2, float *out0, int32_t *out1, " \
           "float *out2, float *out3);" in (tmp_path / "several.h").read_text()
    x2, n2 = data(64, 96, seed=5), data(5, seed=6, dtype=lt.int32)
    status, outs = run_from_c(tmp_path, "several", [x2.numpy(), np.array([1, 2, 62, 0]), n2.numpy()])
    assert status == 0
    want = f(x2, lt.asarray(np.array([1, 2, 62, 0]), device="cpu"), n2)
    for got, expected in zip(outs, want):
        np.testing.assert_array_equal(got, expected.numpy().ravel())
    status, _ = run_from_c(tmp_path, "several", [x2.numpy(), np.array([1, 2, 64, 0]), n2.numpy()])
    assert status == 1  # an index out of range: what the realize raises IndexError for


def test_a_float64_to_float16_rounding_links_without_the_compilers_runtime(tmp_path):
    """LLVM may fold float64 -> float32 -> float16 into a call of `__truncdfhf2` (test_half): the library brings
    its own (hidden), so it loads whatever the system compiler's runtime library has."""
    def f(x):
        v = x[..., ::2].var(axis=0, keepdims=True, correction=1)
        return v.tanh(), v

    x = lt.asarray(np.arange(8, dtype=np.float16).reshape(1, 1, 1, 8), device="cpu")
    lt.export(f, x, path=tmp_path / "half")
    symbols = subprocess.run(["nm", "-D", str(tmp_path / "libhalf.so")], check=True, capture_output=True,
                             text=True).stdout
    assert "__truncdfhf2" not in symbols
    x2 = np.array([[[[0.5, 7, 3, -2, 1e4, 3, -6e4, 2]]]], dtype=np.float16)
    status, outs = run_from_c(tmp_path, "half", [x2.view(np.uint16)])
    assert status == 0
    for got, expected in zip(outs, f(lt.asarray(x2, device="cpu"))):
        np.testing.assert_array_equal(got.view(np.float16), expected.numpy().ravel())


def test_what_cannot_be_exported_says_why(tmp_path):
    model = nn.Linear(4, 2)
    model.to("cpu")
    opt = optim.SGD(model.parameters(), lr=0.1)

    def train(x):
        loss = model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    with pytest.raises(JitError, match="updates state"):
        lt.export(train, data(3, 4), path=tmp_path / "train")
    with pytest.raises(JitError, match="random"):
        lt.export(lambda x: x + lt.rand(*x.shape, device="cpu"), data(3, 4), path=tmp_path / "noise")
    with pytest.raises(JitError, match="LAPACK"):
        lt.export(lambda x: lt.linalg.inv(x), data(3, 3) + 4 * lt.eye(3, device="cpu"), path=tmp_path / "inv")
    with pytest.raises(ValueError, match="C identifier"):
        lt.export(lambda x: x + 1, data(3), path=tmp_path / "not-a-name")


def test_kernels_generic_in_this_process_export_specialized(tmp_path):
    """The library's frames pass no sizes: a linear layer and a row sum that already run generic here over the
    batch (`kernels/symbolic.py`: compiled at two other sizes first) are exported at the example's own sizes."""
    w = data(96, 80, seed=3)

    def f(x):
        return (x @ w).relu().sum(-1)

    for n in (40, 50):
        f(data(n, 96, seed=n)).numpy()
    assert lt.stats().kernels_generic >= 1
    x = data(64, 96, seed=4)
    lt.export(f, x, path=tmp_path / "rows")
    status, (out,) = run_from_c(tmp_path, "rows", [x.numpy()])
    assert status == 0
    np.testing.assert_array_equal(out, f(x).numpy())
