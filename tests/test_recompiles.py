"""`LT_LOG=recompiles`: one line per kernel compiled and per `lt.jit` recording, with its reason and the user line."""
from __future__ import annotations

import re
import sys
import warnings

import numpy as np
import pytest

import lazytensor as lt
from conftest import random_array

pytestmark = pytest.mark.fast


def data(*shape: int, seed: int = 0, dtype: lt.DType = lt.float32) -> lt.Tensor:
    return lt.asarray(random_array(shape, dtype, seed))


def lines(capsys: pytest.CaptureFixture) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("lt: ")]


def test_silent_unless_asked(capsys, monkeypatch):
    monkeypatch.delenv("LT_LOG", raising=False)
    (data(3, 5, seed=101).exp() * 1.75 + 1).realize()
    assert lines(capsys) == []


def test_each_compile_says_why(capsys, monkeypatch):
    monkeypatch.setenv("LT_LOG", "recompiles")
    line = sys._getframe().f_lineno + 1  # the ops' line: the lambda's
    body = lambda x: (x.cosh() * 2.5).sinh()
    body(data(3, 5, seed=1)).realize()
    body(data(3, 5, seed=2)).realize()  # the same kernel: no compile
    body(data(4, 5, seed=3)).realize()
    body(data(4, 5, seed=4, dtype=lt.float64)).realize()
    got = lines(capsys)
    assert len(got) == 3, got
    assert all(f"<- {__file__}:" in g for g in got) and got[0].endswith(f"{__file__}:{line}")
    # the first: a structure of its own, or (where a test before compiled these ops at another shape or dtype, in
    # whatever order the suite runs) a new shape or dtype
    assert got[0].startswith("lt: compiled ") and any(f": {why}" in got[0] for why in
                                                     ("new kernel structure", "new shape: ", "new dtype: "))
    assert "new shape: output 0 [4, 5] was [3, 5], input 0 [4, 5] was [3, 5]" in got[1]
    assert "new dtype: output 0 float64 was float32, input 0 float64 was float32" in got[2]
    assert " on " + lt.schedule(body(data(3, 5)))[0].device + " in " in got[0]


def test_each_jit_recording_says_why(capsys, monkeypatch):
    monkeypatch.setenv("LT_LOG", "recompiles")
    w = data(5, 3, seed=7)

    @lt.jit
    def f(x, scale):
        return (x @ w * scale).tanh()

    line = sys._getframe().f_lineno + 2
    for rows, scale in ((4, 2), (4, 2), (4, 2), (6, 2), (6, 2), (6, 3)):
        f(data(rows, 5, seed=rows), scale)
    records = [g for g in lines(capsys) if g.startswith("lt: lt.jit records")]
    assert len(records) == 5, records  # 4 rows: twice (to settle); 6 rows: twice; scale 3: once, then settles
    assert all(g.startswith("lt: lt.jit records test_each_jit_recording_says_why.<locals>.f: ") for g in records)
    assert all(g.endswith(f"<- {__file__}:{line}") for g in records)
    assert "first call" in records[0] and "not settled yet" in records[1]
    assert "new signature: argument 0: float32[6, 5] was float32[4, 5]" in records[2]
    assert "not settled yet" in records[3]
    assert "new signature: argument 1: 3 was 2" in records[4]
    np.testing.assert_allclose(f(data(6, 5, seed=6), 3).numpy(),
                               np.tanh(data(6, 5, seed=6).numpy() @ w.numpy() * 3), rtol=1e-5, atol=1e-6)


def test_too_many_recordings_warn_once_with_their_reasons(monkeypatch):
    monkeypatch.delenv("LT_LOG", raising=False)
    monkeypatch.setenv("LT_JIT_MAX_RECORDS", "3")
    f = lt.jit(lambda x: x * 2 + 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (1, 2, 3, 4, 5, 6):
            f(data(n, seed=n))
            line = sys._getframe().f_lineno - 1  # the call's
    assert len(caught) == 1 and caught[0].filename == __file__ and caught[0].lineno == line
    assert re.search(r"recorded 4 times \(more than LT_JIT_MAX_RECORDS=3\).*new signature: argument 0: "
                     r"float32\[4\] was float32\[3\]", str(caught[0].message))
