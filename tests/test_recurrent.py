"""nn.RNN, nn.LSTM and nn.GRU against torch.nn's, from the same state dict: outputs, final states and gradients,
layers, directions, batch_first, unbatched input and given initial states."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import check, random_array
from lazytensor import nn

pytestmark = pytest.mark.fast

CONFIGS = [{}, {"num_layers": 2}, {"bidirectional": True}, {"batch_first": True, "num_layers": 2,
                                                                     "bidirectional": True}, {"bias": False}]


def pair(kind: str, config: dict, dtype: lt.DType):
    ours = getattr(nn, kind)(4, 5, **config, dtype=dtype)
    theirs = getattr(torch.nn, kind)(4, 5, **config, dtype=torch.float64 if dtype == lt.float64 else torch.float32)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    return ours, theirs


def flat(out):
    return [out[0], *(out[1] if isinstance(out[1], tuple) else (out[1],))]


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize(("config", "dtype"), [(c, lt.float64) for c in CONFIGS] + [(CONFIGS[3], lt.float32)],
                         ids=str)
def test_matches_torch_with_gradients(kind, config, dtype):
    ours, theirs = pair(kind, config, dtype)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    shape = (2, 3, 4) if config.get("batch_first") else (3, 2, 4)
    a = random_array(shape, dtype, 1)
    x, t = lt.asarray(a).requires_grad_(), torch.tensor(a, requires_grad=True)
    got, want = flat(ours(x)), flat(theirs(t))
    for g, w in zip(got, want):
        check(g, w.detach(), rtol=1e-4 if dtype == lt.float32 else None, atol=1e-5 if dtype == lt.float32 else None)
    sum(((g * (k + 1)) ** 2).sum() for k, g in enumerate(got)).backward()
    sum(((w * (k + 1)) ** 2).sum() for k, w in enumerate(want)).backward()
    check(x.grad, t.grad, rtol=1e-4 if dtype == lt.float32 else None, atol=1e-5 if dtype == lt.float32 else None)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        check(p.grad, q.grad, rtol=1e-4 if dtype == lt.float32 else None, atol=1e-5 if dtype == lt.float32 else None)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("config", [{"num_layers": 2, "bidirectional": True}, {"batch_first": True}], ids=str)
def test_packed_sequences_match_torch_with_gradients(kind, config):
    """Outputs zero past each length, h_n at each sequence's last step (the reverse direction starts there),
    the batch unsorted (enforce_sorted=False) and an initial state in its order; gradients through the packing."""
    ours, theirs = pair(kind, config, lt.float64)
    first = config.get("batch_first", False)
    lengths = [2, 4, 1]
    a = random_array((3, 4, 4) if first else (4, 3, 4), lt.float64, 4)
    h = random_array((ours.num_layers * (2 if ours.bidirectional else 1), 3, 5), lt.float64, 5)
    hx, thx = ((lt.asarray(h), lt.asarray(h * 0.5)), (torch.tensor(h), torch.tensor(h * 0.5))) if kind == "LSTM" \
        else (lt.asarray(h), torch.tensor(h))
    x, t = lt.asarray(a).requires_grad_(), torch.tensor(a, requires_grad=True)
    rnn, trnn = nn.utils.rnn, torch.nn.utils.rnn
    packed = rnn.pack_padded_sequence(x, lengths, batch_first=first, enforce_sorted=False)
    tpacked = trnn.pack_padded_sequence(t, torch.tensor(lengths), batch_first=first, enforce_sorted=False)
    check(packed.data, tpacked.data.detach())
    for mine, torchs in zip(packed[1:], tpacked[1:]):
        np.testing.assert_array_equal(mine, torchs.numpy())
    out, state = ours(packed, hx)
    tout, tstate = theirs(tpacked, thx)
    (padded, lens), (tpadded, tlens) = (rnn.pad_packed_sequence(out, first, -1.0, 5),
                                        trnn.pad_packed_sequence(tout, first, -1.0, 5))
    check(lens, tlens)
    got, want = [padded, *flat((None, state))[1:]], [tpadded, *flat((None, tstate))[1:]]
    for g, w in zip(got, want):
        check(g, w.detach())
    sum(((g * (k + 1)) ** 2).sum() for k, g in enumerate(got)).backward()
    sum(((w * (k + 1)) ** 2).sum() for k, w in enumerate(want)).backward()
    check(x.grad, t.grad)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        check(p.grad, q.grad)


def test_packing_sorted_and_errors():
    a = random_array((3, 2, 2), lt.float32, 6)
    packed = nn.utils.rnn.pack_padded_sequence(lt.asarray(a), [3, 1])
    tpacked = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(a), torch.tensor([3, 1]))
    check(packed.data, tpacked.data)
    assert packed.sorted_indices is None and tpacked.sorted_indices is None
    check(nn.utils.rnn.pad_packed_sequence(packed)[0], torch.nn.utils.rnn.pad_packed_sequence(tpacked)[0])
    with pytest.raises(ValueError, match="decreasing"):
        nn.utils.rnn.pack_padded_sequence(lt.asarray(a), [1, 3])
    with pytest.raises(ValueError, match="lengths in"):
        nn.utils.rnn.pack_padded_sequence(lt.asarray(a), [4, 1])


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_unbatched_input_and_initial_states(kind):
    ours, theirs = pair(kind, {"num_layers": 2}, lt.float64)
    a = random_array((3, 4), lt.float64, 2)
    h = random_array((2, 5), lt.float64, 3)
    hx = (lt.asarray(h), lt.asarray(h * 0.5)) if kind == "LSTM" else lt.asarray(h)
    thx = (torch.tensor(h), torch.tensor(h * 0.5)) if kind == "LSTM" else torch.tensor(h)
    for g, w in zip(flat(ours(lt.asarray(a), hx)), flat(theirs(torch.tensor(a), thx))):
        check(g, w.detach())
    with pytest.raises(ValueError, match="expected"):
        ours(lt.asarray(random_array((3, 2, 4), lt.float64)), hx)


def test_relu_rnn_and_a_zero_length_sequence():
    ours, theirs = pair("RNN", {"nonlinearity": "relu"}, lt.float32)
    a = random_array((4, 2, 4), lt.float32, 5)
    for g, w in zip(flat(ours(lt.asarray(a))), flat(theirs(torch.tensor(a)))):
        check(g, w.detach())
    out, h = nn.GRU(4, 5)(lt.zeros((0, 2, 4)))
    assert out.shape == (0, 2, 5) and h.shape == (1, 2, 5) and not np.any(h.numpy())


@pytest.mark.parametrize(("kind", "config"), [(kind, config) for kind in ("RNNCell", "LSTMCell", "GRUCell")
                                               for config in ({}, {"bias": False})] + [("RNNCell", {"nonlinearity": "relu"})],
                         ids=str)
def test_cells_match_torch_over_steps_with_gradients(kind, config):
    """A cell stepped by hand over a sequence (as tutorials write it), from the same state dict: the states at
    every step and the gradients of inputs and parameters; unbatched input, a given state, a wrong state."""
    ours = getattr(nn, kind)(4, 5, **config, dtype=lt.float64)
    theirs = getattr(torch.nn, kind)(4, 5, **config, dtype=torch.float64)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    a = random_array((3, 2, 4), lt.float64, 4)
    x, t = lt.asarray(a).requires_grad_(), torch.tensor(a, requires_grad=True)
    state, tstate, total, ttotal = None, None, 0, 0
    for step in range(3):
        state, tstate = ours(x[step], state), theirs(t[step], tstate)
        h, th = (state[0], tstate[0]) if kind == "LSTMCell" else (state, tstate)
        check(h, th.detach())
        total, ttotal = total + (h * (step + 1)).sum(), ttotal + (th * (step + 1)).sum()
    total.backward()
    ttotal.backward()
    check(x.grad, t.grad)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        check(p.grad, q.grad)
    h0 = random_array((5,), lt.float64, 5)
    given = (lt.asarray(h0), lt.asarray(h0 * 2)) if kind == "LSTMCell" else lt.asarray(h0)
    tgiven = (torch.tensor(h0), torch.tensor(h0 * 2)) if kind == "LSTMCell" else torch.tensor(h0)
    got, want = ours(lt.asarray(a[0, 0]), given), theirs(torch.tensor(a[0, 0]), tgiven)
    for g, w in zip(got if kind == "LSTMCell" else (got,), want if kind == "LSTMCell" else (want,)):
        check(g, w.detach())
    with pytest.raises(ValueError, match="state of shape"):
        ours(lt.asarray(a[0]), (lt.zeros(3, 5), lt.zeros(3, 5)) if kind == "LSTMCell" else lt.zeros(3, 5))
