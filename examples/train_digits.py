"""Train an MLP and a small CNN on scikit-learn's handwritten digits (8x8 images, 10 classes).

    pip install -e ".[examples]"
    python examples/train_digits.py                 # both models
    python examples/train_digits.py --model cnn --epochs 20

The data set ships inside scikit-learn (`sklearn.datasets.load_digits`): nothing is downloaded.
Each training step is lazy until `lt.realize(loss, *model.parameters())`, which runs the forward
pass, the backward pass and the Adam update of every parameter in one schedule of fused kernels. The
step is an `lt.jit` function: after its first few calls it only launches the recorded kernels.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import numpy as np

import lazytensor as lt
from lazytensor import nn, optim

F = nn.functional


def load_digits(test_fraction: float = 0.2, seed: int = 0) -> tuple[np.ndarray, ...]:
    """(x_train, y_train, x_test, y_test): images (N, 1, 8, 8) scaled to [0, 1], int64 labels."""
    from sklearn.datasets import load_digits as sklearn_digits
    data = sklearn_digits()
    x = (data.images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = data.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(len(y) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),      # 16 x 4 x 4
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),     # 32 x 2 x 2
        nn.Flatten(), nn.Dropout(0.2), nn.Linear(32 * 2 * 2, 10))


MODELS: dict[str, Callable[[], nn.Module]] = {"mlp": mlp, "cnn": cnn}


class Progress:
    """A one-line text progress bar: `[#######.......] 12/22 loss 0.153`, redrawn in place on a terminal; where the
    stream is not one (a log file, a pipe), only the final line is written, so the log holds no carriage
    returns."""

    def __init__(self, total: int, label: str, width: int = 24, stream=sys.stdout):
        self.total, self.label, self.width, self.stream = total, label, width, stream
        self.start = time.perf_counter()
        self.live = stream.isatty()

    def line(self, done: int, note: str) -> str:
        filled = self.width * done // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        return f"{self.label} [{bar}] {done}/{self.total} {note} {time.perf_counter() - self.start:5.1f}s"

    def update(self, done: int, note: str = "") -> None:
        if self.live:
            self.stream.write("\r" + self.line(done, note))
            self.stream.flush()

    def close(self, note: str = "") -> None:
        self.stream.write(("\r" if self.live else "") + self.line(self.total, note) + "\n")
        self.stream.flush()


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray, batch: int = 512) -> float:
    model.eval()
    correct = 0
    with lt.no_grad():
        for i in range(0, len(y), batch):
            logits = model(lt.asarray(x[i:i + batch]))
            correct += int((logits.argmax(1) == lt.asarray(y[i:i + batch])).sum().item())
    model.train()
    return correct / len(y)


def train(model: nn.Module, x: np.ndarray, y: np.ndarray, epochs: int = 10, batch_size: int = 64,
          lr: float = 1e-3, seed: int = 0, label: str = "train", quiet: bool = False,
          max_steps: int | None = None) -> list[float]:
    """Adam on cross-entropy; returns the loss of every step. Batches of one size (the remainder of an
    epoch is dropped), so every step runs the same compiled kernels, replayed by `lt.jit`."""
    opt = optim.Adam(model.parameters(), lr=lr)

    @lt.jit
    def train_step(xb: lt.Tensor, yb: lt.Tensor) -> lt.Tensor:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        lt.realize(loss, *model.parameters())  # the whole step: forward, backward, update
        return loss

    rng = np.random.default_rng(seed)
    steps_per_epoch = len(y) // batch_size
    losses: list[float] = []
    model.train()
    for epoch in range(epochs):
        order = rng.permutation(len(y))
        bar = None if quiet else Progress(steps_per_epoch, f"{label} epoch {epoch + 1:2d}/{epochs}")
        for step in range(steps_per_epoch):
            idx = order[step * batch_size:(step + 1) * batch_size]
            losses.append(train_step(lt.asarray(x[idx]), lt.asarray(y[idx])).item())
            if bar is not None and (step % 4 == 0 or step == steps_per_epoch - 1):
                bar.update(step + 1, f"loss {np.mean(losses[-steps_per_epoch:]):.4f}")
            if max_steps is not None and len(losses) >= max_steps:
                return losses
        if bar is not None:
            bar.close(f"loss {np.mean(losses[-steps_per_epoch:]):.4f}")
    return losses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=[*MODELS, "both"], default="both")
    parser.add_argument("--epochs", type=int, default=None, help="default: 20 for the MLP, 15 for the CNN")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=None, help="default: 3e-3 (MLP), 5e-3 (CNN)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    x_train, y_train, x_test, y_test = load_digits(seed=args.seed)
    print(f"digits: {len(y_train)} training and {len(y_test)} test images of 8x8, 10 classes")
    names = list(MODELS) if args.model == "both" else [args.model]
    ok = True
    for name in names:
        lt.manual_seed(args.seed)
        model = MODELS[name]()
        epochs = args.epochs or {"mlp": 20, "cnn": 15}[name]
        lr = args.lr or {"mlp": 3e-3, "cnn": 5e-3}[name]
        n_params = sum(p.numel() for p in model.parameters())
        print(f"{name}: {n_params} parameters, Adam lr={lr}, batch {args.batch_size}, {epochs} epochs")
        lt.reset_stats()
        t0 = time.perf_counter()
        losses = train(model, x_train, y_train, epochs, args.batch_size, lr, args.seed, label=name)
        seconds = time.perf_counter() - t0
        stats = lt.stats()
        acc = accuracy(model, x_test, y_test)
        print(f"{name}: test accuracy {acc * 100:.2f}% after {len(losses)} steps in {seconds:.1f} s "
              f"({seconds / len(losses) * 1e3:.1f} ms/step, {stats.kernels_launched / len(losses):.0f} kernels/step, "
              f"{stats.kernels_compiled} kernels compiled in {stats.compile_seconds:.1f} s)")
        ok = ok and acc >= 0.95
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
