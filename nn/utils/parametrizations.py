"""Ready-made parametrizations (our ``torch.nn.utils.parametrizations``): ``orthogonal``,
``weight_norm`` and ``spectral_norm``, registered through ``nn.utils.parametrize``."""

from __future__ import annotations

import tensor
from tensor import Tensor

from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dim but ``dim``, shaped to broadcast against ``v``: the
    norm of the whole tensor for ``dim == -1`` only (other negative dims count from the end, as
    PyTorch's), ``|v|`` for a 1-D ``v`` and ``dim`` 0."""
    if dim == -1:
        return (v * v).sum().sqrt()
    dim %= v.ndim
    dims = tuple(d for d in range(v.ndim) if d != dim)
    if not dims:  # summing over no dims would reduce them all
        return v.abs()
    return (v * v).sum(dims, keepdim=True).sqrt()


def check_dim(weight: Tensor, dim: int | None) -> None:
    """Check that ``dim`` (None: the whole tensor) is a dim of ``weight``.

    Raises:
        IndexError: when it is out of range.
    """
    ndim = weight.ndim
    if dim is not None and not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")


_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eye = tensor.eye(k, dtype=q.dtype, device=q.device)
    return bool(tensor.allclose(q.mH @ q, eye, atol=10.0 * n * tensor.finfo(q.dtype).eps))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of ``a = QR`` (``a`` tall) with R's diagonal real and non-negative."""
    x, tau = tensor.geqrf(a)
    q = tensor.linalg.householder_product(x, tau)
    return q * x.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _with_diagonal(a: Tensor, diagonal: Tensor) -> Tensor:
    """``a`` with its main diagonal replaced by ``diagonal`` (of length ``a.shape[-1]``, ``a`` tall)."""
    on_diagonal = tensor.eye(a.shape[-2], a.shape[-1], dtype=tensor.bool, device=a.device)
    return tensor.where(on_diagonal, diagonal.unsqueeze(-2), a)


class _Orthogonal(Module):
    """An orthogonal (unitary) matrix made from an unconstrained one by ``orthogonal_map``,
    times the ``base`` buffer when ``use_trivialization`` (PyTorch's dynamic trivialization)."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x, n, k = x.mT, k, n
        if self.orthogonal_map == "householder":
            a = x.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = tensor.linalg.householder_product(a, tau)
            q = q * x.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            x = x.tril()
            if n != k:
                x = tensor.cat([x, x.new_zeros(n, n - k).expand(*x.shape[:-2], -1, -1)], dim=-1)
            a = x - x.mH
            if self.orthogonal_map == "matrix_exp":
                q = tensor.matrix_exp(a)
            else:  # the Cayley map
                eye = tensor.eye(n, dtype=a.dtype, device=a.device)
                q = tensor.linalg.solve(eye - 0.5 * a, eye + 0.5 * a)
            q = q[..., :k]
        if "base" in self._buffers:
            q = self.base @ q
        return q.mT if transposed else q

    def right_inverse(self, q: Tensor) -> Tensor:
        """An original giving ``q``: with the trivialization, ``base`` becomes ``q``
        (orthogonalized) and the original minus the identity.

        Raises:
            ValueError: for a ``q`` of another shape.
            NotImplementedError: for ``matrix_exp`` and ``cayley`` without the trivialization.
        """
        if q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {q.shape}.")
        with tensor.no_grad():
            return self._right_inverse(q)

    def _right_inverse(self, q: Tensor) -> Tensor:
        q_init = q
        n, k = q.shape[-2], q.shape[-1]
        transpose = n < k
        if transpose:
            q, n, k = q.mT, k, n
        if "base" not in self._buffers:
            if self.orthogonal_map != "householder":
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            a, tau = tensor.geqrf(q)
            signs = a.diagonal(dim1=-2, dim2=-1).sign()
            a = _with_diagonal(a, tensor.where(tau == 0.0, -signs, signs))
            return a.mT if transpose else a
        if n == k:
            q = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
        else:
            extra = tensor.randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)
            q = _make_orthogonal(tensor.cat([q, extra], dim=-1))
        self.base = q
        return -tensor.eye(q_init.shape[-2], q_init.shape[-1], dtype=q_init.dtype,
                           device=q_init.device).expand(q_init.shape).clone()


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Reparametrize the matrix (or batch of matrices) ``module.<name>`` to be orthogonal
    (unitary): orthonormal columns if it is tall, rows if it is wide, as PyTorch.

    ``orthogonal_map`` is ``"matrix_exp"`` (the default for square or complex matrices),
    ``"cayley"`` or ``"householder"`` (the default otherwise). With ``use_trivialization``
    the current orthogonal matrix is kept as ``parametrizations.<name>.0.base``. The initial
    value is the tensor itself if orthogonal, else the Q of its QR decomposition. Returns ``module``.

    Raises:
        ValueError: if ``module`` has no tensor ``name``, it has fewer than 2 dimensions, or
            ``orthogonal_map`` is unknown (or ``"householder"`` for a complex tensor).
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    return parametrize.register_parametrization(module, name, orth, unsafe=True)


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (the norm over every dim but ``dim``;
    the whole tensor for None), stored as ``parametrizations.<name>.original0`` (g) and
    ``original1`` (v). Returns ``module``.

    Raises:
        ValueError: if ``module`` has no tensor ``name``.
        IndexError: for a ``dim`` out of range for the tensor.
    """
    weight = getattr(module, name, None)
    if isinstance(weight, Tensor):  # else register_parametrization raises
        check_dim(weight, dim)
    return parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)


class _SpectralNorm(Module):
    """``W / sigma(W)``, with the largest singular value estimated by power iteration (``_u``,
    ``_v`` kept as buffers and refined while training)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps, self.n_power_iterations = eps, n_power_iterations
        if ndim > 1:
            matrix = self._matrix(weight)
            h, w = matrix.shape
            self.register_buffer(
                "_u", F.normalize(tensor.randn(h, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
            )
            self.register_buffer(
                "_v", F.normalize(tensor.randn(w, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
            )
            self._power_method(matrix, 15)

    def _matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.flatten(1)

    def _power_method(self, matrix: Tensor, iterations: int) -> None:
        with tensor.no_grad():
            for _ in range(iterations):
                self._u.copy_(F.normalize(matrix @ self._v, dim=0, eps=self.eps))
                self._v.copy_(F.normalize(matrix.mT @ self._u, dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        matrix = self._matrix(weight)
        if self.training:
            self._power_method(matrix.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * (matrix @ v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> Module:
    """Reparametrize ``module.<name>`` as itself divided by its spectral norm (the matrix being
    the weight with ``dim`` first, flattened; ``dim`` defaults to 1 for transposed convolutions,
    else 0). Returns ``module``.

    Raises:
        ValueError: if ``module`` has no ``name``, or ``n_power_iterations <= 0``.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    return parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
