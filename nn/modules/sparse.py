"""Embedding: a lookup table of learnable vectors."""

from __future__ import annotations

import tensor
from tensor import Tensor

from .. import functional as F
from .. import init
from ..functional.sparse import normalize_padding_idx
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding"]


class Embedding(Module):
    """A table of ``num_embeddings`` vectors of size ``embedding_dim``, initialised N(0, 1).

    The row ``padding_idx`` is zero-initialised and gets no gradient. With ``max_norm``, rows
    are renormalized in place when looked up.

    Raises:
        AssertionError: for a ``padding_idx`` out of range, or a ``_weight`` of the wrong shape
            (as PyTorch).
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Tensor | None = None, _freeze: bool = False, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = normalize_padding_idx(padding_idx, num_embeddings)
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(tensor.empty((num_embeddings, embedding_dim), device=device, dtype=dtype),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            assert tuple(_weight.shape) == (num_embeddings, embedding_dim), \
                "Shape of weight does not match num_embeddings and embedding_dim"
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """Re-draw N(0, 1) weights, zeroing the padding row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with tensor.no_grad():
                self.weight[self.padding_idx] = 0

    def forward(self, input: Tensor) -> Tensor:
        """Look up the rows ``input``."""
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, sparse: bool = False) -> Embedding:
        """An Embedding whose weight is ``embeddings`` (2-D); frozen (no grad) by default.

        Raises:
            AssertionError: if ``embeddings`` is not 2-D (as PyTorch).
        """
        assert embeddings.ndim == 2, "Embeddings parameter is expected to be 2-dimensional"
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)
