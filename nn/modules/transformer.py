"""``TransformerEncoderLayer`` and ``TransformerEncoder`` (PyTorch's, without the inference fast path)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import tensor
from tensor import Tensor

from .. import functional as F
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder"]


def _get_activation_fn(activation: str) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
    """The (sz, sz) causal float mask: -inf above the diagonal, 0 elsewhere."""
    rows = tensor.arange(sz, device=device).unsqueeze(1)
    above = tensor.arange(sz, device=device) > rows
    return tensor.zeros(sz, sz, dtype=dtype, device=device).masked_fill(above, float("-inf"))


def _detect_is_causal_mask(mask: Tensor | None, is_causal: bool | None = None, size: int | None = None) -> bool:
    """``is_causal`` if given, else whether ``mask`` equals the causal float mask."""
    if is_causal is not None or mask is None:
        return is_causal is True
    sz = size if size is not None else mask.shape[-2]
    causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
    if tuple(mask.shape) != tuple(causal.shape):
        return False
    return bool((mask == causal).all())


def _as_float_mask(mask: Tensor | None, dtype) -> Tensor | None:
    if mask is None or mask.is_floating_point():
        return mask
    if mask.dtype is not tensor.bool:
        raise AssertionError("only bool and floating types of masks are supported")
    return tensor.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with dropout, a residual and LayerNorm
    (post-norm, or pre-norm with ``norm_first=True``).

    ``TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1, activation='relu',
    layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True)``; ``activation`` is
    'relu', 'gelu' or a callable.

    Raises:
        RuntimeError: for an activation name other than relu/gelu.
        AssertionError: if ``d_model`` is not divisible by ``nhead``.
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **factory
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        self.activation = activation

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        """Encode ``src`` ((S, N, E), (N, S, E) with ``batch_first``, or unbatched (S, E)).

        ``src_mask`` (S, S) or (N * nhead, S, S) and ``src_key_padding_mask`` (N, S) are bool (True =
        masked) or float (added) masks; ``is_causal`` hints that ``src_mask`` is causal.

        Raises:
            AssertionError / RuntimeError: for masks or inputs of the wrong shape (from attention).
        """
        src_key_padding_mask = _as_float_mask(src_key_padding_mask, src.dtype)
        src_mask = _as_float_mask(src_mask, src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        return self.dropout1(_attention(self.self_attn, x, x, attn_mask, key_padding_mask, is_causal))

    def _ff_block(self, x):
        return self.dropout2(_feed_forward(self, x))


class TransformerEncoder(Module):
    """A stack of ``num_layers`` deep copies of ``encoder_layer``, then the optional ``norm``.

    Raises:
        TypeError: if ``encoder_layer`` is not a Module.
    """

    def __init__(
        self,
        encoder_layer: Module,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = _layer_stack(encoder_layer, num_layers, "encoder_layer")
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False  # there is no nested-tensor fast path here
        self.mask_check = mask_check

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        """Run ``src`` through every layer (same masks for each), then ``norm``.

        ``is_causal=None`` detects whether ``mask`` is the causal mask.
        """
        src_key_padding_mask = _as_float_mask(src_key_padding_mask, src.dtype)
        mask = _as_float_mask(mask, src.dtype)
        first = self.layers[0] if len(self.layers) else None
        batch_first = bool(getattr(getattr(first, "self_attn", None), "batch_first", False))
        seq_len = src.shape[1 if batch_first and src.ndim == 3 else 0]
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


def _attention(attn: Module, x: Tensor, kv: Tensor, attn_mask, key_padding_mask, is_causal) -> Tensor:
    """``attn``'s output for queries ``x`` and keys/values ``kv`` (no weights)."""
    return attn(
        x, kv, kv, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False, is_causal=is_causal
    )[0]


def _feed_forward(layer: Module, x: Tensor) -> Tensor:
    """A transformer layer's feed-forward block before its last dropout."""
    return layer.linear2(layer.dropout(layer.activation(layer.linear1(x))))


def _layer_stack(layer: Module, num_layers: int, name: str) -> ModuleList:
    """``num_layers`` deep copies of ``layer`` (the argument called ``name``).

    Raises:
        TypeError: if ``layer`` is not a Module.
    """
    if not isinstance(layer, Module):
        raise TypeError(f"{name} must be a Module, got {type(layer).__name__}")
    return ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])
