"""More pooling layers: MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool1d/2d/3d,
MaxUnpool1d/2d/3d and LPPool1d/2d/3d; and the sliding-window layers Fold and Unfold."""

from __future__ import annotations

from collections.abc import Sequence

from tensor import Tensor

from .. import functional as F
from .module import Module
from .pooling import _AdaptiveAvgPoolNd, _MaxPoolNd, _ntuple

__all__ = [
    "MaxPool3d",
    "AvgPool3d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
    "Fold",
    "Unfold",
]

IntOrTuple = int | Sequence[int]


class MaxPool3d(_MaxPoolNd):
    """3-d max pooling over ``(N, C, D, H, W)`` input. Raises what ``F.max_pool3d`` raises."""

    def forward(self, input: Tensor):
        """Pool ``input`` (and return the indices with ``return_indices``)."""
        return F.max_pool3d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class AvgPool3d(Module):
    """3-d average pooling over ``(N, C, D, H, W)`` input. Raises what ``F.avg_pool3d`` raises."""

    def __init__(
        self,
        kernel_size: IntOrTuple,
        stride: IntOrTuple | None = None,
        padding: IntOrTuple = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        """Pool ``input``."""
        return F.avg_pool3d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed 3-d output size. Raises what ``F.adaptive_avg_pool3d`` raises."""

    def forward(self, input: Tensor) -> Tensor:
        """Pool ``input``."""
        return F.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMaxPoolNd(Module):
    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling into a fixed number of adaptive bins (see ``F.adaptive_max_pool1d``)."""

    def forward(self, input: Tensor):
        """Pool ``input``."""
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """2-d adaptive max pooling."""

    def forward(self, input: Tensor):
        """Pool ``input``."""
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """3-d adaptive max pooling."""

    def forward(self, input: Tensor):
        """Pool ``input``."""
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _MaxUnpoolNd(Module):
    nd = 1

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self.nd)
        self.stride = self.kernel_size if stride is None else _ntuple(stride, self.nd)
        self.padding = _ntuple(padding, self.nd)

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        """Put each value of ``input`` back at its index (from the matching max pooling)."""
        unpool = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[self.nd - 1]
        return unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _per_dim(base: type[Module], name: str, docs: tuple[str, str, str]) -> tuple[type[Module], ...]:
    """``<name>1d``, ``<name>2d`` and ``<name>3d``: ``base`` with ``nd`` set, documented by ``docs``."""
    return tuple(
        type(
            f"{name}{nd}d", (base,), {"__doc__": doc, "__module__": __name__, "__qualname__": f"{name}{nd}d", "nd": nd}
        )
        for nd, doc in enumerate(docs, 1)
    )


MaxUnpool1d, MaxUnpool2d, MaxUnpool3d = _per_dim(
    _MaxUnpoolNd, "MaxUnpool", tuple(f"The partial inverse of ``MaxPool{nd}d``." for nd in (1, 2, 3))
)


class _LPPoolNd(Module):
    nd = 1

    def __init__(
        self, norm_type: float, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, ceil_mode: bool = False
    ) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        """Pool ``input``."""
        pool = (F.lp_pool1d, F.lp_pool2d, F.lp_pool3d)[self.nd - 1]
        return pool(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


LPPool1d, LPPool2d, LPPool3d = _per_dim(
    _LPPoolNd,
    "LPPool",
    (
        "Power-average pooling over one dim.",
        "Power-average pooling over two dims.",
        "Power-average pooling over three dims.",
    ),
)


class Unfold(Module):
    """Extract sliding blocks: ``(N, C, *spatial)`` to ``(N, C * prod(kernel), L)`` (see ``F.unfold``)."""

    def __init__(
        self, kernel_size: IntOrTuple, dilation: IntOrTuple = 1, padding: IntOrTuple = 0, stride: IntOrTuple = 1
    ) -> None:
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """Unfold ``input``."""
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"


class Fold(Module):
    """Sum sliding blocks back into an ``output_size`` image, the adjoint of ``Unfold``."""

    def __init__(
        self,
        output_size: IntOrTuple,
        kernel_size: IntOrTuple,
        dilation: IntOrTuple = 1,
        padding: IntOrTuple = 0,
        stride: IntOrTuple = 1,
    ) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """Fold ``input``."""
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class _FractionalMaxPoolNd(Module):
    nd = 2

    def __init__(
        self,
        kernel_size: IntOrTuple,
        output_size=None,
        output_ratio=None,
        return_indices: bool = False,
        _random_samples: Tensor | None = None,
    ) -> None:
        super().__init__()
        if output_size is None and output_ratio is None:
            raise ValueError(
                f"FractionalMaxPool{self.nd}d requires specifying either an output size, or a pooling ratio"
            )
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        ratios = (output_ratio,) * self.nd if isinstance(output_ratio, (int, float)) else output_ratio
        if ratios is not None and not all(0 < r < 1 for r in ratios):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")
        self.kernel_size, self.output_size, self.output_ratio = kernel_size, output_size, output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input: Tensor):
        """Pool ``input`` (fresh random window starts per call unless ``_random_samples`` was given)."""
        pool = F.fractional_max_pool2d if self.nd == 2 else F.fractional_max_pool3d
        return pool(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-d fractional max pooling (see ``F.fractional_max_pool2d``).

    Raises:
        ValueError: without (or with both of) ``output_size`` and ``output_ratio``, or a ratio
            outside (0, 1).
    """

    nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-d fractional max pooling. Raises like ``FractionalMaxPool2d``."""

    nd = 3
