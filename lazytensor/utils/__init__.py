"""Tools around the arrays, as PyTorch's `torch.utils`: `data` (datasets, samplers, `DataLoader`)."""
from . import data

__all__ = ["data"]
