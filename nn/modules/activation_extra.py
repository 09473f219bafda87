"""More activation layers: PReLU, GLU, Hardswish, Hardsigmoid, Threshold, RReLU, CELU, SELU,
Tanhshrink, Softshrink, Hardshrink, Softmin and Softmax2d."""

from __future__ import annotations

import tensor
from tensor import Tensor

from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = [
    "PReLU",
    "GLU",
    "Hardswish",
    "Hardsigmoid",
    "Threshold",
    "RReLU",
    "CELU",
    "SELU",
    "Tanhshrink",
    "Softshrink",
    "Hardshrink",
    "Softmin",
    "Softmax2d",
]


class _Inplace(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class _UnlabelledInplace(_Inplace):
    """An ``inplace`` flag that the repr leaves out, as PyTorch's Hardswish and Hardsigmoid do."""

    def extra_repr(self) -> str:
        return ""


class PReLU(Module):
    """``x`` where positive, ``a * x`` elsewhere, with a learned slope ``a`` (one, or one per
    channel), initialised to ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(tensor.full((num_parameters,), init, device=device, dtype=dtype))

    def reset_parameters(self) -> None:
        """Set every slope back to ``init``."""
        with tensor.no_grad():
            self.weight.fill_(self.init)

    def forward(self, input: Tensor) -> Tensor:
        """Apply PReLU."""
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """Gated linear unit along ``dim``: ``a * sigmoid(b)`` for the two halves."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """Apply GLU."""
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Hardswish(_UnlabelledInplace):
    """``x * relu6(x + 3) / 6``."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply hardswish."""
        return F.hardswish(input, self.inplace)


class Hardsigmoid(_UnlabelledInplace):
    """``relu6(x + 3) / 6``."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply hardsigmoid."""
        return F.hardsigmoid(input, self.inplace)


class SELU(_Inplace):
    """Scaled ELU with the self-normalising constants."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply SELU."""
        return F.selu(input, self.inplace)


class CELU(Module):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        """Apply CELU."""
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        """Apply the threshold."""
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class RReLU(Module):
    """Randomized leaky ReLU (random negative slopes in ``[lower, upper]`` while training)."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        """Apply RReLU."""
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class Tanhshrink(Module):
    """``x - tanh(x)``."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply tanhshrink."""
        return F.tanhshrink(input)


class _Shrink(Module):
    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(_Shrink):
    """Shrink towards 0 by ``lambd`` (0 inside ``[-lambd, lambd]``)."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply softshrink."""
        return F.softshrink(input, self.lambd)


class Hardshrink(_Shrink):
    """Zero inside ``[-lambd, lambd]``, ``x`` outside."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply hardshrink."""
        return F.hardshrink(input, self.lambd)


class Softmin(Module):
    """``softmax(-x)`` along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """Apply softmin."""
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of a ``(N, C, H, W)`` or ``(C, H, W)`` input.

    Raises:
        ValueError: for an input that is not 3-d or 4-d.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Apply softmax over the channels."""
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)
