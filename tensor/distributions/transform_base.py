"""``Transform``, its inverse and ``ComposeTransform`` (PyTorch's ``torch.distributions.transforms``
core): invertible maps with the log of their Jacobians' determinants.

Note [Transform event dims]
    A transform acts on values whose last ``domain.event_dim`` dims make one event and gives
    values whose last ``codomain.event_dim`` dims do (``AffineTransform(..., event_dim=1)``
    couples a vector's entries: both are 1). ``log_abs_det_jacobian(x, y)`` has the shape of ``x``
    less its ``domain.event_dim`` dims, so a chain sums each part's over the dims by which the
    chain's events exceed the part's, as PyTorch does. ``forward_shape``/``inverse_shape`` say how a
    transform changes a whole shape (broadcasting with its parameters, or reshaping events).
"""

from __future__ import annotations

import tensor
from tensor import Tensor

from . import constraints
from .distribution import sum_rightmost

__all__ = ["ComposeTransform", "Transform", "identity_transform"]


class Transform:
    """An invertible map ``y = transform(x)`` with the log of its Jacobian's determinant; with
    ``cache_size=1`` it remembers its last ``(x, y)`` pair (Note [Transformed densities]).

    Raises:
        ValueError: for a ``cache_size`` other than 0 or 1.
    """

    domain = constraints.real
    codomain = constraints.real
    bijective = True
    sign = 1

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError(f"cache_size must be 0 or 1, got {cache_size!r}")
        self._cache_size, self._cached = cache_size, None

    @property
    def event_dim(self) -> int:
        """The event dims of both domain and codomain.

        Raises:
            ValueError: where they differ, as torch.
        """
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    def __call__(self, x: Tensor) -> Tensor:
        if self._cached is not None and self._cached[0] is x:
            return self._cached[1]
        y = self._call(x)
        if self._cache_size:
            self._cached = (x, y)
        return y

    def _inverse(self, y: Tensor) -> Tensor:
        if self._cached is not None and self._cached[1] is y:
            return self._cached[0]
        x = self._inverse_call(y)
        if self._cache_size:
            self._cached = (x, y)
        return x

    @property
    def inv(self) -> Transform:
        """The inverse transform."""
        return _Inverse(self)

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with ``cache_size`` (itself if it has it already).

        Raises:
            NotImplementedError: for a transform with parameters that does not override it, as torch.
        """
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other) -> bool:
        # parameterless transforms of one type are equal (torch's), others only to themselves
        if type(self).__init__ is Transform.__init__:
            return type(other) is type(self)
        return self is other

    def __ne__(self, other) -> bool:
        return not self == other

    __hash__ = object.__hash__

    def forward_shape(self, shape) -> tuple:
        """The shape of ``self(x)`` for ``x`` of ``shape``."""
        return shape

    def inverse_shape(self, shape) -> tuple:
        """The shape of ``self.inv(y)`` for ``y`` of ``shape``."""
        return shape

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse_call(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log |det dy/dx|`` at ``x`` (with ``y = self(x)``), per element (or per event)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _Inverse(Transform):
    def __init__(self, transform: Transform) -> None:
        super().__init__()
        self._transform = transform
        self.domain, self.codomain = transform.codomain, transform.domain
        self.bijective = transform.bijective

    @property
    def sign(self):
        return self._transform.sign

    @property
    def inv(self) -> Transform:
        return self._transform

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self._transform.with_cache(cache_size).inv

    def __eq__(self, other) -> bool:
        return isinstance(other, _Inverse) and self._transform == other._transform

    __hash__ = object.__hash__

    def forward_shape(self, shape) -> tuple:
        return self._transform.inverse_shape(shape)

    def inverse_shape(self, shape) -> tuple:
        return self._transform.forward_shape(shape)

    def __call__(self, x: Tensor) -> Tensor:
        return self._transform._inverse(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._transform.log_abs_det_jacobian(y, x)

    def __repr__(self) -> str:
        return f"_InverseTransform({self._transform!r})"


class ComposeTransform(Transform):
    """The transforms ``parts`` applied in order (none: the identity). Its events are the widest
    any part needs (Note [Transform event dims])."""

    def __init__(self, parts, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.parts = list(parts)
        self._inverse_of: ComposeTransform | None = None  # set on an inverse chain, so that t.inv.inv is t

    @property
    def domain(self):
        """The first part's domain, over as many event dims as the chain needs."""
        if not self.parts:
            return constraints.real
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim = max(event_dim + part.domain.event_dim - part.codomain.event_dim, part.domain.event_dim)
        return _widened(self.parts[0].domain, event_dim)

    @property
    def codomain(self):
        """The last part's codomain, over as many event dims as the chain needs."""
        if not self.parts:
            return constraints.real
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim = max(event_dim + part.codomain.event_dim - part.domain.event_dim, part.codomain.event_dim)
        return _widened(self.parts[-1].codomain, event_dim)

    @property
    def bijective(self) -> bool:
        """Whether every part is."""
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        """The product of the parts' signs."""
        sign = 1
        for part in self.parts:
            sign = sign * part.sign
        return sign

    @property
    def inv(self) -> Transform:
        """The parts' inverses in reverse order."""
        if self._inverse_of is not None:
            return self._inverse_of
        inverse = ComposeTransform([p.inv for p in reversed(self.parts)])
        inverse._inverse_of = self
        return inverse

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The same chain with ``cache_size``."""
        return self if self._cache_size == cache_size else ComposeTransform(self.parts, cache_size)

    def __eq__(self, other) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    def forward_shape(self, shape) -> tuple:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape) -> tuple:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def _call(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def _inverse_call(self, y):
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        """The sum of the parts' (each at its own input), each summed over the dims by which the
        chain's events exceed its own (Note [Transform event dims])."""
        if not self.parts:
            return tensor.zeros_like(x)
        inputs = [x]
        for part in self.parts[:-1]:
            inputs.append(part(inputs[-1]))
        outputs = inputs[1:] + [y]
        total, event_dim = 0.0, self.domain.event_dim
        for part, x_part, y_part in zip(self.parts, inputs, outputs):
            total = total + sum_rightmost(part.log_abs_det_jacobian(x_part, y_part),
                                          event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"ComposeTransform(\n    {inner}\n)"


def _widened(constraint, event_dim: int):
    """``constraint`` over ``event_dim`` event dims (itself if it has them)."""
    extra = event_dim - constraint.event_dim
    return constraints.independent(constraint, extra) if extra > 0 else constraint


identity_transform = ComposeTransform([])
