"""Neural networks: modules with parameters (`lazytensor.nn`), their functions (`nn.functional`) and
initializers (`nn.init`), with PyTorch's names and defaults.

    import lazytensor as lt
    from lazytensor import nn
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    loss = nn.functional.cross_entropy(model(x), labels)
    loss.backward()            # gradients are lazy tensors, fused with the update that reads them
"""
from __future__ import annotations

from . import functional, init, utils
from .modules import (
                      GELU,
                      AdaptiveAvgPool2d,
                      AvgPool2d,
                      BatchNorm1d,
                      BatchNorm2d,
                      BCEWithLogitsLoss,
                      Conv2d,
                      CrossEntropyLoss,
                      Dropout,
                      Embedding,
                      Flatten,
                      Identity,
                      L1Loss,
                      LayerNorm,
                      LeakyReLU,
                      Linear,
                      LogSoftmax,
                      MaxPool2d,
                      Module,
                      ModuleList,
                      MSELoss,
                      NLLLoss,
                      Parameter,
                      ReLU,
                      Sequential,
                      Sigmoid,
                      SiLU,
                      Softmax,
                      Tanh,
)
from .recurrent import GRU, LSTM, RNN

__all__ = [
                      "GELU",
                      "GRU",
                      "LSTM",
                      "RNN",
                      "AdaptiveAvgPool2d",
                      "AvgPool2d",
                      "BCEWithLogitsLoss",
                      "BatchNorm1d",
                      "BatchNorm2d",
                      "Conv2d",
                      "CrossEntropyLoss",
                      "Dropout",
                      "Embedding",
                      "Flatten",
                      "Identity",
                      "L1Loss",
                      "LayerNorm",
                      "LeakyReLU",
                      "Linear",
                      "LogSoftmax",
                      "MSELoss",
                      "MaxPool2d",
                      "Module",
                      "ModuleList",
                      "NLLLoss",
                      "Parameter",
                      "ReLU",
                      "Sequential",
                      "SiLU",
                      "Sigmoid",
                      "Softmax",
                      "Tanh",
                      "functional",
                      "init",
                      "utils",
]
