"""``VonMises`` (PyTorch's ``torch.distributions.VonMises``): the circular normal distribution.

Note [Von Mises normaliser]
    The density ``exp(k cos(x - loc)) / (2 pi I0(k))`` needs ``log I0(k)``, which overflows as
    ``I0`` for a large concentration ``k``. As torch, it is evaluated from the polynomial
    approximations of Abramowitz and Stegun (9.8.1 to 9.8.4, relative error below ~2e-7): a
    polynomial in ``(k / 3.75)^2`` below 3.75, and above it ``k - log(k) / 2`` plus the log of a
    polynomial in ``3.75 / k``, which never overflows. The same forms give ``log I1`` for the
    circular variance ``1 - I1(k) / I0(k)``. Using them keeps the values torch's, to the last bit.
"""

from __future__ import annotations

import math

import tensor
from tensor import Tensor

from . import constraints
from .distribution import Located, broadcast_all

__all__ = ["VonMises"]

# (below 3.75, above 3.75) coefficients of I0 and I1, lowest order first
_BESSEL_COEFFICIENTS = {
    0: ((1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2),
        (0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
         -0.1647633e-1, 0.392377e-2)),
    1: ((0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3),
        (0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1, -0.2895312e-1,
         0.1787654e-1, -0.420059e-2)),
}


def _polynomial(y: Tensor, coefficients: tuple) -> Tensor:
    """``sum(c_i y^i)`` by Horner's rule."""
    result = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        result = c + y * result
    return result


def log_modified_bessel(x: Tensor, order: int = 0) -> Tensor:
    """``log I_order(x)`` for positive ``x`` and ``order`` 0 or 1 (Note [Von Mises normaliser]).

    Raises:
        ValueError: for another order.
    """
    if order not in _BESSEL_COEFFICIENTS:
        raise ValueError(f"order must be 0 or 1, got {order}")
    below, above = _BESSEL_COEFFICIENTS[order]
    # each form evaluated only on its own side of 3.75: the other side's polynomial overflows or
    # goes negative, which would warn and poison the gradient through the where
    x_small, x_large = x.clamp(max=3.75), x.clamp(min=3.75)
    small = _polynomial((x_small / 3.75).pow(2), below)
    if order == 1:
        small = x_small.abs() * small
    large = x_large - 0.5 * x_large.log() + _polynomial(3.75 / x_large, above).log()
    return tensor.where(x < 3.75, small.log(), large)


def _proposal_r(concentration: Tensor) -> Tensor:
    """Best and Fisher's envelope parameter ``r``, by its Taylor expansion ``1/k + k`` below
    ``k = 1e-5`` (where the closed form cancels)."""
    tau = 1 + (1 + 4 * concentration.pow(2)).sqrt()
    rho = (tau - (2 * tau).sqrt()) / (2 * concentration)
    return tensor.where(concentration < 1e-5, 1 / concentration + concentration, (1 + rho.pow(2)) / (2 * rho))


def _rejection_sample(concentration: Tensor, proposal_r: Tensor, shape: tuple) -> Tensor:
    """Best and Fisher's (1979) angles about 0 of ``shape``: each proposal drawn until one is kept."""
    angle = tensor.zeros(shape, dtype=concentration.dtype, device=concentration.device)
    done = tensor.zeros(shape, dtype=tensor.bool, device=concentration.device)
    while not done.all():
        u1, u2, u3 = tensor.rand((3,) + tuple(shape), dtype=concentration.dtype, device=concentration.device).unbind()
        z = (math.pi * u1).cos()
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        angle = tensor.where(accept & ~done, (u3 - 0.5).sign() * f.acos(), angle)
        done = done | accept
    return angle


class VonMises(Located):
    """The von Mises distribution of the angle ``loc`` (any real, read modulo 2 pi) and
    ``concentration``, broadcast; its mean and mode are ``loc`` (circular, as torch's) and it has
    no ``rsample``.

    Raises:
        ValueError: with ``validate_args``, for a ``concentration`` not positive (or a NaN ``loc``).
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args)

    @property
    def variance(self) -> Tensor:
        """The circular variance ``1 - I1(k) / I0(k)``."""
        k = self.concentration
        return 1 - (log_modified_bessel(k, order=1) - log_modified_bessel(k, order=0)).exp()

    def log_prob(self, value: Tensor) -> Tensor:
        """``k cos(value - loc) - log(2 pi I0(k))``.

        Raises:
            ValueError: with ``validate_args``, for a value of the wrong shape or a NaN.
        """
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        return k * (value - self.loc).cos() - math.log(2 * math.pi) - log_modified_bessel(k, order=0)

    def sample(self, sample_shape=()) -> Tensor:
        """Angles in ``[-pi, pi)`` by Best and Fisher's rejection sampler, drawn in float64 (in
        float32 a concentration near 1e-4 never accepts, torch's issue 88443) and returned in
        ``loc``'s dtype."""
        shape = self._extended_shape(sample_shape)
        with tensor.no_grad():
            concentration = self.concentration.to(tensor.float64)
            angle = _rejection_sample(concentration, _proposal_r(concentration), shape)
            return ((angle + math.pi + self.loc.to(tensor.float64)) % (2 * math.pi) - math.pi).to(self.loc.dtype)
