"""Optimizers and learning-rate schedules, with PyTorch's names (`torch.optim`, `torch.optim.lr_scheduler`):
`optimizers.py` holds the optimizers (lazy steps: see its docstring), `lr_scheduler.py` the schedules."""
from __future__ import annotations

from . import lr_scheduler
from .optimizers import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
