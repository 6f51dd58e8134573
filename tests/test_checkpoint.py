"""`lt.save` / `lt.load` in the safetensors format: round trips of every dtype, files that safetensors' own
PyTorch loader and writer read and write, a model moved between lazytensor and PyTorch, and damaged files."""
from __future__ import annotations

import numpy as np
import pytest
import safetensors.torch as safetensors_torch
import torch

import lazytensor as lt
from conftest import ALL_DTYPES, HALF_DTYPES, TORCH_DTYPES, WIDE_UNSIGNED_DTYPES, check, random_array

pytestmark = pytest.mark.fast


@pytest.mark.parametrize("dtype", ALL_DTYPES + HALF_DTYPES + WIDE_UNSIGNED_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3, 4)])
def test_round_trips_and_torch_reads_it(tmp_path, dtype, shape):
    x = lt.asarray(random_array(shape, lt.float32 if dtype in HALF_DTYPES else dtype, 1)).astype(dtype)
    view = x.T if x.ndim > 1 else x  # a view is written as its values
    lt.save({"x": x, "v": view}, tmp_path / "a.safetensors")
    back = lt.load(tmp_path / "a.safetensors")
    assert set(back) == {"x", "v"}
    np.testing.assert_array_equal(back["x"]._host_bits(), x._host_bits())
    np.testing.assert_array_equal(back["v"]._host_bits(), view._host_bits())
    assert back["x"].dtype == dtype and back["v"].shape == view.shape
    if dtype not in WIDE_UNSIGNED_DTYPES or dtype == lt.uint16:
        theirs = safetensors_torch.load_file(str(tmp_path / "a.safetensors"))
        assert theirs["x"].dtype == TORCH_DTYPES[dtype]
        np.testing.assert_array_equal(back["x"].float().numpy() if dtype in HALF_DTYPES else back["x"].numpy(),
                                      theirs["x"].float().numpy() if dtype in HALF_DTYPES else theirs["x"].numpy())


def test_a_single_tensor_loads_as_a_tensor(tmp_path):
    x = lt.asarray(np.arange(6.0).reshape(2, 3))
    lt.save(x, tmp_path / "t.safetensors", metadata={"note": "hello"})
    back = lt.load(tmp_path / "t.safetensors")
    assert isinstance(back, lt.Tensor)
    np.testing.assert_array_equal(back.numpy(), x.numpy())


def test_a_model_moves_between_lazytensor_and_pytorch(tmp_path):
    ours = lt.nn.Sequential(lt.nn.Linear(5, 7), lt.nn.ReLU(), lt.nn.Linear(7, 3))
    lt.save(ours.state_dict(), tmp_path / "model.safetensors")
    theirs = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))
    theirs.load_state_dict(safetensors_torch.load_file(str(tmp_path / "model.safetensors")))
    x = random_array((4, 5), lt.float32)
    check(ours(lt.asarray(x)), theirs(torch.tensor(x)))
    with torch.no_grad():
        for p in theirs.parameters():
            p.mul_(0.5)
    safetensors_torch.save_file(theirs.state_dict(), str(tmp_path / "back.safetensors"))
    ours.load_state_dict(lt.load(tmp_path / "back.safetensors"))
    check(ours(lt.asarray(x)), theirs(torch.tensor(x)))


@pytest.mark.parametrize("damage", ["empty", "huge header", "not json", "short data", "bad dtype", "bad shape"])
def test_a_damaged_file_is_a_value_error(tmp_path, damage):
    path = tmp_path / "d.safetensors"
    lt.save({"x": lt.asarray(np.arange(10, dtype=np.int32))}, path)
    data = path.read_bytes()
    size = int.from_bytes(data[:8], "little")
    header = data[8:8 + size]
    path.write_bytes({"empty": b"",
                      "huge header": (10**12).to_bytes(8, "little") + data[8:],
                      "not json": data[:8] + b"{" * size + data[8 + size:],
                      "short data": data[:-4],
                      "bad dtype": data[:8] + header.replace(b'"I32"', b'"Q32"') + data[8 + size:],
                      "bad shape": data[:8] + header.replace(b"[10]", b"[11]") + data[8 + size:]}[damage])
    with pytest.raises(ValueError, match="load"):
        lt.load(path)


def test_a_general_checkpoint_round_trips_as_the_pytorch_tutorial_writes_it(tmp_path):
    """torch.save({"epoch", "model_state_dict", "optimizer_state_dict", "loss"}) of PyTorch's "saving and loading a
    general checkpoint", as lt.save: the structure comes back, and training resumes where it stopped."""
    x = random_array((8, 5), lt.float32, 2)
    model = lt.nn.Sequential(lt.nn.Linear(5, 7), lt.nn.ReLU(), lt.nn.Linear(7, 3))
    optimizer = lt.optim.Adam(model.parameters(), lr=0.01)

    def step(m, o):
        o.zero_grad()
        loss = m(lt.asarray(x)).square().mean()
        loss.backward()
        o.step()
        return loss.item()
    loss = step(model, optimizer)
    checkpoint = {"epoch": 5, "model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict(),
                  "loss": loss, "notes": ("adam", None, True, [1.5, float("inf")], {2: "two", None: np.float64(0.25)})}
    lt.save(checkpoint, tmp_path / "ckpt.safetensors")
    back = lt.load(tmp_path / "ckpt.safetensors", weights_only=True, map_location="cpu")
    assert back["epoch"] == 5 and back["loss"] == loss
    assert back["notes"] == ("adam", None, True, [1.5, float("inf")], {2: "two", None: 0.25})
    assert back["optimizer_state_dict"]["param_groups"] == optimizer.state_dict()["param_groups"]
    assert set(safetensors_torch.load_file(str(tmp_path / "ckpt.safetensors"))) >= {
        "model_state_dict.0.weight", "optimizer_state_dict.state.0.exp_avg"}  # other readers see the tensors
    resumed = lt.nn.Sequential(lt.nn.Linear(5, 7), lt.nn.ReLU(), lt.nn.Linear(7, 3))
    resumed_optimizer = lt.optim.Adam(resumed.parameters(), lr=0.01)
    resumed.load_state_dict(back["model_state_dict"])
    resumed_optimizer.load_state_dict(back["optimizer_state_dict"])
    assert step(resumed, resumed_optimizer) == step(model, optimizer)
    for mine, theirs in zip(resumed.parameters(), model.parameters()):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_only_tensors_and_plain_values(tmp_path):
    with pytest.raises(TypeError, match="model is a Linear"):
        lt.save({"model": lt.nn.Linear(2, 2)}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="keys"):
        lt.save({(1, 2): lt.ones(2)}, tmp_path / "x.safetensors")
    lt.save({"x": lt.ones(2)}, tmp_path / "x.safetensors", metadata={"lazytensor.tree": '{"tensor": "y"}'})
    with pytest.raises(ValueError, match="malformed checkpoint"):
        lt.load(tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="device or map_location"):
        lt.load(tmp_path / "x.safetensors", "cpu", map_location="cpu")
