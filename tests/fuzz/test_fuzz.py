"""The differential fuzzer's bounded run, part of the suite on both backends (`.ci/run` runs the suite on
the CPU, then with LT_DEVICE=cuda TRITON_INTERPRET=1 on Triton's interpreter).

Fixed seeds, so a run repeats (LT_FUZZ_SEED=n shifts them). A failing case is shrunk for at most
SHRINK_SECONDS and its standalone repro script is written to pytest's temporary directory and shown in
the failure. The long runs are `python -m tests.fuzz` (see __main__.py); the design is in __init__.py.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from . import modes
from .check import Failure
from .runner import Tally, attempt, repro, shrink

SEED = int(os.environ.get("LT_FUZZ_SEED", "0"))
SHRINK_SECONDS = 120.0
TRITON = os.environ.get("LT_DEVICE", "").startswith("cuda")
MAX_NUMEL = 512 if TRITON else 2048
# cases per check and mode: about a minute per backend in all, on 2 cores
CASES = {"forward": 50, "grad": 30, "jit": 25, "errors": 300}
MODES = ["triton", "triton-tiny"] if TRITON else ["cpu-1-thread", "cpu-2-threads"]


@pytest.fixture(params=MODES)
def mode(request, monkeypatch) -> str:
    """The backend's settings: threads (and thresholds low enough to split the fuzzer's small kernels and to
    run its products on the contraction template), or Triton's tiny tiles (with its products on the template)."""
    if request.param == "cpu-2-threads":
        monkeypatch.setenv("LT_NUM_THREADS", "2")
        modes.split_small_work(monkeypatch.setattr)
        modes.small_products_on_the_template(monkeypatch.setattr)
    elif request.param == "cpu-1-thread":
        monkeypatch.setenv("LT_NUM_THREADS", "1")
    elif request.param == "triton-tiny":
        modes.tiny_tiling(monkeypatch.setattr)
        modes.small_products_on_the_template(monkeypatch.setattr)
    return request.param


def fuzz(name: str, first_seed: int, cases: int, tmp_path: Path, mode: str) -> Tally:
    """Run `cases` seeds of a check; on a failure, shrink it and fail with its repro."""
    tally = Tally()
    for seed in range(first_seed, first_seed + cases):
        _, record, verdict = attempt(name, None, seed, MAX_NUMEL)
        tally.add(verdict, 0.0)
        if isinstance(verdict, Failure):
            shrunk = shrink(name, record, verdict, MAX_NUMEL, SHRINK_SECONDS)
            path = tmp_path / f"{name}-{seed}.py"
            command = f"the bounded run, {mode}, {name} seed {seed}"
            path.write_text(repro(name, shrunk, command, path.name, ""))
            pytest.fail(f"{verdict}\nshrunk to {shrunk.failure}\nrepro script {path}:\n{path.read_text()}",
                        pytrace=False)
    return tally


def _seed(mode: str, check: int) -> int:
    return SEED * 100_000 + MODES.index(mode) * 10_000 + check * 1_000


def test_forward_against_the_reference(mode, tmp_path):
    tally = fuzz("forward", _seed(mode, 0), CASES["forward"], tmp_path, mode)
    assert tally.compared > 10 * tally.unsure  # the reference decides the value of nearly every element


def test_gradients_against_torch_autograd(mode, tmp_path):
    fuzz("grad", _seed(mode, 1), CASES["grad"], tmp_path, mode)


def test_jit_replays_as_plain_calls(mode, tmp_path):
    fuzz("jit", _seed(mode, 2), CASES["jit"], tmp_path, mode)


def test_bad_calls_raise_documented_errors(mode, tmp_path):
    fuzz("errors", _seed(mode, 3), CASES["errors"], tmp_path, mode)
