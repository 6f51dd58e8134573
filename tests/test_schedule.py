"""The fusion contract, asserted as kernel counts (see the rules in lazytensor/schedule.py)."""
from __future__ import annotations

import gc
import importlib
import threading
import weakref

import numpy as np
import pytest
import torch
from test_threads import in_threads

import lazytensor as lt
from conftest import check, random_array
from lazytensor import graph
from lazytensor.device import get_device
from lazytensor.graph import is_held
from lazytensor.kernels.ir import Alu, Contraction
from lazytensor.schedule import MAX_FUSED_OPS

pytestmark = pytest.mark.fast  # the edit-test tier (pyproject.toml)


def kernels(*tensors: lt.Tensor) -> int:
    return len(lt.schedule(*tensors))


def data(*shape: int, seed: int = 0) -> lt.Tensor:
    return lt.asarray(random_array(shape, lt.float32, seed))


def test_elementwise_chain_is_one_kernel():
    x, y = data(64, 32), data(64, 32, seed=1)
    out = ((x + y) * 2 - y.exp()).sqrt().abs() / 3
    assert kernels(out) == 1


def test_composed_math_and_bit_functions_are_one_kernel():
    """The functions composed of IR ops (asin, hypot, ...) fuse like any chain, and so do those that read bits
    through a graph bitcast (its own op, computed like a cast), with what reads and follows them."""
    x, y = data(64, 32), data(64, 32, seed=1)
    outs = [(x / 3).asin() + x.hypot(y).atan2(y) * x.sinh(), x.copysign(y).nextafter(x).signbit() | (y > 0),
            (x.cast(lt.float16) * y).copysign(y).sum(1)]  # (an assert's subexpressions are held: not in one)
    assert [kernels(out) for out in outs] == [1, 1, 1]


def test_sum_of_fused_elementwise_is_one_kernel():
    x, y, z = data(1 << 12), data(1 << 12, seed=1), data(1 << 12, seed=2)
    s = (x + y * z).sum()
    assert kernels(s) == 1
    s.realize()
    assert lt.stats().kernels_launched == 1
    np.testing.assert_allclose(s.item(), (x.numpy().astype(np.float64) + y.numpy() * z.numpy()).sum(), rtol=1e-5)


def test_mean_of_squared_difference_is_one_kernel():
    a, b = data(16, 300), data(16, 300, seed=1)
    m = ((a - b) ** 2).mean(axis=1)
    assert kernels(m) == 1
    np.testing.assert_allclose(m.numpy(), ((a.numpy() - b.numpy()) ** 2).mean(axis=1), rtol=1e-5)


@pytest.mark.parametrize("view", [
    lambda x: x.T, lambda x: x[1:, ::-2], lambda x: x.flip(0), lambda x: x.pad(((1, 2), (0, 3)))[:8, :5],
    lambda x: x.reshape(4, 2, 8)[:, 1].reshape(4, 8)[:, :5].T.T, lambda x: x[:, :1].broadcast_to(8, 5),
])
def test_movement_ops_cost_no_kernel(view):
    x = data(8, 8)
    out = view(x) * 2 + 1
    assert kernels(out) == 1
    expected = view(lt.asarray(x.numpy())).numpy() * 2 + 1
    np.testing.assert_allclose(out.numpy(), expected)


def test_movement_of_a_realized_tensor_only_costs_its_consumer():
    x = data(6, 7).realize()
    assert kernels(x) == 0
    assert kernels(x.T[::2].reshape(-1)) == 1
    assert kernels(x.T.sum(0)) == 1


def test_broadcast_operand_is_index_math():
    x, b = data(32, 16), data(16, seed=1)
    assert kernels(x + b) == 1
    row_dots = (x * b).sum(1)  # built outside the assert, whose rewriting by pytest would hold x * b
    assert kernels(row_dots) == 1


def test_matmul_is_one_kernel():
    a, b = data(8, 5), data(5, 3, seed=1)
    assert kernels(a @ b) == 1
    out = (a.T.T @ b + 1).relu()
    assert kernels(out) == 1


@pytest.mark.parametrize("side", ["a", "b"])
def test_row_reduction_in_a_contraction_operand_is_realized_once(side):
    """Attention's softmax inside the second product's operand: its row max and sum are written by a kernel
    of their own, not computed again for every k the template packs (rule 1)."""
    q, k, v = data(2, 64, 16), data(2, 64, 16, seed=1), data(2, 64, 16, seed=2)
    scores = q @ k.swapaxes(-1, -2) / 8
    out = scores.softmax(-1) @ v if side == "a" else v.swapaxes(-1, -2) @ scores.softmax(-1).swapaxes(-1, -2)
    sched = lt.schedule(out)
    assert len(sched) == 3  # the scores, their rows' max and sum, the product
    assert not any(" over r" in str(item.kernel) for item in sched if isinstance(item.kernel, Contraction))
    sn = q.numpy() @ k.numpy().swapaxes(-1, -2) / 8
    p = np.exp(sn - sn.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v.numpy()
    got = out.numpy() if side == "a" else out.numpy().swapaxes(-1, -2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", [
    lambda x: x.softmax(-1), lambda x: x.log_softmax(-1), lambda x: x.logsumexp(-1), lambda x: x.var(-1),
    lambda x: x.std(-1), lambda x: (x - x.mean(-1, keepdims=True)) / (x.var(-1, keepdims=True) + 1e-5).sqrt(),
    lambda x: x.var(0),
])
def test_row_reductions_broadcast_along_trailing_axes_stay_in_one_kernel(op):
    x = data(8, 33)
    assert kernels(op(x)) == 1


def test_reduction_broadcast_along_an_outer_loop_is_realized_once():
    x = data(8, 33)
    out = x - x.mean(0)
    sched = lt.schedule(out)
    assert len(sched) == 2
    np.testing.assert_allclose(out.numpy(), x.numpy() - x.numpy().mean(0), rtol=1e-5, atol=1e-6)


def test_shared_reduction_is_computed_once_per_realize():
    x, y = data(100), data(100, seed=1)
    s = x.sum()
    a, b = y * s, (y - s).exp()
    assert kernels(a, b) == 2  # the sum, then one kernel writing both outputs
    lt.realize(a, b)
    assert lt.stats().kernels_launched == 2
    assert kernels(s) == 0  # s is a reshape of the realized sum: it shares its buffer
    total = x.numpy().sum()
    np.testing.assert_allclose(a.numpy(), y.numpy() * total, rtol=1e-5)
    np.testing.assert_allclose(b.numpy(), np.exp(y.numpy() - total), rtol=1e-5)


def test_shared_elementwise_node_is_computed_once_not_stored():
    x = data(100)
    y = x * 2
    a, b = y + 1, y - 1
    del y  # nothing holds x * 2 once a and b are built
    sched = lt.schedule(a, b)
    assert len(sched) == 1 and len(sched[0].kernel.stores) == 2  # one kernel, two outputs, x * 2 in registers
    assert str(sched[0].kernel).count("= mul") == 1
    lt.realize(a, b)
    np.testing.assert_array_equal(a.numpy(), x.numpy() * 2 + 1)
    np.testing.assert_array_equal(b.numpy(), x.numpy() * 2 - 1)


def test_a_node_a_live_tensor_holds_is_written_when_computed():
    """Rule 8: y is held, so the kernel that computes it for a and b writes it too (a third output, same
    kernel), and reading y afterwards launches nothing."""
    x = data(100)
    y = x * 2
    a, b = y + 1, y - 1
    sched = lt.schedule(a, b)
    assert len(sched) == 1 and len(sched[0].kernel.stores) == 3
    lt.realize(a, b)
    assert y.is_realized
    lt.reset_stats()
    np.testing.assert_array_equal(y.numpy(), x.numpy() * 2)
    assert lt.stats().kernels_launched == 0


def test_a_reduction_of_a_held_tensor_reads_its_buffer():
    """`h` is held: the sum reads the buffer h is written to rather than computing h inside its loop, and
    a later read of h launches nothing. Dropped, `h` would fuse into the sum."""
    x = data(64, 32)
    h = (x * 3).exp()
    s = h.sum()
    sched = lt.schedule(s)
    assert len(sched) == 2 and "exp" not in str(sched[1].kernel)
    s.realize()
    lt.reset_stats()
    check(h, np.exp(x.numpy() * np.float32(3)))
    assert lt.stats().kernels_launched == 0
    fused = (x * 3).exp().sum()
    assert kernels(fused) == 1


def test_a_node_is_held_while_a_live_tensor_is_it():
    """Rule 8 asks, of each node of the graph, whether a live tensor holds it: temporaries made on a shared
    (hash-consed) node stop holding it when they die, and a tensor rebound to another node (as an optimizer
    rebinds a parameter) holds that one instead."""
    x = data(8)
    kept = x.exp()
    node = kept.node
    for _ in range(50):
        assert x.exp().node is node  # a temporary on the same node, dropped at once
    gc.collect()
    assert is_held(node) and len(node.holders) == 1
    kept.node = (x + 1).node
    assert not is_held(node) and is_held(kept.node)
    sched = lt.schedule(lt.Tensor(node) + 1)  # the temporary on x.exp() is gone before the schedule is made
    assert len(sched) == 1 and len(sched[0].kernel.stores) == 1  # nothing holds x.exp() now: it is not written


def test_a_node_held_by_several_tensors_forgets_each_as_it_dies():
    """Several live tensors on one (hash-consed) node: each holds it until it dies or is rebound, and the
    record of its holders shrinks with them rather than keeping dead entries."""
    x = data(8)
    tensors = [x.exp() for _ in range(3)]
    node = tensors[0].node
    assert all(t.node is node for t in tensors) and len(node.holders) == 3
    del tensors[0]
    assert is_held(node) and len(node.holders) == 2
    tensors[0].node = (x + 1).node  # rebound: still alive, no longer holding it
    assert is_held(node)
    del tensors[1]
    assert not is_held(node) and len(node.holders) == 1
    tensors.clear()
    assert not is_held(node) and len(node.holders) == 0


def test_nodes_are_shared_while_they_live_and_their_table_stays_small():
    """Hash-consing: the same op on the same sources is the same node while anything holds it; constants are
    told apart by sign (0.0 and -0.0); and the table of shared nodes drops dead entries as
    temporaries come and go, instead of growing with every op a loop ever built."""
    x = data(8)
    kept = (x + x).exp()
    assert (x + x).exp().node is kept.node
    zero, negative_zero = (lt.Tensor._const(v, lt.float32, x.device) for v in (0.0, -0.0))
    assert zero.node is lt.Tensor._const(0.0, lt.float32, x.device).node and zero.node is not negative_zero.node
    before = len(graph._interned)
    for i in range(10000):
        x * float(i)  # a product on a scalar of its own each, dead at once
    assert len(graph._interned) <= before
    assert (x + x).exp().node is kept.node
    check(kept, np.exp(x.numpy() + x.numpy()))


def test_a_node_found_by_its_keys_hash_is_checked_against_the_key():
    """The table of shared nodes is keyed by a key's hash: a node found under it that another key made (two keys
    of one hash, planted here) is not shared; the new node takes the entry and the old one keeps its own."""
    x = data(8)
    e = x.exp()
    n = x.node
    key = graph._key(graph.Op.ALU, n.dtype, n.shape, n.device, Alu.LOG, threading.get_ident(), (n,))
    graph._interned[hash(key)] = graph._interned[e.node._key]
    log = x.log()
    assert log.node is not e.node and log.node.arg is Alu.LOG and graph._interned[hash(key)]() is log.node
    assert x.exp().node is e.node and x.log().node is log.node
    check(log, np.log(x.numpy()))
    check(e, np.exp(x.numpy()))


def test_scalars_of_equal_values_change_no_kernel():
    """A Python scalar's node is never shared by value (see `lazytensor.graph`): which scalars happen to be equal
    changes neither the schedule nor the kernels, so nothing is compiled again when two of them meet."""
    x = data(6)
    for i, v in enumerate([0.0, 1.0, 0.0, 2.0, -0.0]):
        assert (x * 1.0).node is not (x * 1.0).node
        lt.reset_stats()
        y = x + 1.0
        out = y * v  # 1.0: the value of the scalar that y adds
        out.realize()
        assert i == 0 or lt.stats().kernels_compiled == 0
        check(out, (x.numpy() + np.float32(1)) * np.float32(v))


def test_a_schedule_seen_before_launches_the_programs_compiled_for_it():
    """A cached schedule keeps its programs: realizing the same structure again compiles nothing, whatever the
    data and scalars; the programs are per device and kind of kernel (checked ones are compiled apart)."""
    outs = []
    for k in range(4):
        y = data(100, seed=k)
        if k == 1:
            lt.reset_stats()
        outs.append((y, (y * (k + 2.5) + 1).realize()))
    assert lt.stats().kernels_compiled == 0 and lt.stats().kernels_launched == 3
    for k, (y, out) in enumerate(outs):
        check(out, y.numpy() * np.float32(k + 2.5) + 1)


def test_a_lazy_loop_that_is_read_each_iteration_costs_the_same_each_time():
    """`a` is never realized explicitly, but each read of its sum writes it: the next iteration builds on a
    buffer, so every iteration runs the same two kernels and compiles nothing after the first."""
    a = data(1000)
    expected = a.numpy().astype(np.float64)
    for i in range(30):
        a = a * 0.99 + 0.01
        expected = expected * np.float32(0.99) + np.float32(0.01)
        if i == 2:
            lt.reset_stats()
        total = a.sum().item()
    assert lt.stats().kernels_compiled == 0 and lt.stats().kernels_launched == 2 * 28
    np.testing.assert_allclose(total, expected.sum(), rtol=1e-4)


def test_outputs_of_different_shapes_or_unrelated_data_get_their_own_kernels():
    x, y = data(100), data(100, seed=1)
    assert kernels(x + 1, y + 1) == 2
    assert kernels(x + 1, (x * 2)[:50]) == 2


def test_an_output_read_by_another_is_used_in_registers():
    x = data(100)
    m = x.abs() * 0.9 + 1
    p = x - m.sqrt()
    sched = lt.schedule(m, p)
    assert len(sched) == 1 and len(sched[0].kernel.stores) == 2
    lt.realize(m, p)
    np.testing.assert_allclose(p.numpy(), x.numpy() - np.sqrt(np.abs(x.numpy()) * np.float32(0.9) + 1), rtol=1e-6)


def test_realize_runs_each_kernel_once_for_shared_outputs():
    x = data(10)
    y = (x + 1).sum()
    lt.realize(y, y, y)
    assert lt.stats().kernels_launched == 1


def test_contiguous_is_a_fusion_barrier():
    x = data(10)
    assert kernels((x * 2).contiguous() + 1) == 2


def test_contiguous_of_a_computed_node_is_that_nodes_buffer():
    """No copy: the node itself is written, and its other readers read it rather than recompute it."""
    x = data(37, 11)
    m = x.max(axis=1)  # read by two kernels: realized anyway
    assert kernels(m.contiguous(), m * 2) == 2
    y = (x.exp() * 2).reshape(11, 37)
    c, s = y.contiguous(), y.sum(axis=0)
    sched = lt.schedule(c, s)
    assert len(sched) == 2 and "exp" not in str(sched[1].kernel)
    lt.realize(c, s)
    expected = np.exp(x.numpy().astype(np.float64)) * 2
    check(c, expected.reshape(11, 37).astype(np.float32))
    check(s, expected.reshape(11, 37).sum(axis=0).astype(np.float32))
    check(m.contiguous(), x.numpy().max(axis=1))


def test_contiguous_of_shared_memory_still_copies():
    a = np.ones(5, np.float32)
    c = lt.from_numpy(a).clone().realize()
    a[0] = 7
    assert c.tolist() == [1.0] * 5


def test_reduction_read_through_a_many_to_one_index_is_computed_once():
    """Each sum over pairs of rows is read by both rows of its pair: written once, not computed twice."""
    x = data(16, 24)
    pairs = x.reshape(8, 2, 24).sum(axis=1, keepdims=True)
    out = x * pairs.broadcast_to((8, 2, 24)).reshape(16, 24)
    sched = lt.schedule(out)
    assert len(sched) == 2 and "sum" not in str(sched[1].kernel)
    a = x.numpy().astype(np.float64)
    check(out, (a * np.repeat(a.reshape(8, 2, 24).sum(axis=1), 2, axis=0)).astype(np.float32))


def test_shared_reduction_is_written_in_the_shape_its_readers_read():
    """A row sum read by two kernels is written as the vector they read (not as its (30, 1) self), so it
    shares their kernel: one kernel with three outputs."""
    x = data(30, 40)
    s = x.sum(axis=1)
    a, b = s * 2, (s - 1).exp()
    assert kernels(a, b) == 1
    lt.realize(a, b)
    total = x.numpy().astype(np.float64).sum(axis=1)
    check(a, (total * 2).astype(np.float32))
    check(b, np.exp(total - 1).astype(np.float32))


def test_written_view_ends_at_a_held_transpose_nobody_reads():
    """Found by the fuzzer: a held sum of products (an int8 matmul against a broadcast column, a sum of a
    product, not a contraction) read only through two held transposes, the last one realized. Looking for
    the view to write it through, the scheduler took the last transpose, which has no readers, for its own
    reader and looped forever."""
    a = np.arange(8, dtype=np.int8).reshape(1, 2, 4)
    col = lt.asarray(np.full((1, 1), 3, np.int8)).expand((4, 1))
    outs: list[list[np.ndarray]] = []

    def run() -> None:
        p = lt.asarray(a) @ col
        v = p.permute((2, 0, 1))
        w = v.mT
        lt.realize(w)
        outs.append([w.numpy(), v.numpy(), p.numpy()])

    worker = threading.Thread(target=run, daemon=True)  # a hang fails the test instead of the suite
    worker.start()
    worker.join(timeout=60)
    assert outs, "realize did not return"
    want = a.astype(np.int64) @ np.full((4, 1), 3)
    for got, expected in zip(outs[0], [want.transpose(2, 0, 1).swapaxes(-1, -2), want.transpose(2, 0, 1), want]):
        np.testing.assert_array_equal(got, expected.astype(np.int8))


def test_reshape_leaves_the_index_of_an_axis_it_keeps():
    """Squeezing and unsqueezing under a pad: the load's address has no division or remainder."""
    x = data(5, 7)
    y = x.reshape(5, 1, 7, 1).pad([(0, 0), (0, 0), (2, 1), (0, 0)]).reshape(5, 10) * 3
    (item,) = lt.schedule(y)
    assert "//" not in str(item.kernel) and "%" not in str(item.kernel)
    check(y, np.pad(x.numpy(), [(0, 0), (2, 1)]) * np.float32(3))


def test_schedule_does_not_run_and_prints_kernel_ir():
    x = data(10)
    sched = lt.schedule((x * 3).sum())
    assert lt.stats().kernels_launched == 0
    text = str(sched)
    assert "kernel red_" in text and "sum" in text and "test_schedule.py" in text


def test_same_graph_on_new_data_compiles_nothing():
    def step(seed):
        x, y = data(50, 20, seed=seed), data(20, seed=seed + 1)
        return ((x * y).relu().sum(0) + 1).realize()
    step(0)
    before = lt.stats().kernels_compiled
    step(5)
    assert lt.stats().kernels_compiled == before


def test_python_scalars_are_kernel_parameters():
    x = data(30)
    (x * 0.5 + 7).realize()
    compiled = lt.stats().kernels_compiled
    y = (x * 0.25 + 3).realize()
    assert lt.stats().kernels_compiled == compiled
    check(y, x.numpy() * np.float32(0.25) + np.float32(3))


def test_ten_thousand_op_chain_realizes():
    """Rule 6 cuts the chain, and rule 7 does not merge the pieces back into one kernel with a parameter for
    each of its 10,000 scalars (more than a GPU kernel's parameters can hold)."""
    x = lt.asarray(np.zeros(4, np.float32))
    y = x
    for _ in range(10_000):
        y = y + 1
    sched = lt.schedule(y)
    assert len(sched) >= 10_000 // MAX_FUSED_OPS
    assert all(len(item.kernel.params) <= MAX_FUSED_OPS for item in sched)
    check(y, np.full(4, 10_000, np.float32))


def test_a_deep_unrolled_loop_schedules_in_order_with_bounded_kernels():
    """A training loop unrolled 300 steps before anything is read (a line fitted by hand-written gradient
    descent): two kernels a step, each reading a bounded set of buffers (the scalars' chain of updates is
    cut, not inlined from the first step in every kernel), none reading what a later kernel writes (rule 7's
    groups stay acyclic), and the values are NumPy's."""
    steps, lr = 300, 1e-3
    x_np = random_array((64,), lt.float32, low=-1, high=1)
    y_np = 2 * x_np + 1
    x, y = lt.asarray(x_np), lt.asarray(y_np)
    a, b = lt.asarray(np.float32(0)), lt.asarray(np.float32(0))
    a_np, b_np = np.float32(0), np.float32(0)
    for _ in range(steps):
        r = a + b * x - y
        a, b = a - lr * r.sum(), b - lr * (r * x).sum()
        r_np = a_np + b_np * x_np - y_np
        a_np, b_np = a_np - np.float32(lr) * r_np.sum(), b_np - np.float32(lr) * (r_np * x_np).sum()
    sched = lt.schedule(a, b)
    assert 2 * steps <= len(sched) <= 2 * steps + steps // 10
    written: set[int] = set()
    for item in sched:
        assert all(n.realized or id(n) in written for n in item.inputs)
        assert len(item.inputs) + len(item.scalars) <= 16  # 14 at any depth
        written |= {id(n) for n in item.outputs}
    check(a, a_np, rtol=1e-4)
    check(b, b_np, rtol=1e-4)


def test_realizing_drops_the_graph():
    x = data(10)
    hidden = x * 3
    probe = weakref.ref(hidden.node)
    out = (hidden + 1).realize()
    del hidden
    gc.collect()
    assert probe() is None
    assert out.node.srcs == ()


def test_nodes_record_the_user_line():
    x = data(3)
    y = x + 1
    assert y.node.origin.endswith(f"test_schedule.py:{y_line()}")
    assert repr(y.node).endswith(f"test_schedule.py:{y_line()}>")


def test_a_node_keeps_its_user_line_not_the_frame():
    """The line is kept, not the frame it was read from: the locals of the user's function go with it."""
    class Local:
        pass

    def made() -> tuple[lt.Tensor, weakref.ref]:
        local = Local()
        return data(3) * 2, weakref.ref(local)

    y, local = made()
    assert local() is None and "test_schedule.py:" in y.node.origin


def y_line() -> int:
    import inspect
    src, start = inspect.getsourcelines(test_nodes_record_the_user_line)
    return start + next(i for i, line in enumerate(src) if "y = x + 1" in line)


def test_stats_count_compiles_and_launches():
    x = data(7, seed=42)
    (x * 11.5 - 0.125).cos().sum().realize()
    s = lt.stats()
    assert s.kernels_launched == 1 and s.realizes == 1 and s.kernels_compiled in (0, 1)


def test_stats_are_snapshots_that_subtract():
    x = data(7, seed=43)
    before = lt.stats()
    (x * 3).exp().realize()
    (x + 3).realize()
    after = lt.stats()
    assert before.kernels_launched == 0 and after.kernels_launched == 2  # the snapshot did not move
    ran = after - before
    assert ran.kernels_launched == 2 and ran.realizes == 2 and ran.replays == 0
    assert ran.kernels_compiled == after.kernels_compiled - before.kernels_compiled
    assert ran.run_seconds == after.run_seconds - before.run_seconds >= 0


def test_a_schedule_runs_as_one_batch_with_the_results_of_launching_kernel_by_kernel(monkeypatch):
    """On a device that batches kernels (the CPU) a schedule of several kernels runs as one batch, built once
    for its structure: a step on new data with new scalars reuses it. A schedule whose outputs pass
    BATCH_MAX_BYTES runs kernel by kernel. Both give the same bits."""
    run_module = importlib.import_module("lazytensor.realize")

    def step(seed: int, scale: float) -> list[np.ndarray]:
        x, w, b = data(40, 24, seed=seed), data(24, 16, seed=seed + 1), data(16, seed=seed + 2)
        h = (x @ w * scale + b).relu()
        outs = [h.softmax(1), (h - h.mean(0)).square().sum(), x.T @ h]
        lt.realize(*outs)
        return [t.numpy() for t in outs]

    step(0, 0.5)
    kept = len(run_module._batches)
    lt.reset_stats()
    batched = [step(seed, scale) for seed, scale in ((1, 2.0), (2, -0.25))]
    launched = lt.stats().kernels_launched
    assert len(run_module._batches) == kept and launched >= 6
    assert kept > 0 or not get_device(lt.asarray(np.zeros(1)).device).batches
    monkeypatch.setattr(run_module, "BATCH_MAX_BYTES", 0)
    lt.reset_stats()
    one_by_one = [step(seed, scale) for seed, scale in ((1, 2.0), (2, -0.25))]
    assert lt.stats().kernels_launched == launched
    for got, want in zip(batched, one_by_one):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def _refuse_schedules(monkeypatch) -> None:
    """From now on, building a `Schedule` from a plan fails: a realize that succeeds launched from its plan."""
    def refuse(self):
        raise AssertionError("a cached, compiled plan was launched through a Schedule")
    monkeypatch.setattr(importlib.import_module("lazytensor.schedule").Planned, "schedule", refuse)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32], ids=str)
@pytest.mark.parametrize("shape", [(), (7,), (5, 3)], ids=str)
def test_a_cached_schedule_launches_from_its_plan_with_new_data_and_scalars(monkeypatch, dtype, shape):
    """A structure realized before launches from its plan, without a `Schedule`, one kernel or several; on new
    data, with new Python scalars, through a transposed view; nothing is compiled again."""
    def step(seed: int, scale: int, shift: int) -> None:
        a, b = random_array(shape, dtype, seed), random_array(shape[::-1], dtype, seed + 1)
        x, y = lt.asarray(a), lt.asarray(b).T  # y: a view of another layout
        one = x * scale + y - shift
        check(one.realize(), (a * scale + b.T - shift).astype(a.dtype))
        two, total = x * scale - y, (x - y).sum()
        lt.realize(two, total)  # two kernels (a batch on the CPU)
        check(two, (a * scale - b.T).astype(a.dtype))
        check(total, (a - b.T).sum())

    step(0, 3, 1)
    lt.reset_stats()
    _refuse_schedules(monkeypatch)
    step(1, -2, 5)
    step(2, 7, 0)
    assert lt.stats().kernels_compiled == 0 and lt.stats().realizes >= 2


def test_a_launch_from_a_plan_checks_indexes_and_writes_what_live_tensors_hold(monkeypatch):
    """The fast launch of a cached plan raises for an index out of range as the first launch did, and binds a
    live tensor to the `contiguous()` copy that holds its data (rule 8)."""
    def gathered(index: list[int]) -> lt.Tensor:
        return data(6, seed=len(index)).take(lt.asarray(np.array(index)))

    def copied(seed: int) -> tuple[lt.Tensor, lt.Tensor]:
        y = data(4, 3, seed=seed) * 2
        return y, y.contiguous() + 0  # the copy, read by a kernel of its own region

    for launch in range(3):
        if launch == 1:
            _refuse_schedules(monkeypatch)
        with pytest.raises(IndexError, match="take: an index is outside"):
            gathered([1, 9]).realize()
        got = gathered([5, -6])
        check(got, random_array((6,), lt.float32, 2)[[5, -6]])
        y, z = copied(launch)
        z.realize()
        assert y.is_realized
        check(y, random_array((4, 3), lt.float32, launch) * 2)


def _refuse_walks(monkeypatch) -> None:
    """From now on, walking a graph to key the schedule cache fails: a realize that succeeds was looked up by its
    root's template (`schedule._Template`)."""
    def refuse(roots):
        raise AssertionError("a graph of a structure realized before was walked")
    monkeypatch.setattr(importlib.import_module("lazytensor.schedule"), "_walk", refuse)


@pytest.fixture(params=["walked", "compiled"])
def matching(request, monkeypatch) -> bool:
    """Templates of their own for the test (`schedule._Template`), checked by walking them, or through the code
    written out for them (`schedule._matcher`) from their first match on; whether compiled."""
    schedule = importlib.import_module("lazytensor.schedule")
    monkeypatch.setattr(schedule, "_templates", {})
    if compiled := request.param == "compiled":
        monkeypatch.setattr(schedule, "COMPILE_AFTER_MATCHES", 1)
    return compiled


def _compiled_templates() -> int:
    """How many of the templates check a graph through code written out for them."""
    return sum(t.match != t.walk for ts in importlib.import_module("lazytensor.schedule")._templates.values() for t in ts)


def test_a_graph_of_one_root_seen_before_is_found_without_a_walk(monkeypatch, matching):
    """The realize of a structure seen before, from one root, finds its plan by checking the graph against the
    plan's template: no walk, no schedule, nothing compiled; on new data, new scalars, through a reshape (a sum's
    dropped axis) and a softmax."""
    def step(seed: int, scale: float) -> None:
        a = random_array((40,), lt.float32, seed)
        x = lt.asarray(a)
        check((x * scale + 1).realize(), a * np.float32(scale) + 1)
        check((x ** 2).sum().realize(), (a * a).sum())
        e = np.exp(a - a.max())
        check(x.softmax(-1).realize(), e / e.sum())

    step(0, 0.5)
    step(1, 2.0)  # a tensor's holders settle: the realize of a temporary's root
    lt.reset_stats()
    _refuse_walks(monkeypatch)
    _refuse_schedules(monkeypatch)
    for seed, scale in ((2, -1.5), (3, 0.0), (4, 7.25)):
        step(seed, scale)
    assert lt.stats().kernels_compiled == 0 and lt.stats().realizes == 9
    assert (_compiled_templates() == 3) == matching


def test_an_eager_loop_feeding_each_output_to_the_next_realize_binds_each_its_own_buffer(monkeypatch, matching):
    """A loop whose realize reads the previous one's output (the same structure on another buffer, with another
    scalar each time) is found by its template and launched from its plan, writing a new buffer each time: every
    result stays its own value, and a graph reading one buffer twice, or the loop's start again, is told apart."""
    a = random_array((33,), lt.float32, 0)
    x = lt.asarray(a)
    results, want = [], []
    y, expected = x, a
    for k in range(8):
        if k == 3:  # the first realizes compile and settle the holders
            lt.reset_stats()
            _refuse_walks(monkeypatch)
            _refuse_schedules(monkeypatch)
        scale = np.float32(0.5 + k / 4)
        y, expected = (y * float(scale) + 1).realize(), expected * scale + np.float32(1)
        results.append(y)
        want.append(expected)
        check((y * y + 1).realize(), expected * expected + 1)
    for got, expected in zip(results, want):
        check(got, expected)
    assert len({r.node.buffer.ptr for r in results}) == len(results)
    assert lt.stats().kernels_compiled == 0 and lt.stats().realizes == 10
    assert (_compiled_templates() == 2) == matching  # the loop's and the square's


def test_a_training_step_seen_before_is_found_without_a_walk(monkeypatch, matching):
    """A training step's realize (the loss and every parameter, with the optimizer's pending state) of a structure
    seen before finds its plan by its template: no walk, no schedule, nothing compiled; and the steps give torch's
    losses and weights, on a new batch each step."""
    import torch
    from test_optim import models, step_both
    m, tm = models()
    opt, topt = lt.optim.Adam(m.parameters(), lr=0.01), torch.optim.Adam(tm.parameters(), lr=0.01)
    for step in range(6):
        if step == 3:  # the first step has no moments yet, the second's graph is the steady one's
            lt.reset_stats()
            _refuse_walks(monkeypatch)
        a, b = random_array((8, 5), lt.float64, step), random_array((8, 3), lt.float64, step + 10)
        step_both(m, lt.nn.functional.mse_loss(m(lt.asarray(a)), lt.asarray(b)), opt,
                  tm, torch.nn.functional.mse_loss(tm(torch.tensor(a)), torch.tensor(b)), topt)
    assert lt.stats().kernels_compiled == 0 and lt.stats().realizes == 3
    # the steady step's graph, of more nodes than a loop's, is checked through its written-out code too
    steps = [t for ts in importlib.import_module("lazytensor.schedule")._templates.values() for t in ts
             if len(t.entries) > 64 and t.matches]
    assert len(steps) == 1 and (steps[0].match != steps[0].walk) == matching


def test_a_template_of_several_roots_reuses_no_plan_of_another_structure(monkeypatch, matching):
    """Realizes of several nodes: the same node asked for twice, two nodes sharing a source or not, in either
    order, an index checked from data (raising on a repeat with an index out of range) each get their own plan,
    found by their template on a repeat, with the right values."""
    a, b = random_array((5, 4), lt.float32, 0), random_array((5, 4), lt.float32, 1)
    x, y = lt.asarray(a), lt.asarray(b)
    for repeat in range(3):
        if repeat == 2:
            _refuse_walks(monkeypatch)
        u, v = x * 2, y * 2
        lt.realize(u, u)
        check(u, a * 2)
        u, v = x * 2, x + 1
        lt.realize(u, v)
        check(u, a * 2)
        check(v, a + 1)
        u, v = x * 2, y + 1
        lt.realize(v, u)
        check(u, a * 2)
        check(v, b + 1)
        u, v = x * 2, y + 1
        lt.realize(u, v)
        check(u, a * 2)
        check(v, b + 1)
        for index, ok in (([4, -5], True), ([1, 25], False)):
            taken, total = x.take(lt.asarray(np.array(index))), x.sum()
            if ok:
                lt.realize(taken, total)
                check(taken, a.reshape(-1)[index])
                check(total, a.sum())
            else:
                with pytest.raises(IndexError, match="take: an index is outside"):
                    lt.realize(taken, total)


def test_a_template_reuses_no_plan_of_another_structure(matching):
    """A graph checked against the template of another structure of the same root (sharing, dtype, a baked
    constant, a transposed view, slices, a live intermediate) gets its own plan and the right values."""
    a, b = random_array((6, 6), lt.float32, 0), random_array((6, 6), lt.float32, 1)
    x, y = lt.asarray(a), lt.asarray(b)
    # each structure three times: the second realize meets the templates of all the others, the third their code
    for _ in range(3):
        check((x * y + 1).realize(), a * b + 1)
        check((x * x + 1).realize(), a * a + 1)  # one buffer read twice: the same op on the same kinds of data
        check((y * y + 1).realize(), b * b + 1)
        check((x * y.T + 1).realize(), a * b.T + 1)
        top, bottom = lt.asarray(a[:3].copy()), lt.asarray(b[3:].copy())
        check((top * bottom + 1).realize(), a[:3] * b[3:] + 1)
        check((x[:3] * y[3:] + 1).realize(), a[:3] * b[3:] + 1)  # the same root, of slices
        check((x[3:] * y[:3] + 1).realize(), a[3:] * b[:3] + 1)  # other slices: the same structure, other args
        check((x.sum(0) + 1).realize(), a.sum(0) + 1)
        check((top.sum(0) + 1).realize(), a[:3].sum(0) + 1)  # the same root, on a buffer of another shape
        wide = lt.asarray(a.astype(np.float64))
        check((wide * wide + 1).realize(), a.astype(np.float64) ** 2 + 1)
        i = lt.asarray(np.arange(36, dtype=np.int32).reshape(6, 6))
        check((i // 3 + 1).realize(), np.arange(36, dtype=np.int32).reshape(6, 6) // 3 + 1)
        check((i // 4 + 1).realize(), np.arange(36, dtype=np.int32).reshape(6, 6) // 4 + 1)
        kept = x * y
        out = kept + 1
        out.realize()
        assert kept.is_realized  # held by a live tensor: written too (rule 8)
        check(out, a * b + 1)
        check(kept, a * b)
        temporary = (x * y + 1).realize()
        check(temporary, a * b + 1)


def test_threads_realize_one_structure_each_with_its_own_data(matching):
    """Threads that realize the same structure at once, each on its data and with its scalars, each get their
    own values (the template look-up runs under the realize lock, as the schedule cache does)."""
    def work(t: int) -> list[np.ndarray]:
        a = random_array((100,), lt.float32, t)
        x = lt.asarray(a)
        for k in range(50):
            check((x * float(k) - t).realize(), a * np.float32(k) - np.float32(t))
        return []

    in_threads(work)  # an assertion failing in a thread is raised here


def test_debug_prints_one_line_per_launch(capsys, monkeypatch):
    monkeypatch.setenv("LT_DEBUG", "2")
    x = lt.asarray(random_array((9,), lt.float32), device="cpu")  # LT_DEBUG=3 shows the CPU's LLVM IR
    (x.exp() + 2).realize()
    err = capsys.readouterr().err
    assert err.count("lt: ew_") == 1 and "cpu" in err and "kernel ew_" in err and "load b1" in err
    monkeypatch.setenv("LT_DEBUG", "3")
    (x.sin() * 5).realize()
    err = capsys.readouterr().err
    assert "define void" in err and "alloca" not in err  # optimized: the renderer's loop counters are registers
    monkeypatch.setenv("LT_DEBUG", "5")
    (x.sin() * 7).realize()
    err = capsys.readouterr().err
    assert err.count("define void") >= 2 and "alloca" in err  # and the IR as rendered, before optimization


@pytest.fixture(params=["walked", "written"])
def launching(request, monkeypatch) -> bool:
    """Plans of their own for the test, whose launchers walk their buffers, or run through the code written out
    for their plan (`realize._written`) from their first launch on; whether written."""
    schedule, realize = (importlib.import_module(f"lazytensor.{name}") for name in ("schedule", "realize"))
    monkeypatch.setattr(schedule, "_templates", {})
    monkeypatch.setattr(schedule, "_cache", {})
    if written := request.param == "written":
        monkeypatch.setattr(realize, "WRITE_OUT_AFTER", 1)
    return written


def _written_launchers() -> int:
    """How many of the cached plans launch through code written out for them."""
    return sum(launcher.run != launcher.walk for plan in importlib.import_module("lazytensor.schedule")._cache.values()
               for launcher in plan.launchers.values())


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32], ids=str)
def test_a_launch_from_a_plan_binds_each_realize_its_own_values(monkeypatch, launching, dtype):
    """Realizes of cached one-kernel plans, launched from their plans (walked or written out): on new data, with
    new scalars, through a transposed view and slices at other offsets, of two outputs in one kernel, of a reshape
    of the kernel's output, each feeding the next; every result its own buffer and value; nothing compiled or
    scheduled again, one launch per realize."""
    def step(seed: int, scale: int, shift: int, y: lt.Tensor, want: np.ndarray) -> tuple[lt.Tensor, np.ndarray]:
        a = random_array((5, 3), dtype, seed)
        x = lt.asarray(a, device="cpu")
        y, want = (y * scale + x - shift).realize(), (want * scale + a - shift).astype(a.dtype)
        check(y, want)
        check((x.T * scale + 1).realize(), (a.T * scale + 1).astype(a.dtype))
        for k in (0, 1):
            check((x[k:k + 3] - x[2 - k:5 - k] * shift).realize(), (a[k:k + 3] - a[2 - k:5 - k] * shift).astype(a.dtype))
        u, v = x * scale, x + shift
        lt.realize(u, v)  # one kernel, two outputs
        check(u, (a * scale).astype(a.dtype))
        check(v, (a + shift).astype(a.dtype))
        check((x * scale + 1).reshape(15).realize(), (a * scale + 1).astype(a.dtype).reshape(15))
        return y, want

    zeros = np.zeros((5, 3), dtype.name)
    y, want = step(0, 2, 1, lt.asarray(zeros, device="cpu"), zeros)
    y, want = step(1, 3, -2, y, want)  # compiles nothing new; the launchers are made
    lt.reset_stats()
    _refuse_schedules(monkeypatch)
    results = []
    for seed, scale, shift in ((2, -1, 5), (3, 0, 0), (4, 7, -3)):
        y, want = step(seed, scale, shift, y, want)
        results.append((y, want))
    for got, expected in results:
        check(got, expected)
    assert len({got.node.buffer.ptr for got, _ in results}) == len(results)
    s = lt.stats()
    assert s.kernels_compiled == 0 and s.realizes == 3 * 6 and s.kernels_launched == 3 * 6
    assert (_written_launchers() == 5) == launching  # the slices at two offsets are windows: one plan


def test_a_written_launch_of_a_small_kernel_goes_to_the_pool_where_its_work_is_shared(monkeypatch, launching):
    """A plan launched directly (`DirectCall`) and then `PARALLEL_MIN_WORK` lowered (as tests do): its launches
    are shared out to the pool, with the right values."""
    from lazytensor.kernels.llvm import runtime
    a = random_array((4096,), lt.float32, 0)
    x = lt.asarray(a, device="cpu")
    for k in range(3):
        check((x * float(k) + 1).realize(), a * np.float32(k) + 1)
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 64)
    monkeypatch.setenv("LT_NUM_THREADS", "2")
    for k in range(3, 6):
        check((x * float(k) + 1).realize(), a * np.float32(k) + 1)
    assert (_written_launchers() == 1) == launching


def test_written_launches_of_kernels_generic_over_sizes_pass_each_size(launching):
    """An eager loop over growing sizes: the kernel compiles generic over its size, and each size's plan launches
    it with its own sizes in the frame (written once per plan), twice over."""
    for _ in range(2):
        for n in range(5, 12):
            a = random_array((n, 6), lt.float32, n)
            x = lt.asarray(a, device="cpu")
            check((x.sum(1) * 0.5 + 1).realize(), a.sum(1) * np.float32(0.5) + 1)


def test_threads_launch_one_written_plan_each_with_its_own_data(launching):
    """Threads realizing the same structure at once, launched from one plan's launcher (its frame shared, under
    the realize lock), each get their own values."""
    def work(t: int) -> list[np.ndarray]:
        a = random_array((100,), lt.float32, t)
        x = lt.asarray(a, device="cpu")
        for k in range(50):
            check((x * float(k) - t).realize(), a * np.float32(k) - np.float32(t))
        return []

    in_threads(work)


def test_reset_stats_keeps_counting_a_written_launch(launching):
    """`reset_stats` sets the counters to zero in place: a launch written out before it counts after it."""
    x = lt.asarray(random_array((10,), lt.float32, 0), device="cpu")
    for k in range(3):
        (x * float(k) + 2).realize()
    lt.reset_stats()
    for k in range(4):
        (x * float(k) + 2).realize()
    s = lt.stats()
    assert s.kernels_launched == 4 and s.realizes == 4 and s.run_seconds > 0


def test_a_scatter_of_a_product_writes_the_product_first():
    """`zeros.scatter_add(0, idx, a @ b)`: the scatter's loop nests have no contraction template, so the
    product (which claimed one inside the scatter's kernel, and crashed its rendering) is a kernel of its own;
    likewise the gradient of a gather of a product (a cross-entropy's pick of logits)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((256, 256), dtype=np.float32), rng.standard_normal((256, 256), dtype=np.float32)
    idx = rng.integers(0, 256, (256, 256))
    out = lt.zeros((256, 256), device="cpu").scatter_add(0, lt.asarray(idx, device="cpu"),
                                                          lt.asarray(a, device="cpu") @ lt.asarray(b, device="cpu"))
    kinds = [type(item.kernel).__name__ for item in lt.schedule(out)]
    assert sorted(kinds) == ["Contraction", "Kernel", "Scatter"]  # the Kernel: the indexes' range check
    expected = torch.zeros(256, 256).scatter_add(0, torch.tensor(idx), torch.tensor(a) @ torch.tensor(b))
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-4, atol=1e-3)
    x = lt.asarray(a, device="cpu").requires_grad_()
    t = torch.tensor(a, requires_grad=True)
    pick = idx[:, :1]
    (x @ lt.asarray(b, device="cpu")).take_along_axis(lt.asarray(pick, device="cpu"), 1).sum().backward()
    (t @ torch.tensor(b)).gather(1, torch.tensor(pick)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-5)
