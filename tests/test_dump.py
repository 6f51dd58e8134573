"""Program dumps (`LT_DUMP_DIR`, `lt.dump_to`), the replay of one dumped kernel, `LT_VALIDATE`, and the kernel IR's
JSON form that a dump keeps."""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lazytensor as lt
from conftest import random_array
from lazytensor import dump
from lazytensor.device import get_device
from lazytensor.errors import KernelError
from lazytensor.kernels import ir_json
from lazytensor.kernels.ir import Contraction, Kernel, Scan, Scatter, Sort
from lazytensor.replay import replay

pytestmark = pytest.mark.fast
ROOT = Path(__file__).resolve().parent.parent


def data(*shape: int, seed: int = 0, dtype: lt.DType = lt.float32, device: str | None = None) -> lt.Tensor:
    return lt.asarray(random_array(shape, dtype, seed), device=device)


def every_kind() -> list[lt.Tensor]:
    """Tensors whose schedules hold every kind of kernel (loop nests, a contraction, a scatter, a sort, a scan, a
    library call where the device has one), in several dtypes."""
    x, q = data(8, 33), data(2, 64, 16, seed=1)
    idx = lt.asarray(np.array([1, 3, 5]))
    y = lt.zeros((8, 33))
    y[idx] = 1.5
    out = [x - x.mean(0), (q @ q.swapaxes(-1, -2)).relu(), x[idx], (x > 0.5).sum(1), data(4, 4096).cumsum(-1),
           x.sort(-1), y, (x * float("nan")).sum(), x ** 2.5, (lt.arange(10, dtype=lt.int8) * 3) // 2,
           data(6, 5, dtype=lt.float16).exp(), data(6, 5).astype(lt.bfloat16) * 3]
    if x.device == "cpu":
        out.append(lt.linalg.inv(data(3, 3, seed=2) + 4 * lt.eye(3)))
    return out


def test_the_kernel_ir_round_trips_through_json():
    kinds = set()
    for t in every_kind():
        for item in lt.schedule(t):
            text = ir_json.dumps(item.kernel)
            back = ir_json.loads(text)
            kinds.add(type(back))
            assert type(back) is type(item.kernel) and back.name == item.kernel.name
            assert str(back) == str(item.kernel) and ir_json.dumps(back) == text
    assert {Kernel, Contraction, Scatter, Sort, Scan} <= kinds


def test_loading_builds_only_kernel_ir():
    with pytest.raises(ValueError, match="format"):
        ir_json.loads(json.dumps({"format": 99}))
    with pytest.raises(ValueError, match="not kernel IR"):
        ir_json.loads(json.dumps({"format": ir_json.FORMAT, "values": [], "kernel": {"kind": "Popen", "fields": {}}}))
    with pytest.raises(ValueError, match="not a kernel"):
        ir_json.loads(json.dumps({"format": ir_json.FORMAT, "values": [], "kernel": {"tuple": [1, 2]}}))


def test_a_dump_folder_holds_every_schedule_and_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("LT_DUMP_INPUTS", "1")
    x = data(8, 33, seed=3)
    with lt.dump_to(tmp_path) as folder:
        a = (x - x.mean(0)).realize()
        b = x.softmax(-1).realize()
        (x - x.mean(0)).realize()  # the same schedule: written once
    assert folder == tmp_path and dump.directory() is None
    index = json.loads((tmp_path / "index.json").read_text())["kernels"]
    names = [item.kernel.name for t in (x - x.mean(0), x.softmax(-1)) for item in lt.schedule(t)]
    assert [e["name"] for e in index] == names and len(names) == 3
    assert sorted(p.name for p in tmp_path.glob("schedule-*.txt")) == ["schedule-0.txt", "schedule-1.txt"]
    for entry in index:
        files = {p.name for p in (tmp_path / entry["name"]).iterdir()}
        assert set(entry["files"]) == files
        assert {"kernel.txt", "kernel.json", "meta.json", "inputs.npz"} <= files
        assert entry["device"] == x.device and entry["backend"] == ("llvm" if x.device == "cpu" else "triton")
        assert entry["user_lines"] and all(line.startswith(__file__ + ":") for line in entry["user_lines"])
        if x.device == "cpu":
            assert {"llvm.ll", "llvm-optimized.ll", "assembly.s"} <= files
        else:
            assert any(f.endswith(".triton.py") for f in files)
    assert [e["schedules"] for e in index] == [[0], [0], [1]]
    meta = json.loads((tmp_path / index[0]["name"] / "meta.json").read_text())
    assert meta["buffers"][1] == {"slot": 1, "dtype": "float32", "size": 264, "output": False, "scratch": False,
                                  "shape": [8, 33]}
    np.testing.assert_array_equal(np.load(tmp_path / index[0]["name"] / "inputs.npz")["input0"], x.numpy().ravel())
    text = (tmp_path / "schedule-0.txt").read_text()
    assert text.startswith("# the graph before fusion\n%0 = buffer float32[8, 33]") and "# the kernels after" in text
    assert "(rule 1)" in text and "requested: an output of the realize" in text
    np.testing.assert_allclose(a.numpy(), x.numpy() - x.numpy().mean(0), rtol=1e-5, atol=1e-6)
    assert b.is_realized


def test_dumping_changes_no_result(tmp_path, monkeypatch):
    x = data(64, 48, seed=5)
    plain = (x.exp() / x.exp().sum(1, keepdims=True) + x.var(0)).numpy().copy()
    monkeypatch.setenv("LT_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("LT_DUMP_INPUTS", "1")
    dumped = (x.exp() / x.exp().sum(1, keepdims=True) + x.var(0)).numpy()
    np.testing.assert_array_equal(dumped, plain)
    assert (tmp_path / "index.json").exists()


def test_a_replay_in_a_fresh_process_reproduces_the_output_bit_for_bit(tmp_path, monkeypatch):
    """On the CPU: a fresh process has no storage for Triton's interpreter (the tests' torch provides it)."""
    monkeypatch.setenv("LT_DUMP_INPUTS", "1")
    x, w = data(16, 24, seed=6, device="cpu"), data(24, 8, seed=7, device="cpu")
    with lt.dump_to(tmp_path):
        out = ((x @ w).tanh() * 0.5 + x[:, :8].exp()).realize()
    (item,) = lt.schedule((x @ w).tanh() * 0.5 + x[:, :8].exp())
    folder = tmp_path / item.kernel.name
    run = subprocess.run([sys.executable, "-m", "lazytensor.replay", str(folder), "--out", str(tmp_path / "o.npz"),
                          "--repeat", "3"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert run.returncode == 0, run.stderr
    assert "largest error" in run.stdout and "MISMATCH" not in run.stdout and "us per launch" in run.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "o.npz")["output0"], out.numpy().ravel())


def test_a_replay_with_random_inputs_and_on_another_backend(tmp_path, capsys):
    x = data(5, 7, seed=8)
    with lt.dump_to(tmp_path):
        (x.sin() * 2).realize()
    (item,) = lt.schedule(x.sin() * 2)
    assert replay(tmp_path / item.kernel.name) == 0
    out = capsys.readouterr().out
    assert "(random inputs)" in out and "largest error" in out and "MISMATCH" not in out
    assert replay(tmp_path / item.kernel.name, "cpu") == 0


def corrupting(device, monkeypatch):
    """Programs that add 1 to the first element of their first (float32) output after running."""
    compile_ = type(device).compile

    class Wrong:
        def __init__(self, program):
            self.program = program

        def __call__(self, ptrs, params):
            self.program(ptrs, params)
            (ctypes.c_float * 1).from_address(ptrs[0])[0] += 1

        def __getattr__(self, name):  # its files, for a dump
            return getattr(self.program, name)

    def compile(self, kernel, changed=frozenset()):
        return Wrong(compile_(self, kernel, changed)[0]), False  # (counted as found: compiled or not, the test's aside)

    monkeypatch.setattr(type(device), "compile", compile)
    monkeypatch.setattr(type(device), "compile_all", lambda self, kernels, changed=frozenset(): [])


def test_validate_catches_a_kernel_that_disagrees_with_the_reference(tmp_path, monkeypatch):
    x = data(9, 4, seed=9, device="cpu")  # the corruption writes through a host address
    monkeypatch.setenv("LT_VALIDATE", "1")
    np.testing.assert_allclose((x * 3 + 1).numpy(), x.numpy() * 3 + 1, rtol=1e-6)  # agrees: no error
    corrupting(get_device("cpu"), monkeypatch)
    with pytest.raises(KernelError, match=r"LT_VALIDATE: the kernel ew_\w+ for the op at .*test_dump.py:\d+ disagrees "
                                          r"with the reference interpreter in output 0 \(float32\[36\]\): largest "
                                          r"error 1; run with LT_DUMP_DIR"):
        (x * 5 - 2).realize()
    monkeypatch.setenv("LT_DUMP_DIR", str(tmp_path))
    with pytest.raises(KernelError, match=f"its dump is {tmp_path}/ew_"):
        (x * 7 - 2).realize()


def test_a_kernel_that_fails_to_compile_leaves_its_dump(tmp_path, monkeypatch):
    device = get_device(None)

    def broken(self, kernel, changed=frozenset()):
        raise RuntimeError("the backend broke")

    monkeypatch.setattr(type(device), "compile", broken)
    monkeypatch.setattr(type(device), "compile_all", lambda self, kernels, changed=frozenset(): [])
    x = data(3, 3, seed=10)
    with lt.dump_to(tmp_path), pytest.raises(KernelError, match="the backend broke") as info:
        (x.cos() * 11).realize()
    (item,) = lt.schedule(x.cos() * 11)
    assert f"are in {tmp_path / item.kernel.name} (for a bug report" in str(info.value)
    assert ir_json.loads((tmp_path / item.kernel.name / "kernel.json").read_text()).name == item.kernel.name


def test_a_kernel_that_fails_to_compile_is_dumped_for_a_bug_report_anyway(monkeypatch):
    device = get_device(None)

    def broken(self, kernel, changed=frozenset()):
        raise RuntimeError("the backend broke")

    monkeypatch.setattr(type(device), "compile", broken)
    monkeypatch.setattr(type(device), "compile_all", lambda self, kernels, changed=frozenset(): [])
    x = data(3, 3, seed=11)
    y = x.cosh() * 3
    z = y + x
    (item,) = lt.schedule(z)
    with pytest.raises(KernelError, match=f"for the ops at {y.node.origin}, {z.node.origin} failed: the backend "
                                          "broke") as info:
        z.realize()
    folder = Path(str(info.value).split(" are in ")[1].split(" (for a bug report")[0])
    assert folder.name == item.kernel.name and (folder / "kernel.json").exists()
    assert json.loads((folder / "meta.json").read_text())["origin"] == item.origin


def test_the_debugging_example_makes_every_artifact(tmp_path):
    # a CPU program (a fresh process has no storage for Triton's interpreter: the tests' torch provides it)
    env = {k: v for k, v in os.environ.items() if k not in ("LT_DEVICE", "TRITON_INTERPRET")}
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "debugging.py"), str(tmp_path)],
                         capture_output=True, text=True, cwd=ROOT, check=False, env=env)
    assert run.returncode == 0, run.stderr
    assert {p.name for p in tmp_path.iterdir()} >= {"dump", "explain.txt", "graph.dot", "profile.txt", "trace.json"}
    index = json.loads((tmp_path / "dump" / "index.json").read_text())["kernels"]
    assert index and all((tmp_path / "dump" / e["name"] / "inputs.npz").exists() for e in index)
    assert "not one kernel with [1]" in (tmp_path / "explain.txt").read_text()
    assert len(json.loads((tmp_path / "trace.json").read_text())["traceEvents"]) >= 5 * len(index)
    assert "lt: compiled" in run.stderr and "new shape" in run.stderr  # the recompile log of a new batch size
    assert "largest error" in run.stdout and "MISMATCH" not in run.stdout
