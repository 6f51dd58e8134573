"""Convolutions over 1 to 3 spatial axes, transposed convolutions, unfold and fold (PyTorch's `F.conv1d` ...
`F.conv_transpose3d`, `F.unfold`, `F.fold`).

A convolution is a sliding-window view of its input (movement ops only, so index arithmetic in the kernel
that reads it) times the weights, summed: one contraction. Its backward is its own (`custom_vjp`): the weight
gradient is a reduction of the same windows times the output gradient, a contraction; the input gradient a
contraction of the output gradient with each tap's weights, whose columns are then added where they belong
(`_conv_input_grad`). A transposed convolution is that input gradient, and its own gradients are a
convolution and a weight gradient with the roles exchanged; `fold` is its placement step alone.

On the CPU a stride-1 2-d convolution reads its windows as runs of its padded images' rows instead
(`_conv_of_rows`), which the contraction template reads in place rather than packing them."""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

from .. import recipe
from ..autograd import custom_vjp
from ..creation import zeros
from ..device import get_device
from ..errors import ShapeError
from ..kernels.ir import ReduceOp
from ..movement import stack
from ..tensor import Tensor


def _pair(v: Any, n: int = 2, name: str = "") -> tuple[int, ...]:
    if isinstance(v, int):
        return (v,) * n
    t = tuple(int(a) for a in v)
    if len(t) != n:
        raise ValueError(f"{name}: expected an int or {n} ints, got {v!r}")
    return t


def _windows(x: Tensor, kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int]) -> Tensor:
    """The sliding windows over the last len(kernel) axes of `x` as a view: (..., *spatial) ->
    (..., *out, *kernel), where out[i] = (n - dilation*(kernel-1) - 1) // stride + 1.

    Movement ops only (no copy): each axis is tiled enough times that reshaping the tiles to rows of
    length n + dilation shifts row j by j * dilation; rows are cut to the kernel size, columns taken
    with the stride. Windows that do not overlap (kernel == stride) are a plain reshape."""
    nd = len(kernel)
    lead, spatial = x.shape[:-nd], x.shape[-nd:]
    out = [(n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(spatial, kernel, stride, dilation)]
    if any(o <= 0 for o in out):
        raise ShapeError(f"window of size {tuple(kernel)} (dilation {tuple(dilation)}) is larger than the "
                         f"padded input {tuple(spatial)}")
    keep = [(0, n, 1) for n in lead]
    if all(k == s and d == 1 for k, s, d in zip(kernel, stride, dilation)):
        x = x._shrink(keep + [(0, o * k, 1) for o, k in zip(out, kernel)])
        x = x.reshape(*lead, *[v for o, k in zip(out, kernel) for v in (o, k)])
        order = list(range(len(lead))) + [len(lead) + 2 * i for i in range(nd)] + \
            [len(lead) + 2 * i + 1 for i in range(nd)]
        return x.permute(order)
    reps = [-(-k * (n + d) // n) for n, k, d in zip(spatial, kernel, dilation)]
    x = x.reshape(*lead, *[v for n in spatial for v in (1, n)])
    x = x.broadcast_to(*lead, *[v for r, n in zip(reps, spatial) for v in (r, n)])
    x = x.reshape(*lead, *[r * n for r, n in zip(reps, spatial)])
    x = x._shrink(keep + [(0, k * (n + d), 1) for n, k, d in zip(spatial, kernel, dilation)])
    x = x.reshape(*lead, *[v for n, k, d in zip(spatial, kernel, dilation) for v in (k, n + d)])
    x = x._shrink(keep + [r for k, o, s in zip(kernel, out, stride) for r in ((0, k, 1), (0, (o - 1) * s + 1, s))])
    order = list(range(len(lead))) + [len(lead) + 2 * i + 1 for i in range(nd)] + \
        [len(lead) + 2 * i for i in range(nd)]
    return x.permute(order)


def _conv_padding(padding: Any, kernel: Sequence[int], dilation: Sequence[int], stride: Sequence[int],
                  name: str) -> list[tuple[int, int]]:
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * len(kernel)
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{name}: padding='same' needs stride 1")
            totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
            return [(t // 2, t - t // 2) for t in totals]
        raise ValueError(f"{name}: padding must be an int, a tuple, 'valid' or 'same', got {padding!r}")
    return [(p, p) for p in _pair(padding, len(kernel), name)]


def _batched(fn: Callable[..., Tensor], x: Tensor, nd: int, name: str, *args: Any) -> Tensor:
    """fn of an (N, C, *spatial) input, given one of nd + 2 or (unbatched) nd + 1 dimensions."""
    if x.ndim == nd + 1:
        return fn(x.unsqueeze(0), *args).squeeze(0)
    if x.ndim != nd + 2:
        raise ShapeError(f"{name}: expected a {nd + 1}-d or {nd + 2}-d input, got shape {x.shape}")
    return fn(x, *args)


def _check_groups(cin: int, cout: int, cg: int, groups: int, weight: Tensor, name: str) -> None:
    if groups <= 0 or cin % groups or cout % groups or cin // groups != cg:
        raise ShapeError(f"{name}: input with {cin} channels and weight of shape {weight.shape} do not match "
                         f"groups={groups} (the weight needs in_channels / groups = {cin // max(groups, 1)} "
                         "channels and out_channels divisible by groups)")


def _convnd(x: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any, dilation: Any,
            groups: int, nd: int, name: str) -> Tensor:
    if weight.ndim != nd + 2:
        raise ShapeError(f"{name}: expected a {nd + 2}-d weight, got shape {weight.shape}")

    def batched(x: Tensor) -> Tensor:
        cout, cg, *kernel = weight.shape
        _check_groups(x.shape[1], cout, cg, groups, weight, name)
        stride_, dilation_ = _pair(stride, nd, name), _pair(dilation, nd, name)
        pads = _conv_padding(padding, kernel, dilation_, stride_, name)
        # the input in a buffer of its own, which the forward and the weight gradient both read; or its padded
        # copy (`_grouped_windows`, `_rows_copy`), which a copy of the input would only precede
        copied = _pads_into_a_copy(x, pads) or _reads_rows_in_place(x, kernel, stride_, pads, dilation_)
        out = _conv(x if copied else x.contiguous(), weight, stride_, pads, dilation_, groups)
        return out if bias is None else out + bias.reshape(cout, *[1] * nd)

    return _batched(batched, x, nd, name)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-d cross-correlation, as torch.nn.functional.conv1d: input (N, C_in, L) or (C_in, L), weight
    (C_out, C_in / groups, k); padding an int, a 1-tuple, 'valid' or 'same'."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-d cross-correlation, as torch.nn.functional.conv2d: input (N, C_in, H, W) or (C_in, H, W), weight
    (C_out, C_in / groups, kH, kW). One reduction over (C_in / groups, kH, kW) of the windows times the
    weights, with the bias added in the same kernel."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-d cross-correlation, as torch.nn.functional.conv3d: input (N, C_in, D, H, W) or (C_in, D, H, W),
    weight (C_out, C_in / groups, kD, kH, kW)."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _grouped_windows(x: Tensor, kernel: Sequence[int], stride: Sequence[int], pads: Sequence[tuple[int, int]],
                     dilation: Sequence[int], groups: int) -> Tensor:
    """The windows of padded x as (N, groups, 1, C / groups, *out, *kernel).

    Where the device's template packs its operands (`Device.packs_operands`), the padded input is a buffer of
    its own, one copy: the packing then reads the windows, nine times the input for a 3x3 kernel, with no mask
    (a view of the padding takes one per element and per tap: a 3x3 convolution of 64 channels at 56x56 took
    1.4 times as long, and its backward, whose weight gradient reads the windows too, 1.4 times). Where the
    forward reads the rows of a copy with rows more (`_conv_of_rows`), the windows are of that copy, the same
    buffer, less those rows."""
    n, c = x.shape[:2]
    if _reads_rows_in_place(x, kernel, stride, pads, dilation):
        rows, extra = _rows_copy(x, kernel, pads, dilation)
        padded = rows._shrink([(0, m - (a == 2) * extra, 1) for a, m in enumerate(rows.shape)])
    else:
        padded = x.pad([(0, 0), (0, 0), *pads])
        padded = padded.contiguous() if _pads_into_a_copy(x, pads) else padded
    win = _windows(padded, kernel, stride, dilation)
    return win.reshape(n, groups, 1, c // groups, *win.shape[2:])


def _pads_into_a_copy(x: Tensor, pads: Sequence[tuple[int, int]]) -> bool:
    """Whether the convolution of `x` reads it padded into a buffer of its own (`_grouped_windows`)."""
    return any(p != (0, 0) for p in pads) and get_device(x.device).packs_operands


def _conv_forward(x: Tensor, weight: Tensor, stride: Sequence[int], pads: Sequence[tuple[int, int]],
                  dilation: Sequence[int], groups: int) -> Tensor:
    """The convolution of (N, C_in, *spatial) x, without the bias, as ordinary ops."""
    cout, cg, *kernel = weight.shape
    nd = len(kernel)
    if _reads_rows_in_place(x, kernel, stride, pads, dilation):
        return _conv_of_rows(x, weight, pads, dilation, groups)
    lhs = _grouped_windows(x, kernel, stride, pads, dilation, groups)
    rhs = weight.reshape(1, groups, cout // groups, cg, *[1] * nd, *kernel)
    axes = (3, *range(4 + nd, 4 + 2 * nd))
    return (lhs * rhs)._reduce(ReduceOp.SUM, axes, False, "conv").reshape(x.shape[0], cout, *lhs.shape[4:4 + nd])


# The elements a padded copy of images has past each image's windows (`_conv_of_rows`): the template's last panel of
# a product reads that many columns at most past its last (a panel of two vectors of 32 float16)
ROWS_READ_PAST = 64
# The most a convolution read by rows (`_conv_of_rows`) may compute of columns that its output drops, over its output
JUNK_COLUMNS = 1.25


def _reads_rows_in_place(x: Tensor, kernel: Sequence[int], stride: Sequence[int], pads: Sequence[tuple[int, int]],
                         dilation: Sequence[int]) -> bool:
    """Whether the convolution reads its windows as rows of its padded images (`_conv_of_rows`): where the device's
    template packs its operands, of a kernel of several taps at stride 1 over two axes, whose dropped columns are few.
    The windows of one axis are such rows already (`_grouped_windows`), which the template reads in place where its
    last panel stays inside the buffer: padded for that too, 16x64x1024 k5 took 4.5 ms for 4.3 (one thread of Zen
    5). Three axes' rows come out of the movement ops with their divisions unsimplified, which the template cannot
    read in place: their windows stay as they were."""
    if not get_device(x.device).packs_operands or len(kernel) != 2 or any(s != 1 for s in stride) \
            or math.prod(kernel) == 1:
        return False
    spatial, _ = _padded_images(x, pads)
    out = [n - d * (k - 1) for n, k, d in zip(spatial, kernel, dilation)]
    return min(out) > 0 and out[0] * math.prod(spatial[1:]) <= JUNK_COLUMNS * math.prod(out)


def _conv_of_rows(x: Tensor, weight: Tensor, pads: Sequence[tuple[int, int]], dilation: Sequence[int],
                  groups: int) -> Tensor:
    """The stride-1 convolution of (N, C_in, *spatial) x, without the bias, read from the rows of its padded images,
    an implicit GEMM: each image padded, flattened, is one row per channel, and the output at flattened position j
    (of the padded image's row length along every axis but the first) takes from tap t the element j + offset(t)
    of its channel's row, offset(t) = sum of t_i * dilation_i * (the padded image's stride along axis i). So the
    windows are, per (channel, tap), a run of the row, which the template reads where it lies, a row of the
    product's right operand (`kernels/llvm/gemm.py`, `_b_taps`), with no copy of the windows. The columns between
    the output's rows (the padding's width) are computed too, and dropped: the product's epilogue copies the rest
    (16x64x56x56 k3: 3248 columns for 3136).

    Each image is padded with rows more (`_rows_copy`)."""
    n, c = x.shape[:2]
    cout, cg, *kernel = weight.shape
    nd = len(kernel)
    spatial, steps = _padded_images(x, pads)
    out = [m - d * (k - 1) for m, k, d in zip(spatial, kernel, dilation)]
    padded, extra = _rows_copy(x, kernel, pads, dilation)
    rows = padded.reshape(n, c, (spatial[0] + extra) * steps[0])
    for k, d, step in zip(kernel, dilation, steps):  # each axis's taps before the row: (N, C, *kernel, row)
        rows = _windows(rows, [k], [1], [d * step])
        rows = rows.permute(*range(rows.ndim - 2), rows.ndim - 1, rows.ndim - 2)
    columns = out[0] * steps[0]
    rows = rows._shrink([*[(0, m, 1) for m in rows.shape[:-1]], (0, columns, 1)])
    lhs = rows.reshape(n, groups, 1, c // groups, *kernel, columns)
    rhs = weight.reshape(1, groups, cout // groups, cg, *kernel, 1)
    product = (lhs * rhs)._reduce(ReduceOp.SUM, tuple(range(3, 4 + nd)), False, "conv")
    product = product.reshape(n, cout, out[0], *spatial[1:])
    return product._shrink([(0, n, 1), (0, cout, 1), *[(0, m, 1) for m in out]])


def _padded_images(x: Tensor, pads: Sequence[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """The spatial sizes of (N, C, *spatial) x padded by `pads`, and the padded image's strides along them."""
    spatial = [m + before + after for m, (before, after) in zip(x.shape[2:], pads)]
    return spatial, [math.prod(spatial[i + 1:]) for i in range(len(spatial))]


def _rows_copy(x: Tensor, kernel: Sequence[int], pads: Sequence[tuple[int, int]],
               dilation: Sequence[int]) -> tuple[Tensor, int]:
    """The padded copy of x whose rows `_conv_of_rows` reads, and the rows it has past the padding: each image has
    rows enough at its end that every tap's run, and the template's last panel past it (`ROWS_READ_PAST`), lies
    inside it. The weight gradient's windows are of the same copy (`_grouped_windows`)."""
    _, steps = _padded_images(x, pads)
    past = sum(d * (k - 1) * step for k, d, step in zip(kernel[1:], dilation[1:], steps[1:])) + ROWS_READ_PAST
    extra = -(-past // steps[0])
    return x.pad([(0, 0), (0, 0), (pads[0][0], pads[0][1] + extra), *pads[1:]]).contiguous(), extra


def _conv_weight_grad(x: Tensor, g: Tensor, kernel: Sequence[int], stride: Sequence[int],
                      pads: Sequence[tuple[int, int]], dilation: Sequence[int], groups: int) -> Tensor:
    """The gradient of the convolution's weight (C_out, C_in / groups, *kernel) from its input x and the
    gradient g of its output: the windows of x times g, summed over the batch and the output positions.

    Where the windows span several taps of an image of two or more axes and the sum runs over more terms than
    there are output channels per group (a convolution over a large image), the windows are the product's
    left operand, (C_in / groups, *kernel) its rows, and the gradient is transposed after: the template packs a
    left operand that runs along k in runs of each row (`Layout.a_rows`), a copy along the image's rows,
    where the windows as the right operand are gathered a panel's 32 taps at a time per term, each term's
    place in the image found by a division per axis (16x64x56x56 k3: packing 29 -> 11 ms, one thread). Few
    terms (a strided convolution of a small image) leave the product no smaller than the windows: its
    transposing copy would cost more than the packing saves; the windows of one axis (conv1d) or one tap (a
    1x1 kernel) are gathered at little cost, and were slower packed in runs (10.0 -> 11.1 ms forward+backward
    at 16x64x56x56 k1, 10.9 -> 11.5 ms for conv1d 16x64x1024 k5)."""
    n, cout, *out = g.shape
    nd = len(kernel)
    win = _grouped_windows(x, kernel, stride, pads, dilation, groups)
    if nd < 2 or math.prod(kernel) == 1 or n * math.prod(out) < cout // groups:
        rows = g.reshape(n, groups, cout // groups, 1, *out, *[1] * nd)
        gw = (rows * win)._reduce(ReduceOp.SUM, (0, *range(4, 4 + nd)), False, "conv")
        return gw.reshape(cout, x.shape[1] // groups, *kernel)
    rows = g.reshape(n, groups, 1, *[1] * nd, cout // groups, *out)
    win = win.squeeze(2).permute(0, 1, 2, *range(3 + nd, 3 + 2 * nd), *range(3, 3 + nd)).unsqueeze(3 + nd)
    gw = (win * rows)._reduce(ReduceOp.SUM, (0, *range(4 + nd, 4 + 2 * nd)), False, "conv")
    return gw.permute(0, 2 + nd, 1, *range(2, 2 + nd)).reshape(cout, x.shape[1] // groups, *kernel)


def _conv(x: Tensor, weight: Tensor, stride: Sequence[int], pads: Sequence[tuple[int, int]],
          dilation: Sequence[int], groups: int) -> Tensor:
    """The convolution without the bias, of checked shapes and options, with its own backward."""
    kernel = weight.shape[2:]

    def backward(g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        gx = gw = None
        if x.requires_grad:
            # g in a buffer of its own: the input and the weight gradient's contractions both read it, and
            # their packing would each recompute what made g (a max-pool's backward, a dropout mask)
            g = g.contiguous()
            gx, = recipe.apply(_input_grad, (tuple(x.shape[2:]), *options), (), (g, weight))
        if weight.requires_grad:
            gw, = recipe.apply(_weight_grad, (tuple(kernel), *options), (), (x, g))
        return gx, gw

    options = (tuple(stride), tuple(map(tuple, pads)), tuple(dilation), groups)

    return custom_vjp((x, weight), lambda: recipe.apply(_forward, options, (), (x, weight))[0], backward)


def _forward(flags: tuple, scalars: tuple, x: Tensor, weight: Tensor) -> tuple[Tensor]:
    """`_conv_forward` of (stride, pads, dilation, groups) `flags`, as `recipe.apply` takes it: a 3x3 kernel's
    windows are some forty ops, recorded once per structure."""
    return (_conv_forward(x, weight, *flags),)


def _input_grad(flags: tuple, scalars: tuple, g: Tensor, weight: Tensor) -> tuple[Tensor]:
    """`_conv_input_grad` of (size, stride, pads, dilation, groups) `flags`, as `recipe.apply` takes it: a
    convolution's backward records it once per structure (a 3x3 kernel's placement is some ninety ops)."""
    return (_conv_input_grad(g, weight, *flags),)


def _weight_grad(flags: tuple, scalars: tuple, x: Tensor, g: Tensor) -> tuple[Tensor]:
    """`_conv_weight_grad` of (kernel, stride, pads, dilation, groups) `flags`, as `recipe.apply` takes it."""
    return (_conv_weight_grad(x, g, *flags),)


def _conv_input_grad(g: Tensor, weight: Tensor, size: Sequence[int], stride: Sequence[int],
                     pads: Sequence[tuple[int, int]], dilation: Sequence[int], groups: int) -> Tensor:
    """The gradient of a convolution's input (spatial `size`) from the gradient `g` of its output, term for
    term as the chain rule has it: input element i (i + pad_before in the padded input) takes g[o] * w[k] for
    every output o and tap k with o*stride + k*dilation = i + pad_before, and no other term.

    The columns first, a contraction: for every input channel and tap, the output gradient times that tap's
    weights, summed over the output channels. Then each tap's column is placed at the input elements its
    terms belong to (shifted by the tap's offset, in its phase of the stride: `_place_taps`) and the taps are summed. An
    input element that a tap reaches through no output (past an edge, or between strided windows) gets no
    term from it: a transposed convolution over zeros around and between g's elements would add zero times
    the weight, NaN where the weight is infinite (torch sums only the terms that exist)."""
    n, cout, *out = g.shape
    _, cg, *kernel = weight.shape
    nd, og = len(kernel), cout // groups
    # (groups, C_in / groups, *kernel, C_out / groups, N, *out) summed over the output channels: the columns
    # in the row-major order of the template's product (which it writes as it is), each tap's a block that
    # its placement reads along the rows of the input gradient
    taps = weight.reshape(groups, og, cg, *kernel).permute(0, *range(2, 3 + nd), 1)
    taps = taps.reshape(groups, cg, *kernel, og, 1, *[1] * nd)
    rows = g.reshape(n, groups, og, *out).permute(1, 2, 0, *range(3, 3 + nd))
    rows = rows.reshape(groups, 1, *[1] * nd, og, n, *out)
    cols = (taps * rows)._reduce(ReduceOp.SUM, (2 + nd,), False, "conv")  # (groups, C_in / groups, *kernel, N, *out)
    return _place_taps(lambda tap: cols[(slice(None), slice(None), *tap)].permute(2, 0, 1, *range(3, 3 + nd))
                       .reshape(n, groups * cg, *out), kernel, stride, dilation, pads, size)


def _place_taps(column: Callable[[tuple[int, ...]], Tensor], kernel: Sequence[int], stride: Sequence[int],
                dilation: Sequence[int], pads: Sequence[tuple[int, int]], size: Sequence[int]) -> Tensor:
    """The sum over the kernel's taps of `column(tap)` (N, C, *out) placed where the tap's terms belong in an
    (N, C, *size) result: output o of tap k at o * stride + k * dilation - pad_before.

    With a stride, each tap reaches one phase of the result (its elements i with i % stride the same) and each
    phase sums its own taps' columns, shifted: a kernel of its own over 1 / stride of the elements per axis,
    each element with the terms it takes instead of every tap's (8x3x224x224 input of a 7x7 kernel at stride
    2: 9 to 16 taps, not 49). The phases are then interleaved."""
    taps = list(itertools.product(*(range(k) for k in kernel)))
    if all(s == 1 for s in stride):
        return _summed(column, taps, [[k * d - before for k, d, (before, _) in zip(tap, dilation, pads)]
                                      for tap in taps], size)
    units = [-(-n // s) for n, s in zip(size, stride)]
    phases = []
    for phase in itertools.product(*(range(s) for s in stride)):
        # tap k reaches i = s*u + r from output o = u + (r + pad_before - k*d) / s, where that divides
        mine = [tap for tap in taps if all((r + before - k * d) % s == 0
                                           for r, k, d, s, (before, _) in zip(phase, tap, dilation, stride, pads))]
        shifts = [[-((r + before - k * d) // s) for r, k, d, s, (before, _) in zip(phase, tap, dilation, stride, pads)]
                  for tap in mine]
        some = column(taps[0])
        phases.append(_summed(column, mine, shifts, units).contiguous() if mine else
                      zeros((*some.shape[:2], *units), dtype=some.dtype, device=some.device))
    nd = len(kernel)
    woven = stack(phases).reshape(*stride, *phases[0].shape)
    woven = woven.permute(nd, nd + 1, *[a for i in range(nd) for a in (nd + 2 + i, i)])
    woven = woven.reshape(*woven.shape[:2], *[u * s for u, s in zip(units, stride)])
    return woven._shrink([(0, woven.shape[0], 1), (0, woven.shape[1], 1), *[(0, n, 1) for n in size]])


def _summed(column: Callable[[tuple[int, ...]], Tensor], taps: Sequence[tuple[int, ...]],
            offsets: Sequence[Sequence[int]], size: Sequence[int]) -> Tensor:
    """The sum over `taps` of `column(tap)` (N, C, *out), output o of each at o + its `offsets`, in an (N, C,
    *size) result."""
    total = None
    for tap, offset in zip(taps, offsets):
        placed = _shifted(column(tap), offset, size)
        total = placed if total is None else total + placed
    assert total is not None, "a kernel has at least one tap"
    return total


def _shifted(t: Tensor, offsets: Sequence[int], size: Sequence[int]) -> Tensor:
    """`t` (N, C, *out) in an (N, C, *size) result, element o at o + offset along each spatial axis, zeros
    elsewhere; what falls outside `size` is cut."""
    n, c, *out = t.shape
    edges = [(off, length - off - m) for off, length, m in zip(offsets, size, out)]
    wide = t.pad([(0, 0), (0, 0), *[(max(b, 0), max(a, 0)) for b, a in edges]])
    return wide._shrink([(0, n, 1), (0, c, 1), *[(max(-b, 0), m - max(-a, 0), 1)
                                                 for (b, a), m in zip(edges, wide.shape[2:])]])


# ---- transposed convolutions -----------------------------------------------------------------------------------


def _conv_transposend(x: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
                      output_padding: Any, groups: int, dilation: Any, nd: int, name: str) -> Tensor:
    if weight.ndim != nd + 2:
        raise ShapeError(f"{name}: expected a {nd + 2}-d weight, got shape {weight.shape}")

    def batched(x: Tensor) -> Tensor:
        cin, og, *kernel = weight.shape
        _check_groups(cin, og * groups, x.shape[1] // max(groups, 1), groups, weight, name)
        if x.shape[1] != cin:
            raise ShapeError(f"{name}: input with {x.shape[1]} channels for a weight of shape {weight.shape} "
                             f"(in_channels first)")
        stride_, dilation_ = _pair(stride, nd, name), _pair(dilation, nd, name)
        pad_, extra = _pair(padding, nd, name), _pair(output_padding, nd, name)
        if any(e >= max(s, d) or e < 0 for e, s, d in zip(extra, stride_, dilation_)):
            raise ValueError(f"{name}: output_padding {extra} must be below the stride {stride_} or the "
                             f"dilation {dilation_}")
        size = [(i - 1) * s - 2 * p + d * (k - 1) + e + 1
                for i, s, p, d, k, e in zip(x.shape[2:], stride_, pad_, dilation_, kernel, extra)]
        if any(o <= 0 for o in size):
            raise ShapeError(f"{name}: input of shape {x.shape} gives an output of size {tuple(size)}")
        out = _conv_transpose(x.contiguous(), weight, size, stride_, [(p, p) for p in pad_], dilation_, groups)
        return out if bias is None else out + bias.reshape(og * groups, *[1] * nd)

    return _batched(batched, x, nd, name)


def _conv_transpose(x: Tensor, weight: Tensor, size: Sequence[int], stride: Sequence[int],
                    pads: Sequence[tuple[int, int]], dilation: Sequence[int], groups: int) -> Tensor:
    """The transposed convolution (the input gradient of the convolution of `weight` from an output gradient
    x) to spatial `size`; its input gradient is that convolution of the output gradient, its weight gradient
    the convolution's, of the output gradient as the input and x as the output's gradient."""
    def backward(g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        g = g.contiguous()
        gx = _conv_forward(g, weight, stride, pads, dilation, groups) if x.requires_grad else None
        gw = _conv_weight_grad(g, x, weight.shape[2:], stride, pads, dilation, groups) \
            if weight.requires_grad else None
        return gx, gw

    return custom_vjp((x, weight), lambda: _conv_input_grad(x, weight, size, stride, pads, dilation, groups),
                      backward)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """1-d transposed convolution, as torch.nn.functional.conv_transpose1d: input (N, C_in, L) or (C_in, L),
    weight (C_in, C_out / groups, k); output length (L - 1) stride - 2 padding + dilation (k - 1) +
    output_padding + 1."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                             "conv_transpose1d")


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """2-d transposed convolution, as torch.nn.functional.conv_transpose2d (weight (C_in, C_out / groups, kH,
    kW)): the gradient of conv2d's input, each tap's contraction placed where it belongs."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                             "conv_transpose2d")


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """3-d transposed convolution, as torch.nn.functional.conv_transpose3d (weight (C_in, C_out / groups, kD,
    kH, kW))."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                             "conv_transpose3d")


# ---- unfold, fold ------------------------------------------------------------------------------------------------


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """PyTorch's `F.unfold` (im2col): (N, C, H, W) or (C, H, W) -> (N, C kH kW, L), column l the l-th
    window (row-major over the output positions), a view of the padded input."""
    def batched(x: Tensor) -> Tensor:
        k, d = _pair(kernel_size, 2, "unfold"), _pair(dilation, 2, "unfold")
        p, s = _pair(padding, 2, "unfold"), _pair(stride, 2, "unfold")
        n, c = x.shape[:2]
        win = _windows(x.pad([(0, 0), (0, 0), *[(pi, pi) for pi in p]]), k, s, d)  # (N, C, oh, ow, kh, kw)
        return win.permute(0, 1, 4, 5, 2, 3).reshape(n, c * k[0] * k[1], -1)

    return _batched(batched, input, 2, "unfold")


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Tensor:
    """PyTorch's `F.fold` (col2im), unfold's adjoint: (N, C kH kW, L) or (C kH kW, L) -> (N, C, *output_size),
    each column's window added at its place (overlaps sum)."""
    size, k = _pair(output_size, 2, "fold"), _pair(kernel_size, 2, "fold")
    d, p, s = _pair(dilation, 2, "fold"), _pair(padding, 2, "fold"), _pair(stride, 2, "fold")
    out = [(n + 2 * pi - di * (ki - 1) - 1) // si + 1 for n, pi, di, ki, si in zip(size, p, d, k, s)]
    if input.ndim not in (2, 3) or input.shape[-2] % (k[0] * k[1]) or input.shape[-1] != math.prod(out) \
            or min(out) <= 0:
        raise ShapeError(f"fold: input of shape {input.shape} does not fit kernel_size {k} and output_size "
                         f"{size} (expected (N, C * {k[0] * k[1]}, {max(math.prod(out), 0)}))")

    def batched(x: Tensor) -> Tensor:
        n = x.shape[0]
        c = x.shape[1] // (k[0] * k[1])
        cols = x.reshape(n, c, k[0], k[1], *out)
        return _place_taps(lambda tap: cols[:, :, tap[0], tap[1]], k, s, d, [(pi, pi) for pi in p], size)

    return batched(input.unsqueeze(0)).squeeze(0) if input.ndim == 2 else batched(input)
