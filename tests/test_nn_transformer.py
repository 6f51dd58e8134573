"""PyTorch's transformer layers (`lazytensor/nn/transformer.py`): a torch model's state_dict loads into ours and
both give the same outputs and gradients, post-norm and pre-norm, batch-first or not, with causal and padding
masks."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import check
from lazytensor import nn


def _load(ours, theirs):
    ours.load_state_dict({k: lt.asarray(v.detach().numpy()) for k, v in theirs.state_dict().items()})


@pytest.mark.parametrize("batch_first, norm_first, activation",
                         [(False, False, "relu"), (True, True, "gelu"), (True, False, torch.nn.functional.silu)])
def test_an_encoder_matches_pytorchs(batch_first, norm_first, activation):
    torch.manual_seed(0)
    ours_activation = nn.functional.silu if callable(activation) else activation
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(
        16, 4, 32, dropout=0.0, activation=activation, batch_first=batch_first, norm_first=norm_first), 1,
        enable_nested_tensor=False)
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(
        16, 4, 32, dropout=0.0, activation=ours_activation, batch_first=batch_first, norm_first=norm_first), 1)
    _load(ours, theirs)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    x = torch.randn(3, 5, 16, requires_grad=True)
    seq, batch = (5, 3) if batch_first else (3, 5)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(seq)
    pad = torch.zeros(batch, seq, dtype=torch.bool)
    pad[0, -1] = True
    want = theirs(x, mask=mask, src_key_padding_mask=pad)
    xl = lt.asarray(x.detach().numpy()).requires_grad_()
    got = ours(xl, mask=nn.Transformer.generate_square_subsequent_mask(seq), src_key_padding_mask=lt.asarray(pad.numpy()))
    check(got, want.detach().numpy(), rtol=1e-4, atol=1e-5)
    (want * want).sum().backward()
    (got * got).sum().backward()
    check(xl.grad, x.grad.numpy(), rtol=1e-3, atol=1e-4)
    check(ours.layers[0].linear1.weight.grad, theirs.layers[0].linear1.weight.grad.numpy(), rtol=1e-3, atol=1e-4)


def test_a_transformer_matches_pytorchs():
    torch.manual_seed(1)
    theirs = torch.nn.Transformer(16, 4, 1, 1, 32, dropout=0.0, batch_first=True)
    ours = nn.Transformer(16, 4, 1, 1, 32, dropout=0.0, batch_first=True)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    _load(ours, theirs)
    src, tgt = torch.randn(2, 7, 16), torch.randn(2, 5, 16)
    memory_pad = torch.zeros(2, 7, dtype=torch.bool)
    memory_pad[1, 5:] = True
    want = theirs(src, tgt, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(5),
                  memory_key_padding_mask=memory_pad)
    got = ours(lt.asarray(src.numpy()), lt.asarray(tgt.numpy()), tgt_mask=nn.Transformer.generate_square_subsequent_mask(5),
               memory_key_padding_mask=lt.asarray(memory_pad.numpy()))
    check(got, want.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_layers_of_a_stack_are_independent_copies_and_training_drops_out():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    stack = nn.TransformerEncoder(layer, 2)
    weights = [m.linear1.weight for m in stack.layers]
    assert len({id(w) for w in weights}) == 2 and len(list(stack.parameters())) == 2 * len(list(layer.parameters()))
    check(weights[0], weights[1].numpy())
    x = lt.randn(4, 2, 8)
    assert not np.allclose(stack(x).numpy(), stack.eval()(x).numpy())
    check(nn.Transformer.generate_square_subsequent_mask(3),
          torch.nn.Transformer.generate_square_subsequent_mask(3).numpy())
    with pytest.raises(ValueError, match="activation"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
