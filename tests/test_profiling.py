"""`lt.profile()`: every compile and launch in the block, as a table, as data, and as a Chrome trace."""
from __future__ import annotations

import json
import threading

import numpy as np
import pytest

import lazytensor as lt
from conftest import random_array
from lazytensor.kernels.ir import Contraction

pytestmark = pytest.mark.fast


def data(*shape: int, seed: int = 0) -> lt.Tensor:
    return lt.asarray(random_array(shape, lt.float32, seed))


def test_every_launch_and_compile_is_an_event(tmp_path):
    x, w = data(64, 96, seed=1), data(96, 80, seed=2)  # large enough for the contraction template
    with lt.profile() as p:
        for _ in range(3):
            y = (x @ w).relu().realize()
            z = (x.sinh() * 0.25).softmax(-1).realize()
    kernels = [item.kernel for t in ((x @ w).relu(), (x.sinh() * 0.25).softmax(-1)) for item in lt.schedule(t)]
    launches = [e for e in p.events if e.kind == "launch"]
    assert [e.kernel for e in launches] == [k.name for k in kernels] * 3
    assert {e.kernel for e in p.events if e.kind == "compile"} <= {k.name for k in kernels}
    assert all(e.seconds >= 0 and e.thread == threading.get_ident() and e.origin.startswith(__file__) for e in p.events)
    rows = {r.kernel: r for r in p.kernels()}
    assert set(rows) == {k.name for k in kernels} and all(r.launches == 3 for r in rows.values())
    product = rows[kernels[0].name]
    assert isinstance(kernels[0], Contraction)
    assert product.bytes == 4 * (64 * 80 + 64 * 96 + 96 * 80) and product.flops == 2 * 64 * 80 * 96
    assert rows[kernels[1].name].flops == 0 and rows[kernels[1].name].bytes == 4 * 2 * 64 * 96
    assert [r.total_seconds for r in p.kernels()] == sorted((r.total_seconds for r in rows.values()), reverse=True)
    table = str(p)
    assert table.splitlines()[0].startswith("kernel") and "GB/s" in table and "2 kernels, 6 launches" in table
    assert all(k.name in table for k in kernels)
    trace = json.loads(p.export_chrome_trace(tmp_path / "trace.json").read_text())["traceEvents"]
    assert len(trace) == len(p.events) and sum(e["cat"] == "launch" for e in trace) == 6
    assert all(e["ph"] == "X" and e["dur"] >= 0 and e["ts"] >= 0 and e["args"]["origin"] for e in trace)
    np.testing.assert_allclose(y.numpy(), np.maximum(x.numpy() @ w.numpy(), 0), rtol=1e-4, atol=1e-5)
    assert z.is_realized


def test_a_profile_sees_launches_where_a_watch_variable_is_set_off(monkeypatch):
    """`LT_DEBUG=0` (set, but off) leaves a realize on its fast path only where nothing else watches it."""
    monkeypatch.setenv("LT_DEBUG", "0")
    x = data(8, 8, seed=3)
    (x * 2).realize()
    with lt.profile() as p:
        (x * 2).realize()
    assert [e.kernel for e in p.events if e.kind == "launch"] == [item.kernel.name for item in lt.schedule(x * 2)]


def test_nothing_is_recorded_outside_a_block():
    with lt.profile() as p:
        pass
    (data(5, seed=3) * 2).realize()
    assert p.events == [] and str(p).endswith("0 kernels, 0 launches: 0.00 ms compiling, 0.000 ms running")


def test_a_jit_replay_launches_one_by_one_under_a_profile():
    w = data(6, 4, seed=4)
    f = lt.jit(lambda x: (x @ w).tanh() + 1)
    for seed in range(3):
        f(data(5, 6, seed=seed))
    with lt.profile() as p:
        out = f(data(5, 6, seed=9))
    assert lt.stats().replays >= 1
    kinds = [e.kind for e in p.events]
    assert kinds and set(kinds) == {"launch"}
    np.testing.assert_allclose(out.numpy(), np.tanh(data(5, 6, seed=9).numpy() @ w.numpy()) + 1, rtol=1e-5, atol=1e-6)
