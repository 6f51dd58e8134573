"""Every debugging artifact lazytensor makes, for one small training step: run it, then read the folder it prints.

    python examples/debugging.py [FOLDER]

- FOLDER/dump/: a program dump (index.json, schedule-<n>.txt, a folder per kernel with its IR, metadata and
  inputs), as `LT_DUMP_DIR=FOLDER/dump LT_DUMP_INPUTS=1` would write;
- a replay of one dumped kernel in a fresh process (`python -m lazytensor.replay`), compared with the reference
  interpreter;
- FOLDER/explain.txt: why the step's kernels are what they are (`lt.explain`);
- FOLDER/graph.dot (and graph.svg where Graphviz is installed): the graph, a cluster per kernel (`lt.draw`);
- FOLDER/profile.txt and FOLDER/trace.json: where the time goes (`lt.profile`), the trace for ui.perfetto.dev;
- the recompile log of a new batch size (`LT_LOG=recompiles`), on stderr.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import lazytensor as lt
from lazytensor import nn, optim


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="lazytensor-debugging-"))
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    opt = optim.AdamW(model.parameters(), lr=1e-3)

    def batch(size: int) -> tuple[lt.Tensor, lt.Tensor]:
        return lt.asarray(rng.standard_normal((size, 64), dtype=np.float32)), lt.asarray(rng.integers(0, 10, size))

    def step(x: lt.Tensor, y: lt.Tensor) -> lt.Tensor:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    x, y = batch(128)
    loss = step(x, y)
    report = io.StringIO()
    lt.explain(loss, file=report)  # before it runs: the step's kernels, and why each buffer is written
    (folder / "explain.txt").write_text(report.getvalue())
    drawn = lt.draw(loss, path=folder / "graph.dot")

    os.environ["LT_DUMP_INPUTS"] = "1"
    with lt.dump_to(folder / "dump"):
        loss.realize()
    del os.environ["LT_DUMP_INPUTS"]

    with lt.profile() as p:
        for _ in range(5):
            step(*batch(128)).realize()
    (folder / "profile.txt").write_text(str(p) + "\n")
    p.export_chrome_trace(folder / "trace.json")

    os.environ["LT_LOG"] = "recompiles"
    step(*batch(96)).realize()  # a new batch size: the log says which kernels compile again, and why
    del os.environ["LT_LOG"]

    kernel = next(p for p in sorted((folder / "dump").iterdir()) if p.is_dir())
    replay = subprocess.run([sys.executable, "-m", "lazytensor.replay", str(kernel), "--repeat", "10"],
                            capture_output=True, text=True, check=False)
    print(replay.stdout, end="")
    print(f"\nwrote {folder}: {', '.join(sorted(p.name for p in folder.iterdir()))} "
          f"({len(list((folder / 'dump').iterdir())) - 1} files and kernel folders in dump/; {len(drawn)} drawing(s))")
    sys.exit(replay.returncode)


if __name__ == "__main__":
    main()
