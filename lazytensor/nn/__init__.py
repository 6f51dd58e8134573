"""Neural networks: modules with parameters (`lazytensor.nn`), their functions (`nn.functional`) and
initializers (`nn.init`), with PyTorch's names and defaults.

    import lazytensor as lt
    from lazytensor import nn
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    loss = nn.functional.cross_entropy(model(x), labels)
    loss.backward()            # gradients are lazy tensors, fused with the update that reads them
"""
from __future__ import annotations

from . import functional, init
from .modules import (AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, BCEWithLogitsLoss, Conv2d,
                      CrossEntropyLoss, Dropout, Embedding, Flatten, GELU, Identity, L1Loss, LayerNorm, LeakyReLU,
                      Linear, LogSoftmax, MaxPool2d, Module, ModuleList, MSELoss, NLLLoss, Parameter, ReLU,
                      Sequential, Sigmoid, SiLU, Softmax, Tanh)

__all__ = ["functional", "init", "Module", "Parameter", "Sequential", "ModuleList", "Identity", "Linear", "Conv2d",
           "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "LayerNorm", "BatchNorm1d", "BatchNorm2d", "Embedding",
           "Dropout", "Flatten", "ReLU", "LeakyReLU", "GELU", "SiLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax",
           "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "BCEWithLogitsLoss"]
