"""`lt.explain` and `lt.draw`: the rule named for every buffer a schedule writes, and the graph as DOT."""
from __future__ import annotations

import io
import stat
import sys

import numpy as np
import pytest

import lazytensor as lt
from conftest import random_array
from lazytensor.explain import Explanation
from lazytensor.schedule import MAX_FUSED_OPS, Reason

pytestmark = pytest.mark.fast


def data(*shape: int, seed: int = 0) -> lt.Tensor:
    return lt.asarray(random_array(shape, lt.float32, seed))


def explained(*tensors: lt.Tensor) -> Explanation:
    out = lt.explain(*tensors, file=io.StringIO())
    assert len(out.kernels) == len(lt.schedule(*tensors))
    return out


def reasons(*tensors: lt.Tensor) -> list[Reason]:
    """What each kernel writes, and why. (Build the tensors outside an assert: pytest's rewriting of an assert
    keeps every value of its expression, which would make intermediates live tensors, rule 8.)"""
    return [w.reason for k in explained(*tensors).kernels for w in k.writes]


def test_a_requested_output_and_its_fused_nodes_with_their_lines():
    x = data(8, 33)
    y = (x * 2 + 1).exp()
    line = sys._getframe().f_lineno - 1
    out = explained(y)
    (kernel,) = out.kernels
    assert [w.reason for w in kernel.writes] == [Reason.REQUESTED]
    assert [s.op.split()[0] for s in kernel.computes] == ["scalar", "mul", "scalar", "add", "exp"]
    assert {s.origin for s in kernel.computes} == {f"{__file__}:{line}"}
    assert kernel.reads == (f"buffer float32[8, 33] made at {x.node.origin}",)
    assert kernel.apart_from_next is None and kernel.name == lt.schedule(y)[0].kernel.name


def test_explain_prints_what_it_returns(capsys):
    x = data(4, 5)
    out = lt.explain(x - x.mean(0))
    printed = capsys.readouterr().out
    assert printed == str(out) + "\n"
    assert printed.startswith("2 kernel(s)\n[0] ") and "(rule 1)" in printed and "not one kernel with [1]" in printed


def test_nothing_to_compute():
    x = data(3)
    assert explained(x).kernels == ()
    assert str(explained(x)) == "nothing to compute: every tensor is realized"


def test_rule_1_a_reduction_broadcast_along_an_outer_axis():
    x = data(8, 33)
    out = explained(x - x.mean(0))
    assert [w.reason for w in out.kernels[0].writes] == [Reason.RECOMPUTED_REDUCTION]
    assert Reason.RECOMPUTED_REDUCTION.rule == 1
    assert "different shapes, [33] and [8, 33]" in out.kernels[0].apart_from_next
    assert "[1] reads what [0] writes" in out.kernels[0].apart_from_next


def test_rule_1_a_reduction_two_kernels_read():
    x, y = data(100), data(100, seed=1)
    s = x.sum()
    got = reasons(y * s, (y - s).exp())
    assert got == [Reason.SHARED_REDUCTION, Reason.REQUESTED, Reason.REQUESTED]


def test_rule_2_a_softmax_is_one_kernel_with_nothing_written_between():
    got = reasons(data(8, 33).softmax(-1))
    assert got == [Reason.REQUESTED]


def test_rule_4_an_elementwise_node_of_many_loads_that_two_kernels_read():
    a, b, c, d = (data(16, 8, seed=i) for i in range(4))

    def two_sums():  # nothing of the caller's holds the sum a + b + c + d
        e = a * b + c * d
        return e.sum(0), e.sum(1)

    got = reasons(*two_sums())
    assert got[0] is Reason.SHARED_LOADS and got.count(Reason.REQUESTED) == 2 and Reason.SHARED_LOADS.rule == 4


def test_rule_5_a_contraction_inside_another():
    a, b, c = data(64, 64), data(64, 64, seed=1), data(64, 64, seed=2)
    out = explained((a @ b) @ c)
    assert [w.reason for k in out.kernels for w in k.writes] == [Reason.CONTRACTION, Reason.REQUESTED]
    assert "is a contraction" in out.kernels[0].apart_from_next and "(rule 5)" in out.kernels[0].apart_from_next


def test_rule_6_the_region_cap():
    x = data(16)
    y = x
    for i in range(MAX_FUSED_OPS):
        y = (y * 0.5).sin()
    got = reasons(y)
    assert Reason.REGION_CAP in got and got[-1] is Reason.REQUESTED and Reason.REGION_CAP.rule == 6


def test_rule_7_kernels_whose_work_does_not_overlap():
    a, b = data(8, 4), data(8, 4, seed=1)
    out = explained(a + 1, b + 1)
    assert len(out.kernels) == 2 and "no common buffer" in out.kernels[0].apart_from_next


def test_rule_8_a_live_tensor_computed_anyway():
    x = data(100)
    h = x * 2
    got = reasons((h + 1).sum())
    assert got == [Reason.LIVE, Reason.REQUESTED] and Reason.LIVE.rule == 8


def test_rule_9_an_elementwise_result_recomputed_in_a_loop_it_does_not_depend_on():
    x, v = data(64, 32), data(32, seed=1)

    def rows():  # v's eight ops, read through a broadcast inside each row's sum
        w = v
        for _ in range(4):
            w = w * 1.5 + 0.25
        return (x - w[None, :]).exp().sum(1)

    got = reasons(rows())
    assert got == [Reason.RECOMPUTED, Reason.REQUESTED] and Reason.RECOMPUTED.rule == 9


def test_contiguous_is_named_as_the_barrier():
    x = data(8, 4)
    y = (x + 1).contiguous()
    out = explained(y * 2)
    assert [w.reason for k in out.kernels for w in k.writes] == [Reason.CONTIGUOUS, Reason.REQUESTED]
    assert "contiguous() that [0] writes" in out.kernels[0].apart_from_next


def test_a_kernel_of_its_own_kind_and_what_it_reads_from_memory():
    x = data(4, 4096)  # rows long enough for a scan (short ones are sums, one per element)
    got = reasons((x + 1).cumsum(-1))
    assert got == [Reason.OWN_KERNEL, Reason.REQUESTED]


def test_an_index_check_flag():
    x, idx = data(10), lt.asarray(np.array([1, 3, 9]))
    got = reasons(x[idx])
    assert Reason.CHECK in got


def test_a_training_steps_pending_state_and_every_pair_of_kernels_has_a_reason():
    model = lt.nn.Sequential(lt.nn.Linear(4, 8), lt.nn.ReLU(), lt.nn.Linear(8, 3))
    opt = lt.optim.SGD(model.parameters(), lr=0.1)
    xb, yb = data(5, 4), lt.asarray(np.array([0, 1, 2, 0, 1]))
    loss = lt.nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    out = explained(loss)  # the parameters' updates ride on the next schedule (pending state)
    got = [w.reason for k in out.kernels for w in k.writes]
    assert got.count(Reason.PENDING) >= len(list(model.parameters())) and Reason.REQUESTED in got
    assert all(k.apart_from_next for k in out.kernels[:-1])
    lt.realize(loss)
    assert explained(loss).kernels == ()


def test_explain_runs_nothing_and_compiles_nothing():
    x = data(8, 8)
    lt.reset_stats()
    y = x.softmax(0) + 1
    explained(y)
    assert lt.stats().kernels_launched == 0 and lt.stats().kernels_compiled == 0 and not y.is_realized


def test_draw_writes_a_cluster_per_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "")  # no Graphviz: the DOT file only
    x = data(8, 33)
    y = x - x.mean(0)
    written = lt.draw(y, path=tmp_path / "g.dot")
    assert written == [tmp_path / "g.dot"]
    text = (tmp_path / "g.dot").read_text()
    assert text.startswith("digraph lazytensor {") and text.rstrip().endswith("}")
    names = [item.kernel.name for item in lt.schedule(y)]
    assert text.count("subgraph cluster_") == len(names) == 2
    assert all(f'label="[{k}] {n}";' in text for k, n in enumerate(names))
    assert text.count("peripheries=2") == 2 and "fillcolor=lightgrey" in text  # two written nodes, one buffer
    assert f"sum over axes [0] float32[1, 33]\\n{y.node.origin}" in text and "->" in text


def test_draw_makes_an_svg_where_graphviz_is_installed(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "dot"  # stands for Graphviz: copies its input to the -o file
    fake.parent.mkdir()
    fake.write_text(f"#!{sys.executable}\nimport shutil, sys\nshutil.copy(sys.argv[2], sys.argv[4])\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(fake.parent))
    written = lt.draw(data(4) + 1, path=tmp_path / "g.dot")
    assert written == [tmp_path / "g.dot", tmp_path / "g.svg"]
    assert (tmp_path / "g.svg").read_text() == (tmp_path / "g.dot").read_text()
