"""Counter-based random numbers: Philox-4x32-10 known answers, determinism per seed, the same bits on
re-run, distribution moments, and generation inside the kernels that use the numbers."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import lazytensor as lt
from conftest import sized
from lazytensor.kernels.philox import philox_reference
from lazytensor.random import philox

# a fresh process on the CPU: the default device there needs no test-registered storage
CPU_ENV = {k: v for k, v in os.environ.items() if k != "LT_DEVICE"}

# Random123's known-answer tests for Philox-4x32-10: (counter, key, output)
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def test_reference_philox_known_answers():
    for counter, key, expected in KAT:
        assert philox_reference(counter, key) == expected


def test_kernel_philox_known_answers():
    counters = [lt.asarray([c[i] for c, _, _ in KAT]) for i in range(4)]
    keys = [lt.asarray([k[i] for _, k, _ in KAT]) for i in range(2)]
    words = philox(tuple(counters), tuple(keys))
    got = np.stack([w.numpy() for w in lt.realize(*words)], 1)
    np.testing.assert_array_equal(got, np.array([e for _, _, e in KAT], dtype=np.int64))


def test_rand_is_philox_of_the_element_index():
    lt.manual_seed(1234)
    got = lt.rand(5).numpy()
    seed = 1234
    words = [philox_reference((i, 0, 0, 0), (seed & 0xFFFFFFFF, seed >> 32))[0] for i in range(5)]
    np.testing.assert_array_equal(got, np.array([(w >> 8) * 2.0 ** -24 for w in words], np.float32))


def test_same_seed_same_bits_and_new_draws_differ():
    lt.manual_seed(7)
    a, b = lt.rand(100).numpy(), lt.randn(3, 4).numpy()
    c = lt.randint(0, 10, (50,)).numpy()
    lt.manual_seed(7)
    np.testing.assert_array_equal(lt.rand(100).numpy(), a)
    np.testing.assert_array_equal(lt.randn(3, 4).numpy(), b)
    np.testing.assert_array_equal(lt.randint(0, 10, (50,)).numpy(), c)
    assert not np.array_equal(lt.rand(100).numpy(), a)  # the next call takes the next offset
    lt.manual_seed(8)
    assert not np.array_equal(lt.rand(100).numpy(), a)


def test_same_bits_in_a_fresh_process():
    code = ("import lazytensor as lt; lt.manual_seed(99); "
            "print(lt.rand(4).numpy().tobytes().hex(), lt.randint(0, 1000, (4,)).numpy().tolist())")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=CPU_ENV).stdout
            for _ in range(2)]
    lt.manual_seed(99)
    here = f"{lt.rand(4).numpy().tobytes().hex()} {lt.randint(0, 1000, (4,)).numpy().tolist()}\n"
    assert runs[0] == runs[1] == here


def test_new_draws_do_not_recompile():
    lt.manual_seed(0)
    lt.rand(64).realize()
    compiled = lt.stats().kernels_compiled
    for s in range(3):
        lt.manual_seed(s)
        lt.rand(64).realize()
        lt.rand(64).realize()
    assert lt.stats().kernels_compiled == compiled


def test_uniform_moments_and_range():
    lt.manual_seed(0)
    for dtype in (lt.float32, lt.float64):
        u = lt.rand(200_000, dtype=dtype).numpy()
        assert u.dtype == np.dtype(dtype.name)
        assert u.min() >= 0.0 and u.max() < 1.0
        assert abs(u.mean() - 0.5) < 0.005
        assert abs(u.var() - 1 / 12) < 0.002
        hist = np.histogram(u, bins=10, range=(0, 1))[0] / u.size
        assert np.all(np.abs(hist - 0.1) < 0.005)


def test_normal_moments():
    lt.manual_seed(1)
    z = lt.randn(200_000).numpy().astype(np.float64)
    assert abs(z.mean()) < 0.01
    assert abs(z.var() - 1) < 0.01
    assert abs((z ** 3).mean()) < 0.03           # skewness
    assert abs((z ** 4).mean() - 3) < 0.06       # kurtosis
    assert abs((np.abs(z) < 1).mean() - 0.6827) < 0.005
    assert np.isfinite(z).all()


def test_randint_range_and_uniformity():
    lt.manual_seed(2)
    k = lt.randint(-3, 7, (100_000,)).numpy()
    assert k.dtype == np.int64 and k.min() == -3 and k.max() == 6
    counts = np.bincount(k + 3) / k.size
    assert np.all(np.abs(counts - 0.1) < 0.005)
    wide = lt.randint(0, 1 << 40, (1000,)).numpy()
    assert wide.min() >= 0 and wide.max() < 1 << 40 and wide.max() > 1 << 39
    assert lt.randint(5, size=(3,), dtype=lt.int32).dtype == lt.int32


def test_randperm_is_a_permutation():
    lt.manual_seed(3)
    p = lt.randperm(50).numpy()
    assert sorted(p.tolist()) == list(range(50))
    assert p.tolist() != list(range(50))


@pytest.mark.parametrize("n", sized([200_000], [5000]))
def test_randperm_of_a_dataset_is_the_sorted_order_of_its_keys(n):
    """A dataset's shuffle (200000 rows; 5000, several blocks of the GPU's sort, under Triton's interpreter): the
    positions of as many random keys in stable sorted order, the keys drawn as randint draws them (an all-pairs
    ranking took seconds at 60000)."""
    lt.manual_seed(5)
    keys = lt.randint(0, 1 << 62, (n,)).numpy()
    lt.manual_seed(5)
    p = lt.randperm(n, dtype=lt.int32)
    assert p.dtype == lt.int32
    np.testing.assert_array_equal(p.numpy(), np.argsort(keys, kind="stable"))


def test_random_numbers_are_made_inside_the_kernel_that_uses_them():
    lt.manual_seed(0)
    x = lt.asarray(np.ones(1000, np.float32))
    assert len(lt.schedule(lt.rand(1000) * 2 + x)) == 1
    assert len(lt.schedule(lt.randn(1000) + x)) == 1
    kept_sum = lt.nn.functional.dropout(x, 0.3).sum()  # outside the assert, whose rewriting would hold the mask
    assert len(lt.schedule(kept_sum)) == 1


def test_a_draw_records_a_few_graph_nodes():
    """Philox's rounds (PHILOX_OPS integer ops) are expanded where a kernel computes them, not recorded node
    by node: a draw records its counter, its key and the conversion to floats, a few dozen nodes."""
    from lazytensor.graph import Op, toposort
    from lazytensor.kernels.philox import PHILOX_OPS
    lt.manual_seed(0)
    nodes = toposort([lt.rand(1000).node])
    assert len(nodes) < 40 < PHILOX_OPS and sum(n.op is Op.PHILOX for n in nodes) == 1


def test_dropout_mask():
    lt.manual_seed(5)
    x = lt.asarray(np.ones((200, 500), np.float32))
    y = lt.nn.functional.dropout(x, 0.25).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.01
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert lt.nn.functional.dropout(x, 0.25, training=False) is x


def test_rand_arguments():
    assert lt.rand(2, 3).shape == (2, 3) and lt.rand((4,)).shape == (4,) and lt.rand().shape == ()
    assert lt.randn(2, dtype=lt.float64).dtype == lt.float64
    with pytest.raises(TypeError):
        lt.rand(3, dtype=lt.int32)
    with pytest.raises(ValueError):
        lt.randint(5, 5, (2,))


@pytest.mark.parametrize("make", [lambda: lt.randn(3, 2, requires_grad=True), lambda: lt.rand(4, requires_grad=True),
                                  lambda: lt.randn_like(lt.zeros(2, 2), requires_grad=True),
                                  lambda: lt.random.normal(0.0, 2.0, (3,), requires_grad=True)])
def test_random_factories_take_pytorchs_requires_grad(make):
    x = make()
    assert x.requires_grad
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(x.shape, 2.0, np.float32))


def test_multinomial_draws_in_proportion_and_never_a_weight_of_zero():
    """With replacement: frequencies within 4 standard errors of the weights' proportions (fixed seed); without:
    distinct indices, never one of weight 0, and the first draw in proportion too; 1-d and 2-d as PyTorch's."""
    lt.manual_seed(11)
    weights = np.array([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 0.0, 2.0]])
    n = 4000
    drawn = lt.multinomial(lt.asarray(weights), n, replacement=True)
    assert drawn.dtype == lt.int64 and drawn.shape == (2, n)
    p = weights / weights.sum(1, keepdims=True)
    for row, probs in zip(drawn.numpy(), p):
        freq = np.bincount(row, minlength=4) / n
        assert np.all(np.abs(freq - probs) <= 4 * np.sqrt(probs * (1 - probs) / n))
    firsts = []
    for _ in range(300):
        rows = lt.asarray(weights).multinomial(3).numpy()
        assert all(len(set(r)) == 3 for r in rows)
        assert 1 not in rows[0] and 2 not in rows[1]
        firsts.append(rows[0, 0])
    freq = np.bincount(firsts, minlength=4) / 300
    assert np.all(np.abs(freq - p[0]) <= 4 * np.sqrt(p[0] * (1 - p[0]) / 300))
    one = lt.multinomial(lt.asarray(np.array([0.0, 0.0, 5.0])), 1)
    assert one.shape == (1,) and one.numpy().tolist() == [2]


def test_multinomial_errors_are_pytorchs():
    with pytest.raises(lt.ShapeError, match="cannot draw 4 samples from 3 categories without replacement"):
        lt.multinomial(lt.asarray(np.ones(3)), 4)
    for bad in ([0.0, 1.0, 0.0], [1.0, -1.0, 2.0], [0.0, 0.0, 0.0], [1.0, np.inf, 1.0]):
        with pytest.raises(IndexError, match="multinomial: the weights of a row must be finite"):
            lt.multinomial(lt.asarray(np.array(bad)), 2).numpy()
    with pytest.raises(lt.DTypeError):
        lt.multinomial(lt.asarray(np.array([1, 2])), 1)


def test_bernoulli_as_pytorchs_draws_zeros_and_ones_in_the_inputs_dtype():
    lt.manual_seed(12)
    p = lt.asarray(np.linspace(0, 1, 5).astype(np.float32)).broadcast_to((2000, 5))
    draws = lt.bernoulli(p)
    assert draws.dtype == lt.float32
    values = draws.numpy()
    assert set(np.unique(values)) <= {0.0, 1.0}
    np.testing.assert_array_equal(values[:, 0], 0)
    np.testing.assert_array_equal(values[:, -1], 1)
    assert np.all(np.abs(values.mean(0) - np.linspace(0, 1, 5)) < 0.04)
    half = lt.zeros(1000, dtype=lt.float64).bernoulli(0.25).numpy()
    assert abs(half.mean() - 0.25) < 0.06


def _draws(generator):
    """One draw of every function that takes `generator=`, as NumPy arrays."""
    t = lt.zeros(6)
    weights = lt.asarray(np.array([[1.0, 2.0, 3.0, 0.0]]))
    return [lt.rand(4, generator=generator), lt.randn(4, dtype=lt.float64, generator=generator),
            lt.randint(0, 100, (4,), generator=generator), lt.randperm(7, generator=generator),
            lt.normal(1.0, 2.0, (3,), generator=generator), lt.random.uniform(-1.0, 1.0, (3,), generator=generator),
            lt.random.bernoulli(0.5, (5,), generator=generator), lt.multinomial(weights, 2, generator=generator),
            lt.ones(3).bernoulli(0.5, generator=generator), t.uniform_(generator=generator) * 1,
            t.normal_(generator=generator) * 1, t.exponential_(generator=generator) * 1,
            t.random_(10, generator=generator) * 1, t.bernoulli_(0.5, generator=generator) * 1,
            lt.nn.init.kaiming_uniform_(lt.zeros(3, 4), generator=generator) * 1,
            lt.nn.init.orthogonal_(lt.zeros(3, 3), generator=generator) * 1]


def test_a_generator_is_a_stream_of_its_own():
    """Two generators of one seed draw the same numbers, and drawing from one leaves the default stream alone
    (PyTorch's `torch.Generator`); `manual_seed` returns the generator, `get_state`/`set_state` repeat draws."""
    lt.manual_seed(3)
    default_only = lt.rand(5).numpy()
    g = lt.Generator().manual_seed(42)
    lt.manual_seed(3)
    ours = [d.numpy() for d in _draws(g)]
    np.testing.assert_array_equal(lt.rand(5).numpy(), default_only)
    again = [d.numpy() for d in _draws(lt.Generator().manual_seed(42))]
    for a, b in zip(ours, again):
        np.testing.assert_array_equal(a, b)
    other = [d.numpy() for d in _draws(lt.Generator().manual_seed(43))]
    assert not np.array_equal(ours[0], other[0]) and not np.array_equal(ours[1], other[1])
    state = g.get_state()
    first = lt.randn(3, generator=g).numpy()
    np.testing.assert_array_equal(lt.randn(3, generator=g.set_state(state)).numpy(), first)
    assert g.initial_seed() == 42 and isinstance(lt.manual_seed(5), lt.Generator) and lt.initial_seed() == 5
    assert isinstance(lt.Generator().seed(), int)


def test_data_utilities_take_a_generator_as_pytorchs_tutorials_pass_one():
    data = lt.utils.data.TensorDataset(lt.arange(10))
    splits = [lt.utils.data.random_split(data, [0.8, 0.2], generator=lt.Generator().manual_seed(42))
              for _ in range(2)]
    assert splits[0][0].indices == splits[1][0].indices and len(splits[0][1]) == 2
    orders = [[int(b[0][0]) for b in lt.utils.data.DataLoader(data, batch_size=1, shuffle=True,
                                                              generator=lt.Generator().manual_seed(7))]
              for _ in range(2)]
    assert orders[0] == orders[1] and sorted(orders[0]) == list(range(10))


def test_a_generator_inside_jit_is_an_error():
    g = lt.Generator().manual_seed(1)

    @lt.jit
    def noisy(x):
        return x + lt.rand(x.shape, generator=g)
    with pytest.raises(lt.JitError, match="generator="):
        noisy(lt.zeros(3))


def test_randint_takes_pytorchs_high_and_size_form():
    """`torch.randint(high, size)` (nanoGPT's `randint(len(data) - block, (batch,))`) as randint(0, high, size)."""
    lt.manual_seed(2)
    a = lt.randint(10, (500,)).numpy()
    lt.manual_seed(2)
    np.testing.assert_array_equal(a, lt.randint(0, 10, (500,)).numpy())
    assert a.shape == (500,) and a.min() == 0 and a.max() == 9 and lt.randint(5, [2, 3]).shape == (2, 3)


def test_default_rng_is_numpys_generator_api_with_numpys_dtypes():
    """`rng = np.random.default_rng(seed)` written with lt (the NumPy tutorials' style): NumPy's methods, dtypes and
    shapes; the numbers are lazytensor's, repeated by the seed."""
    rng, ref = lt.random.default_rng(0), np.random.default_rng(0)
    for ours, theirs in ((rng.random(3), ref.random(3)), (rng.random((2, 2), dtype=np.float32),
                                                          ref.random((2, 2), dtype=np.float32)),
                         (rng.integers(5, size=4), ref.integers(5, size=4)),
                         (rng.integers(0, 256, (2, 3), dtype=np.uint8), ref.integers(0, 256, (2, 3), dtype=np.uint8)),
                         (rng.standard_normal((3,)), ref.standard_normal((3,))),
                         (rng.normal([0.0, 10.0], 2.0), ref.normal([0.0, 10.0], 2.0)),
                         (rng.uniform(-1, 1, (2, 0)), ref.uniform(-1, 1, (2, 0))),
                         (rng.exponential(2.0, 4), ref.exponential(2.0, 4)),
                         (rng.random(), np.asarray(ref.random())),
                         (rng.choice(5, (2, 3)), ref.choice(5, (2, 3))),
                         (rng.permutation(np.ones((4, 2), np.float32)), ref.permutation(np.ones((4, 2), np.float32)))):
        assert ours.shape == theirs.shape and ours.dtype == lt.dtypes.to_dtype(theirs.dtype), (ours, theirs)
    assert np.array_equal(lt.random.default_rng(7).random(5).numpy(), lt.random.default_rng(7).random(5).numpy())
    assert not np.array_equal(lt.random.default_rng(7).random(5).numpy(), lt.random.default_rng(8).random(5).numpy())
    assert lt.random.default_rng(rng) is rng


def test_default_rng_draws_in_range_and_in_distribution():
    rng = lt.random.default_rng(3)
    k = rng.integers(-2, 2, size=40_000, endpoint=True).numpy()
    assert k.min() == -2 and k.max() == 2 and np.all(np.abs(np.bincount(k + 2) / k.size - 0.2) < 0.01)
    u = rng.uniform(2.0, 5.0, 100_000).numpy()
    assert u.min() >= 2.0 and u.max() < 5.0 and abs(u.mean() - 3.5) < 0.02
    z = rng.normal(lt.asarray([-3.0, 4.0]), lt.asarray([0.5, 2.0]), size=(50_000, 2)).numpy()
    np.testing.assert_allclose(z.mean(0), [-3.0, 4.0], atol=0.03)
    np.testing.assert_allclose(z.std(0), [0.5, 2.0], rtol=0.02)
    e = rng.exponential(3.0, 100_000).numpy()
    assert e.min() >= 0 and abs(e.mean() - 3.0) < 0.05
    counts = np.bincount(rng.choice(3, 30_000, p=[0.2, 0.0, 0.8]).numpy(), minlength=3) / 30_000
    assert counts[1] == 0 and abs(counts[0] - 0.2) < 0.015


def test_default_rng_permutes_shuffles_and_chooses_without_replacement():
    rng = lt.random.default_rng(4)
    assert sorted(rng.permutation(20).tolist()) == list(range(20))
    rows = np.arange(12).reshape(6, 2)
    permuted = rng.permutation(rows).numpy()
    assert sorted(map(tuple, permuted)) == sorted(map(tuple, rows)) and permuted.shape == (6, 2)
    cols = rng.permutation(rows, axis=1).numpy()
    assert all(sorted(c) == sorted(r) for c, r in zip(cols.tolist(), rows.tolist()))
    assert rng.permutation(lt.zeros((0, 3))).shape == (0, 3)
    x = lt.arange(10.0)
    view = x[2:]
    rng.shuffle(view)  # in place, through a view, as NumPy's shuffle of a slice
    assert x[:2].tolist() == [0.0, 1.0] and sorted(x.tolist()) == list(range(10))
    picked = rng.choice(lt.arange(30) * 10, 30, replace=False).numpy()
    assert sorted(picked.tolist()) == list(range(0, 300, 10))
    weighted = rng.choice(4, 2, replace=False, p=[0.5, 0.5, 0.0, 0.0]).numpy()
    assert sorted(weighted.tolist()) == [0, 1]
    assert rng.choice(np.arange(6).reshape(3, 2), 4, axis=1).shape == (3, 4)
    with pytest.raises(ValueError, match="without replacement"):
        rng.choice(3, 4, replace=False)
    with pytest.raises(lt.ShapeError, match="length 3"):
        rng.choice(3, p=[0.5, 0.5])


def test_numpys_module_functions_draw_from_the_default_stream():
    lt.manual_seed(9)
    a = (lt.random.random(4).numpy(), lt.random.permutation(5).numpy(), lt.random.choice(7, 3).numpy())
    lt.random.seed(9)  # NumPy's np.random.seed
    b = (lt.random.random(4).numpy(), lt.random.permutation(5).numpy(), lt.random.choice(7, 3).numpy())
    assert all(np.array_equal(p, q) for p, q in zip(a, b)) and a[0].dtype == np.float64
