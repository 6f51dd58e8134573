"""Attention (PyTorch's `F.scaled_dot_product_attention` and `nn.MultiheadAttention`'s functional core).

The scores are one contraction, q @ k^T; the scale, the masks and the softmax are elementwise and reduction
work on its result, which the scheduler fuses into the softmax's kernels (no kernel of their own), and the
weights times v is a second contraction."""
from __future__ import annotations

import math
from collections.abc import Sequence

from .. import dtypes, recipe
from ..autograd import custom_vjp
from ..creation import arange
from ..errors import DTypeError, ShapeError
from ..movement import concat
from ..tensor import Tensor, where


def _safe_softmax(s: Tensor) -> Tensor:
    """softmax over the last axis, with rows that are all -inf (every key masked) giving zeros, as PyTorch's
    attention does (its `_safe_softmax`), and their gradient zero; the gradient is softmax's `y (g - sum(g y))`."""
    wide, out = s._widened()
    y = custom_vjp((wide,), lambda: recipe.apply(_safe_softmax_forward, (), _SAFE_SOFTMAX_SCALARS, (wide,))[0],
                   lambda g, y: (y * (g - (g * y).sum(-1, keepdims=True)),), takes_result=True)
    return y.cast(out)


# what `_safe_softmax_forward` compares and replaces with: distinct objects, each the recipe's scalar of its place
_SAFE_SOFTMAX_SCALARS = (-math.inf, 0.0, 1.0)


def _safe_softmax_forward(flags: tuple, scalars: tuple[float, float, float], x: Tensor) -> tuple[Tensor]:
    """`_safe_softmax`'s forward graph, as `recipe.apply` takes it (recorded once per dtype and shape)."""
    minus_inf, zero, one = scalars
    m = x.max(-1, keepdims=True) if x.shape[-1] else x.sum(-1, keepdims=True)
    # an all -inf row shifts by 0, so its exponentials are 0 (not NaN), and its sum 0 divides as 1
    e = (x - where(m == minus_inf, zero, m)).exp()
    total = e.sum(-1, keepdims=True)
    return (e / where(total == zero, one, total),)


def _apply_masks(scores: Tensor, masks: Sequence[Tensor | None], minus_inf: float = -math.inf) -> Tensor:
    """Each mask in turn: a boolean one keeps the scores where it is True (`minus_inf` elsewhere), a float one is
    added, as PyTorch's `attn_mask`."""
    for mask in masks:
        if mask is None:
            continue
        if mask.dtype == dtypes.bool_:
            scores = where(mask, scores, minus_inf)
        elif mask.dtype.is_float:
            scores = scores + mask.cast(scores.dtype)
        else:
            raise DTypeError(f"attention: a mask must be boolean or floating, got {mask.dtype.name}")
    return scores


def attention(q: Tensor, k: Tensor, v: Tensor, masks: Sequence[Tensor | None], scale: float,
              dropout_p: float, minus_inf: float = -math.inf) -> tuple[Tensor, Tensor]:
    """softmax(q k^T * scale + masks) (dropped out with `dropout_p`) @ v over the last two axes, and the
    attention weights (`minus_inf`: what a boolean mask puts in the scores it drops)."""
    from .functional import dropout
    scores = _apply_masks(q.matmul(k.swapaxes(-1, -2)) * scale, masks, minus_inf)
    weights = _safe_softmax(scores)
    if dropout_p > 0:
        weights = dropout(weights, dropout_p)
    return weights.matmul(v), weights


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """PyTorch's `F.scaled_dot_product_attention`: softmax(query key^T * scale + mask) @ value, with query
    (..., L, E), key (..., S, E), value (..., S, Ev), the result (..., L, Ev). `scale` defaults to 1/sqrt(E);
    `attn_mask` broadcasts to (..., L, S) and is boolean (True takes part) or added to the scores;
    `is_causal` keeps the lower triangle (query i sees keys j <= i, aligned at the top left). A query whose
    keys are all masked gets zeros, as in PyTorch. `enable_gqa` lets key and value have fewer heads (axis -3)
    than query, each serving query heads in consecutive groups. Dropout draws lazytensor's own random
    numbers (not PyTorch's)."""
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise ShapeError(f"scaled_dot_product_attention: query, key and value need at least 2 dimensions, got "
                         f"shapes {query.shape}, {key.shape} and {value.shape}")
    if not 0 <= dropout_p <= 1:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1], got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: pass attn_mask or is_causal, not both")
    if key.shape[-1] != query.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ShapeError(f"scaled_dot_product_attention: query {query.shape}, key {key.shape} and value "
                         f"{value.shape} do not match (query and key share E, key and value share S)")
    n_l, n_s = query.shape[-2], key.shape[-2]
    if is_causal:
        attn_mask = arange(n_l, device=query.device).reshape(n_l, 1) >= arange(n_s, device=query.device)
    scale_ = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    q, k, v, mask = query, key, value, attn_mask
    groups = 1
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        hq, hk = query.shape[-3], key.shape[-3]
        if hk == 0 or hq % hk or value.shape[-3] != hk:
            raise ShapeError(f"scaled_dot_product_attention: with enable_gqa, the query's {hq} heads must be a "
                             f"multiple of the key's and value's ({hk} and {value.shape[-3]})")
        # query heads in groups of hq / hk under each key head: a broadcast, no copy of key or value
        groups = hq // hk
        q = query.reshape(*query.shape[:-3], hk, groups, n_l, query.shape[-1])
        k, v = key.unsqueeze(-3), value.unsqueeze(-3)
        if mask is not None and mask.ndim >= 3:
            full = mask.broadcast_to(*mask.shape[:-3], hq, *mask.shape[-2:])
            mask = full.reshape(*mask.shape[:-3], hk, groups, *mask.shape[-2:])
    if dropout_p > 0:
        out, _ = attention(q, k, v, [mask], scale_, dropout_p)
    else:  # one autograd record, the graphs rebuilt (see `recipe`): a transformer attends in every block at every step
        out = recipe.apply_differentiable(_attention, (), (float(scale_), *_ATTENTION_SCALARS), (q, k, v, mask))
    if groups > 1:
        out = out.reshape(*out.shape[:-4], out.shape[-4] * groups, *out.shape[-2:])
    return out


# what `_attention` puts in the scores a boolean mask drops, then `_safe_softmax`'s scalars (the recipe's, given
# to `_attention` too: a scalar that a function does not take has no place in its recipe): distinct objects
_ATTENTION_SCALARS = (-math.inf, *_SAFE_SOFTMAX_SCALARS)


def _attention(flags: tuple, scalars: tuple, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> tuple[Tensor]:
    """`attention` without dropout, as `recipe.apply_differentiable` takes it (`scalars`: the scale, then
    `_ATTENTION_SCALARS`)."""
    return (attention(q, k, v, [mask], scalars[0], 0.0, scalars[1])[0],)


def multi_head_attention(query: Tensor, key: Tensor, value: Tensor, num_heads: int,
                         weights: tuple[Tensor, Tensor, Tensor], biases: tuple[Tensor | None, ...],
                         out_weight: Tensor, out_bias: Tensor | None, dropout_p: float,
                         key_padding_mask: Tensor | None, need_weights: bool, attn_mask: Tensor | None,
                         average_attn_weights: bool, bias_kv: tuple[Tensor, Tensor] | None = None,
                         add_zero_attn: bool = False) -> tuple[Tensor, Tensor | None]:
    """Batch-first multi-head attention of (N, L, E) queries over (N, S, kdim) keys and (N, S, vdim) values:
    the three projections, attention per head, the output projection; `key_padding_mask` (N, S) and
    `attn_mask` (L, S) or (N * num_heads, L, S) are PyTorch's (True, or -inf, excludes). `bias_kv` ((1, 1, E)
    each) appends a key and a value after the projections, `add_zero_attn` a zero key and value per head
    after them, as PyTorch's; every query attends to the keys added (the masks are padded to let it)."""
    from .functional import linear
    from .resampling import pad
    n, n_l, e = query.shape
    hd = e // num_heads
    q, k, v = (linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))
    if bias_kv is not None:
        k, v = (concat([t, b.cast(t.dtype).broadcast_to(n, 1, e)], 1) for t, b in zip((k, v), bias_kv))
    q, k, v = (t.reshape(n, t.shape[1], num_heads, hd).permute(0, 2, 1, 3) for t in (q, k, v))
    if add_zero_attn:
        k, v = (concat([t, t._const(0, t.dtype, t.device).broadcast_to(n, num_heads, 1, hd)], 2) for t in (k, v))
    n_s, added = k.shape[2], k.shape[2] - key.shape[1]
    masks: list[Tensor | None] = []
    for mask, shape in ((attn_mask, None), (key_padding_mask, (n, 1, 1, n_s))):
        if mask is None:
            continue
        mask = pad(mask, (0, added))  # the added keys take part (False, 0)
        if mask.ndim == 3:
            mask = mask.reshape(n, num_heads, n_l, n_s)
        elif shape is not None:
            mask = mask.reshape(shape)
        masks.append(~mask if mask.dtype == dtypes.bool_ else mask)
    out, w = attention(q, k, v, masks, 1 / math.sqrt(hd), dropout_p)
    out = linear(out.permute(0, 2, 1, 3).reshape(n, n_l, e), out_weight, out_bias)
    if not need_weights:
        return out, None
    return out, w.mean(1) if average_attn_weights else w
