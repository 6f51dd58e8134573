"""The persistent compile cache (`kernels/llvm/disk_cache.py`): a second process compiles nothing; a corrupt,
truncated or foreign entry is removed and compiled again, never loaded; two processes fill it at once safely;
it can be turned off; its size is bounded."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lazytensor.kernels.llvm import disk_cache

pytestmark = pytest.mark.fast
ROOT = Path(__file__).resolve().parent.parent

# a program of a few CPU kernels (elementwise, a reduction, a contraction); prints its compiles and results
PROGRAM = """
import json, sys
import numpy as np
import lazytensor as lt
if len(sys.argv) > 1:
    lt.set_cache(False)
rng = np.random.default_rng(0)
x = lt.asarray(rng.standard_normal((96, 80)).astype(np.float32), device="cpu")
w = lt.asarray(rng.standard_normal((80, 64)).astype(np.float32), device="cpu")
out = [((x @ w).relu() + 1).numpy(), (x.exp() * 3).sum(1).numpy(), x.softmax(-1).numpy()]
print(json.dumps({"compiled": lt.stats().kernels_compiled, "out": [o.tolist() for o in out]}))
"""


def run(cache: Path | str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROGRAM, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "LT_CACHE_DIR": str(cache)}, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def entries(cache: Path) -> list[Path]:
    return sorted((cache / "llvm").glob("*/*"))


def test_a_second_process_compiles_nothing(tmp_path):
    first = run(tmp_path)
    assert first["compiled"] >= 3 and len(entries(tmp_path)) >= 3
    second = run(tmp_path)
    assert second["compiled"] == 0 and second["out"] == first["out"]


@pytest.mark.parametrize("damage", ["corrupt", "truncated", "foreign"])
def test_a_damaged_entry_is_removed_and_compiled_again(tmp_path, damage):
    first = run(tmp_path)
    for path in entries(tmp_path):
        data = path.read_bytes()
        path.write_bytes({"corrupt": data[:100] + bytes([data[100] ^ 1]) + data[101:],
                          "truncated": data[: len(data) // 2],
                          "foreign": b"\x7fELF" + bytes(200)}[damage])
    again = run(tmp_path)
    assert again["compiled"] == first["compiled"] and again["out"] == first["out"]
    assert all(disk_cache.MAGIC == p.read_bytes()[:len(disk_cache.MAGIC)] for p in entries(tmp_path))
    assert run(tmp_path)["compiled"] == 0  # rewritten whole


def test_two_processes_fill_it_at_once(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", PROGRAM], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT, env={**os.environ, "LT_CACHE_DIR": str(tmp_path)})
             for _ in range(2)]
    outs = [json.loads(p.communicate()[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs) and outs[0]["out"] == outs[1]["out"]
    assert not list((tmp_path / "llvm").glob("*/.tmp-*"))  # no half-written entry left
    assert run(tmp_path)["compiled"] == 0


def test_it_can_be_turned_off(tmp_path):
    assert run("")["compiled"] >= 3  # LT_CACHE_DIR= (empty)
    assert run(tmp_path, "off")["compiled"] >= 3 and entries(tmp_path) == []  # lt.set_cache(False)


def test_the_entries_used_longest_ago_go_first(tmp_path, monkeypatch):
    monkeypatch.setenv("LT_CACHE_DIR", str(tmp_path))
    for k in range(4):
        disk_cache.store(f"module {k}", False, "optimized", bytes(1000))
        time.sleep(0.01)
    assert disk_cache.load("module 0", False) == ("optimized", bytes(1000))  # used now: the newest
    disk_cache.evict(tmp_path / "llvm", 2500)
    assert [disk_cache.load(f"module {k}", False) is not None for k in range(4)] == [True, False, False, True]
    disk_cache.clear()
    assert entries(tmp_path) == []
