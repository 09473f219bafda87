"""Attention: ``scaled_dot_product_attention`` and ``multi_head_attention_forward``."""

from __future__ import annotations

import math
from typing import NamedTuple

import tensor
from tensor import Tensor
from tensor._dtype import HALF_FLOATS

from .dropout import dropout
from .linear import linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _causal_allowed(target_len: int, source_len: int, device) -> Tensor:
    """``(L, S)`` bool, True on and below the diagonal (top-left aligned, as in PyTorch)."""
    rows = tensor.arange(target_len, device=device).unsqueeze(1)
    return rows >= tensor.arange(source_len, device=device)


def _safe_softmax(scores: Tensor) -> Tensor:
    """Softmax over the last dim; rows that are entirely ``-inf`` give zeros, not NaN."""
    dead = (scores == float("-inf")).all(-1, keepdim=True)
    return scores.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)


def _check_mask_dtype(attn_mask: Tensor, query: Tensor) -> None:
    """PyTorch accepts a bool mask, a float32 one, or one of the query's dtype."""
    if attn_mask.dtype not in (tensor.bool, tensor.float32, query.dtype):
        raise RuntimeError(
            f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {attn_mask.dtype} and query.dtype: {query.dtype} instead."
        )


def _repeat_heads(t: Tensor, repeats: int) -> Tensor:
    """``t.repeat_interleave(repeats, dim=-3)`` via a broadcast view and one reshape."""
    shape = t.shape
    expanded = t.unsqueeze(-3).expand(*shape[:-2], repeats, *shape[-2:])
    return expanded.reshape(*shape[:-3], shape[-3] * repeats, *shape[-2:])


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(query @ key^T * scale + mask) @ value`` over the last two dims, batch dims broadcast.

    ``query`` is ``(..., L, E)``, ``key`` ``(..., S, E)``, ``value`` ``(..., S, Ev)``; the result is
    ``(..., L, Ev)``. A bool ``attn_mask`` marks the positions that may be attended (True = keep); a
    float one is added to the scores. ``is_causal`` keeps only ``j <= i`` (top-left aligned).
    Both masks together keep what both allow, as PyTorch's CPU kernels do.
    ``scale`` defaults to ``1 / sqrt(E)``. Rows with no position left give zeros. Dropout with
    probability ``dropout_p`` is applied to the attention weights. A float16 or bfloat16 attention
    is computed in float32 and rounded once, as PyTorch's CPU kernels accumulate.

    Raises:
        RuntimeError: if query, key and value differ in dtype; if the embedding sizes of query and
            key, or the lengths of key and value, differ; for a mask that is not bool, float32 or
            the query's dtype; or, with ``enable_gqa``, if the query heads are not a multiple of
            the key/value heads.
        ValueError: if ``dropout_p`` is not in [0, 1].
    """
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError(
            f"scaled_dot_product_attention: expected query, key and value to be at least 2-D, got "
            f"{query.ndim}-D, {key.ndim}-D and {value.ndim}-D")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(
            f"scaled_dot_product_attention: query and key must have the same embedding size, got "
            f"query {list(query.shape)} and key {list(key.shape)}")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(
            f"scaled_dot_product_attention: key and value must have the same sequence length, got "
            f"key {list(key.shape)} and value {list(value.shape)}")
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(
            f"Expected query, key, and value to have the same dtype, but got query.dtype: {query.dtype} "
            f"key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if attn_mask is not None:
        _check_mask_dtype(attn_mask, query)
    if query.dtype in HALF_FLOATS:  # q @ k^T overflows float16 long before the softmax scales it
        mask = attn_mask.float() if attn_mask is not None and attn_mask.is_floating_point() else attn_mask
        out = scaled_dot_product_attention(query.float(), key.float(), value.float(), mask, dropout_p, is_causal,
                                           scale, enable_gqa)
        return out.to(query.dtype)
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        heads, kv_heads = query.shape[-3], key.shape[-3]
        if heads % kv_heads or value.shape[-3] != kv_heads:
            raise RuntimeError(
                f"scaled_dot_product_attention: with enable_gqa, the number of query heads ({heads}) must "
                f"be a multiple of the key/value heads ({kv_heads}, {value.shape[-3]})")
        key, value = _repeat_heads(key, heads // kv_heads), _repeat_heads(value, heads // kv_heads)
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    scores = (query * scale) @ key.mT
    allowed = None
    if is_causal:
        allowed = _causal_allowed(query.shape[-2], key.shape[-2], query.device)
    if attn_mask is not None:
        if attn_mask.dtype is tensor.bool:
            allowed = attn_mask if allowed is None else allowed & attn_mask
        else:
            scores = scores + attn_mask.to(scores.dtype)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = _safe_softmax(scores) if attn_mask is not None or is_causal else scores.softmax(-1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return weights @ value


def _additive_mask(mask: Tensor | None, name: str, dtype) -> Tensor | None:
    """A bool mask (True = not allowed) becomes 0 / -inf in ``dtype``; a float mask is kept."""
    if mask is None:
        return None
    if mask.dtype is tensor.bool:
        return tensor.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask.to(dtype)


def _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """PyTorch's ``_mha_shape_check``: returns whether the input is batched."""
    if query.ndim == 3:
        if key.ndim != 3 or value.ndim != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.ndim}-D and {value.ndim}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D "
                                 f"but found {key_padding_mask.ndim}-D tensor instead")
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                 f"but found {attn_mask.ndim}-D tensor instead")
        return True
    if query.ndim == 2:
        if key.ndim != 2 or value.ndim != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.ndim}-D and {value.ndim}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or "
                                 f"1-D but found {key_padding_mask.ndim}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.ndim not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or "
                                     f"3-D but found {attn_mask.ndim}-D tensor instead")
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.ndim == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {tuple(attn_mask.shape)}")
        return False
    raise AssertionError(
        f"query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D query tensor")


class _Heads(NamedTuple):
    """How the (L, N, E) or (N, L, E) projections split into ``num`` heads of ``dim`` features."""

    bsz: int
    num: int
    dim: int
    seq_dim: int  # 0 for (L, N, E), 1 for batch_first (N, L, E)


def _head_dim(embed_dim: int, embed_dim_to_check: int, num_heads: int) -> int:
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    return head_dim


def _check_key_value(key: Tensor, value: Tensor, use_separate_proj_weight: bool) -> None:
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")


def _packed_projection(query, key, value, in_proj_weight, in_proj_bias) -> tuple[Tensor, Tensor, Tensor]:
    """q, k, v from one ``(3E, E)`` weight: one matmul for self-attention, two when key is value."""
    if query is key and key is value:
        return linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
    embed_dim = query.shape[-1]
    w_q, w_kv = in_proj_weight.split([embed_dim, 2 * embed_dim])
    b_q = b_kv = None
    if in_proj_bias is not None:
        b_q, b_kv = in_proj_bias.split([embed_dim, 2 * embed_dim])
    q = linear(query, w_q, b_q)
    if key is value:
        return (q, *linear(key, w_kv, b_kv).chunk(2, -1))
    w_k, w_v = w_kv.chunk(2)
    b_k, b_v = b_kv.chunk(2) if b_kv is not None else (None, None)
    return q, linear(key, w_k, b_k), linear(value, w_v, b_v)


def _separate_projection(inputs, weights, in_proj_bias) -> tuple[Tensor, Tensor, Tensor]:
    """q, k, v from three weights (key and value may have their own sizes)."""
    biases = in_proj_bias.chunk(3) if in_proj_bias is not None else (None, None, None)
    return tuple(linear(x, w, b) for x, w, b in zip(inputs, weights, biases))


def _attn_mask_4d(attn_mask: Tensor | None, heads: _Heads, tgt_len: int, src_len: int) -> Tensor | None:
    """An additive ``(L, S)`` or ``(N * H, L, S)`` mask as ``(1, 1, L, S)`` or ``(N, H, L, S)``."""
    if attn_mask is None:
        return None
    if attn_mask.ndim == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                               f"{(tgt_len, src_len)}.")
        return attn_mask.reshape(1, 1, tgt_len, src_len)
    expected = (heads.bsz * heads.num, tgt_len, src_len)
    if tuple(attn_mask.shape) != expected:
        raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                           f"{expected}.")
    return attn_mask.reshape(heads.bsz, heads.num, tgt_len, src_len)


def _append_bias_kv(k: Tensor, v: Tensor, bias_k: Tensor | None, bias_v: Tensor | None,
                    heads: _Heads) -> tuple[Tensor, Tensor]:
    """k and v with the learned ``bias_k`` / ``bias_v`` appended as one more source position."""
    if bias_k is None or bias_v is None:
        raise AssertionError("bias_k is set but bias_v is None" if bias_v is None
                             else "bias_v is set but bias_k is None")
    embed_dim = heads.num * heads.dim
    shape = (1, heads.bsz, embed_dim) if heads.seq_dim == 0 else (heads.bsz, 1, embed_dim)
    return tuple(tensor.cat([t, bias.reshape(1, 1, embed_dim).expand(*shape)], heads.seq_dim)
                 for t, bias in ((k, bias_k), (v, bias_v)))


def _with_padding(mask: Tensor | None, key_padding_mask: Tensor | None, bsz: int, src_len: int) -> Tensor | None:
    """The attention mask plus the additive ``(N, S)`` key padding mask, as ``(N, 1, 1, S)``."""
    if key_padding_mask is None:
        return mask
    if key_padding_mask.shape[0] != bsz:
        raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
    if key_padding_mask.shape[1] != src_len:
        raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                             f"{key_padding_mask.shape[1]}")
    padding = key_padding_mask.reshape(bsz, 1, 1, src_len)
    return padding if mask is None else mask + padding


def _attend(q, k, v, mask, dropout_p: float, need_weights: bool, average_attn_weights: bool,
            use_causal: bool) -> tuple[Tensor, Tensor | None]:
    """Attention over ``(N, H, L, head_dim)`` heads: the output, and the weights when needed."""
    if not need_weights:
        return scaled_dot_product_attention(q, k, v, mask, dropout_p, use_causal), None
    scores = (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.mT
    if mask is not None:
        scores = scores + mask
    weights = scores.softmax(-1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return weights @ v, weights.mean(1) if average_attn_weights else weights


def multi_head_attention_forward(
    query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
    in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None, bias_v: Tensor | None,
    add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Tensor | None,
    training: bool = True, key_padding_mask: Tensor | None = None, need_weights: bool = True,
    attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False, q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None, v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
    static_v: Tensor | None = None, average_attn_weights: bool = True, is_causal: bool = False,
    *, batch_first: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention as ``torch.nn.functional.multi_head_attention_forward``.

    Inputs are ``(L, N, E)`` (``(N, L, E)`` with the keyword ``batch_first=True``, an extension) or
    unbatched ``(L, E)``. Bool masks mark positions that may NOT be attended (True = masked);
    float masks are added to the scores. Returns ``(output, weights)``: weights are averaged over
    heads, ``(N, L, S)``, unless ``average_attn_weights=False`` (``(N, H, L, S)``), and None
    unless ``need_weights``.

    Raises:
        AssertionError: for inconsistent ranks or sizes (PyTorch's error type here), e.g. "was
            expecting embedding dimension of 8, but got 6".
        RuntimeError: for an ``attn_mask`` of the wrong shape, or ``is_causal`` without ``attn_mask``.
    """
    batched = _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    seq_dim = 1 if batch_first and batched else 0
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        key_padding_mask = key_padding_mask.unsqueeze(0) if key_padding_mask is not None else None
    use_causal = is_causal and key_padding_mask is None and not need_weights
    key_padding_mask = _additive_mask(key_padding_mask, "key_padding_mask", query.dtype)
    attn_mask = None if use_causal else _additive_mask(attn_mask, "attn_mask", query.dtype)
    heads = _Heads(query.shape[1 - seq_dim], num_heads, _head_dim(query.shape[2], embed_dim_to_check, num_heads),
                   seq_dim)
    _check_key_value(key, value, use_separate_proj_weight)
    if use_separate_proj_weight:
        q, k, v = _separate_projection((query, key, value), (q_proj_weight, k_proj_weight, v_proj_weight),
                                       in_proj_bias)
    else:
        q, k, v = _packed_projection(query, key, value, in_proj_weight, in_proj_bias)
    mask = _attn_mask_4d(attn_mask, heads, query.shape[seq_dim], key.shape[seq_dim])
    if bias_k is not None or bias_v is not None:
        k, v = _append_bias_kv(k, v, bias_k, bias_v, heads)
        mask, key_padding_mask = _pad_last(mask), _pad_last(key_padding_mask)
    q, k, v = (_split_heads(t, heads) for t in (q, k, v))
    k = k if static_k is None else _static_heads(static_k, heads, "static_k")
    v = v if static_v is None else _static_heads(static_v, heads, "static_v")
    if add_zero_attn:
        k, v = (tensor.cat([t, t.new_zeros((heads.bsz, heads.num, 1, heads.dim))], 2) for t in (k, v))
        mask, key_padding_mask = _pad_last(mask), _pad_last(key_padding_mask)
    mask = _with_padding(mask, key_padding_mask, heads.bsz, k.shape[2])
    out, weights = _attend(q, k, v, mask, dropout_p if training else 0.0, need_weights, average_attn_weights,
                           use_causal)
    out = linear(_merge_heads(out, heads), out_proj_weight, out_proj_bias)
    if not batched:
        out = out.squeeze(1)
        weights = weights.squeeze(0) if weights is not None else None
    return out, weights


def _split_heads(t: Tensor, heads: _Heads) -> Tensor:
    """(L, N, E) or (N, L, E) -> (N, H, L, head_dim)."""
    length = t.shape[heads.seq_dim]
    if heads.seq_dim == 0:
        return t.reshape(length, heads.bsz, heads.num, heads.dim).permute(1, 2, 0, 3)
    return t.reshape(heads.bsz, length, heads.num, heads.dim).permute(0, 2, 1, 3)


def _static_heads(t: Tensor, heads: _Heads, name: str) -> Tensor:
    """A precomputed ``(N * H, S, head_dim)`` key or value, as PyTorch's ``static_k``/``static_v``,
    as ``(N, H, S, head_dim)``."""
    if t.shape[0] != heads.bsz * heads.num:
        raise AssertionError(f"expecting {name}.size(0) of {heads.bsz * heads.num}, but got {t.shape[0]}")
    if t.shape[2] != heads.dim:
        raise AssertionError(f"expecting {name}.size(2) of {heads.dim}, but got {t.shape[2]}")
    return t.reshape(heads.bsz, heads.num, t.shape[1], heads.dim)


def _merge_heads(t: Tensor, heads: _Heads) -> Tensor:
    """(N, H, L, head_dim) -> (L, N, E) or (N, L, E)."""
    t = t.permute(2, 0, 1, 3) if heads.seq_dim == 0 else t.permute(0, 2, 1, 3)
    return t.reshape(t.shape[0], t.shape[1], heads.num * heads.dim)


def _pad_last(mask: Tensor | None) -> Tensor | None:
    """Append one zero column (an always-allowed extra key) to an additive mask."""
    if mask is None:
        return None
    return tensor.cat([mask, mask.new_zeros((*mask.shape[:-1], 1))], -1)
