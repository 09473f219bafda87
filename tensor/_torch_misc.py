"""Small ``torch.*`` functions composed of existing ops (issue 16, coverage): creation variants,
dtype and device queries, Cholesky/triangular solves, ``Size``, the matmul-precision setting."""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

import numpy as np

from . import _creation, _dispatch, _dtype, linalg, ops
from ._autograd_hooks import grad_mode
from ._factory import Size, layout, strided  # noqa: F401 - tensor.Size, tensor.layout, tensor.strided
from ._memory_format import dense_strides
from ._tensor import Tensor


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (``input.transpose(-2, -1).conj()``).

    Raises:
        RuntimeError/IndexError: as ``transpose`` for a tensor of fewer than 2 dims.
    """
    return input.transpose(-2, -1).conj()


def fill(input: Tensor, value) -> Tensor:
    """A new tensor shaped like ``input`` filled with ``value`` (a number or 0-d tensor); gradients
    flow to a tensor ``value``, as ``torch.fill``."""
    return input.clone().fill_(value)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding ``s``, of the default float dtype unless ``dtype`` is given."""
    return _creation.tensor(s, dtype=dtype or _dtype.get_default_dtype(), device=device, requires_grad=requires_grad)


def range(start, end, step=1, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:  # noqa: A001
    """``torch.range`` (deprecated there): ``start, start+step, ...`` up to and INCLUDING ``end``,
    of the default float dtype unless ``dtype`` is given (then, for an integer one, the arguments
    are truncated first, as ``arange``'s).

    Raises:
        RuntimeError: for ``step == 0`` or a step whose sign cannot reach ``end``.
        ValueError: for a step that truncates to zero.
    """
    start, end, step = (_creation.scalar_argument("range", v) for v in (start, end, step))
    d = _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    start, end, step = _creation.checked_bounds("range", start, end, step, d)
    count = math.floor((end - start) / step) + 1
    if isinstance(step, int) and isinstance(start, int):  # exact, also beyond float64's integers
        values = _creation.arange(start, start + count * step, step, dtype=d, device=device)
    else:
        values = (_creation.arange(count, dtype=_dtype.float64, device=device) * step + start).to(d)
    return values.requires_grad_(requires_grad)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None, device=None,
                  requires_grad: bool = False) -> Tensor:  # fmt: skip
    """The Kaiser window ``I0(beta * sqrt(1 - (2k/(N-1) - 1)^2)) / I0(beta)``, ``N = window_length + 1``
    when ``periodic``. Computed on the host (numpy's ``kaiser``) and moved to ``device``.

    Raises:
        RuntimeError: for a negative ``window_length``.
    """
    if window_length < 0:
        raise RuntimeError(f"kaiser_window requires non-negative window length, got window_length={window_length}")
    n = window_length + 1 if periodic and window_length > 1 else window_length
    values = np.kaiser(n, beta)[:window_length]
    return _creation.tensor(values, dtype=dtype or _dtype.get_default_dtype(), device=device,
                            requires_grad=requires_grad)  # fmt: skip


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple[Tensor, ...]:
    """``input`` split along ``dim`` into pieces of the given sizes. Raises as ``split``."""
    return ops.split(input, list(split_sizes), dim)


def can_cast(from_: _dtype.dtype, to: _dtype.dtype) -> bool:
    """Whether the type-promotion rules allow casting ``from_`` to ``to`` (not to a lower kind:
    complex to real, floating to integral, non-bool to bool); either may be a Python type
    (``float``: float64).

    Raises:
        TypeError: for an argument that is not a dtype.
    """
    return _dtype.as_dtype(from_)._category <= _dtype.as_dtype(to)._category


def asarray(obj, *, dtype=None, device=None, copy: bool | None = None, requires_grad: bool = False) -> Tensor:
    """``obj`` (a tensor, numpy array, number or sequence) as a tensor, sharing memory when it can
    unless ``copy=True``.

    Raises:
        ValueError: for ``copy=False`` when a dtype or device conversion needs a copy.
    """
    result = _creation.tensor(obj, dtype=dtype, device=device) if copy else _creation.as_tensor(obj, dtype, device)
    if copy is False and isinstance(obj, Tensor) and result is not obj:
        raise ValueError("asarray: copy=False but converting the tensor's dtype or device needs a copy")
    return result.requires_grad_(True) if requires_grad else result


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` with the given ``stride`` (in elements), in new storage
    of just the elements those strides reach.

    Raises:
        RuntimeError: when ``stride`` and ``size`` differ in length, or for negative sizes or
            strides (PyTorch's messages).
    """
    return _in_new_storage(size, stride, dtype, device, requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` whose dims lie in memory in the order
    ``physical_layout`` gives, outermost first (``(0, 2, 3, 1)``: channels last).

    Raises:
        RuntimeError: when ``physical_layout`` is not a permutation of the dims.
    """
    size = tuple(int(n) for n in size)
    if sorted(physical_layout) != list(builtins.range(len(size))):
        raise RuntimeError(f"physical_layout {list(physical_layout)} is not a permutation of {len(size)} dims")
    return _in_new_storage(size, dense_strides(size, tuple(physical_layout)), dtype, device, requires_grad)


def _in_new_storage(size, stride, dtype, device, requires_grad: bool) -> Tensor:
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    if len(stride) != len(size):
        raise RuntimeError(
            f"dimensionality of sizes ({len(size)}) must match dimensionality of strides ({len(stride)})"
        )
    reach = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    storage = _creation.empty(max(reach, 0), dtype=dtype, device=device)  # negative: as_strided raises
    view = ops.as_strided(storage, size, stride, 0)  # checks the strides and sizes
    result = _dispatch.make(view._data, view._device)  # a tensor of its own, not a view
    return result.requires_grad_() if requires_grad else result


def get_device(input: Tensor) -> int:
    """The CUDA device index of ``input``, or -1 on the cpu."""
    device = input.device
    return -1 if device.type == "cpu" else device.index or 0


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode`` region is open in this thread."""
    return bool(grad_mode.inference)


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """The solution of ``A X = B`` for ``A = L L^H`` (``U^H U`` with ``upper``), given the Cholesky
    factor ``L``; batched and differentiable. Raises as ``linalg.solve_triangular``."""
    inner = linalg.solve_triangular(adjoint(L) if upper else L, B, upper=False)
    return linalg.solve_triangular(L if upper else adjoint(L), inner, upper=True)


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """The inverse of ``A = L L^H`` (``U^H U`` with ``upper``) from its Cholesky factor."""
    eye = _creation.eye(L.shape[-1], dtype=L.dtype, device=L.device)
    return cholesky_solve(eye, L, upper)


triangular_solve_result = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> triangular_solve_result:  # fmt: skip
    """``torch.triangular_solve`` (deprecated there): solves ``A X = b`` (``A^T X = b`` with
    ``transpose``) reading one triangle of ``A``; returns ``(solution, A.clone())``."""
    coefficient = A.transpose(-2, -1) if transpose else A
    solution = linalg.solve_triangular(coefficient, b, upper=upper != transpose, unitriangular=unitriangular)
    return triangular_solve_result(solution, A.clone())


_MATMUL_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = ["highest"]


def set_float32_matmul_precision(precision: str) -> None:
    """Record the float32 matmul precision (``highest``, ``high``, ``medium``). Every setting
    computes float32 matmuls in full float32 here (no TF32 / bfloat16 shortcuts), which PyTorch's
    ``high`` and ``medium`` allow.

    Raises:
        RuntimeError: for another value.
    """
    if precision not in _MATMUL_PRECISIONS:
        raise RuntimeError(f"Invalid float32 matmul precision {precision!r}; expected one of {_MATMUL_PRECISIONS}")
    _matmul_precision[0] = precision


def get_float32_matmul_precision() -> str:
    """The value last given to ``set_float32_matmul_precision`` (``highest`` by default)."""
    return _matmul_precision[0]


def is_storage(obj) -> bool:
    """False: there are no storage objects here (tensors hold numpy/CuPy arrays)."""
    return False


unsafe_chunk, unsafe_split, unsafe_split_with_sizes = ops.chunk, ops.split, split_with_sizes


def typename(obj) -> str:
    """The type name of ``obj`` as PyTorch's ``torch.typename`` gives it: ``torch.FloatTensor``
    for a float32 tensor (``Tensor.type()``), ``module.QualName`` for another object, the bare
    name for a builtin."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        name = obj.__qualname__
    elif hasattr(obj, "__name__"):
        name = obj.__name__
    else:
        module, name = type(obj).__module__ or "", type(obj).__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"


def is_vulkan_available() -> bool:
    """False: there is no Vulkan backend."""
    return False


# PyTorch's functions removed in 1.9 (and their Tensor methods), which raise with where to go now.
_REMOVED = {
    "eig": "tensor.linalg.eig (complex eigenvalues and vectors) or tensor.linalg.eigvals",
    "lstsq": "tensor.linalg.lstsq, whose arguments are reversed",
    "matrix_rank": "tensor.linalg.matrix_rank, where 'symmetric' is named 'hermitian'",
    "solve": "tensor.linalg.solve, whose arguments are reversed (tensor.linalg.lu_factor gives the LU)",
    "symeig": "tensor.linalg.eigh (its default triangle is the lower one: UPLO='L')",
}


def _removed(name: str):
    def removed(*args, **kwargs):
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now removed. Use {_REMOVED[name]}.")

    removed.__name__ = removed.__qualname__ = name
    removed.__doc__ = f"Removed from PyTorch in 1.9: raises RuntimeError naming {_REMOVED[name]}."
    return removed


REMOVED_FUNCTIONS = {name: _removed(name) for name in _REMOVED}
