"""``torch.Tensor`` methods that are other functions of ours with ``self`` first, their in-place
forms, torch's in-place random fills, in-place view ops, and a few attributes.

``install()`` puts them on ``Tensor``; ``tensor/__init__.py`` calls it once every module they
use is loaded (they live in modules that import ``_tensor``). PyTorch users reach them as
methods (``x.erf()``, ``mask.logical_and_(other)``, ``w.exponential_()``, ``x.unsqueeze_(0)``).
"""

from __future__ import annotations

import functools
import importlib

import numpy as np

from . import _creation, _dispatch, _dtype, _inplace, _pinned, _random, _storage, _torch_misc, linalg, ops
from . import cuda as _cuda
from ._device import as_device
from ._factory import as_ints, is_int
from ._tensor import Tensor

__all__ = ["install"]


def _self_first(fn):
    """``fn`` as a method: ``x.name(*args)`` is ``fn(x, *args)``. (A wrapper, because the compiled
    dispatcher's functions do not bind as methods.)"""

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    return method


def _nn_functional(name: str):
    """The method form of an ``nn.functional`` function, imported when first called (the layer above)."""

    def method(self, *args, **kwargs):
        return getattr(importlib.import_module("nn.functional"), name)(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``nn.functional.{name}(self, ...)``."
    return method


def where(self, condition, other):
    """``tensor.where(condition, self, other)``."""
    return ops.where(condition, self, other)


def float_power_(self, exponent):
    """``self ** exponent`` in double precision, written into ``self``, which must be float64 or
    complex128 (RuntimeError otherwise, as PyTorch)."""
    if self.dtype not in (_dtype.float64, _dtype.complex128):
        wanted = "ComplexDouble" if self.is_complex() or (_dispatch.is_tensor(exponent) and exponent.is_complex()) \
            else "Double"
        base = _dtype.scalar_type_name(self.dtype)
        raise RuntimeError(f"the base given to float_power_ has dtype {base} but the operation's "
                           f"result requires dtype {wanted}")
    return _inplace.commit(self, ops.float_power, (exponent,), {})


# ---------------------------------------------------------------- in-place view ops
def _view_in_place(view_name: str):
    """The in-place form of a view op (``ops.strided.take_view_in_place``)."""

    def method(self, *args, **kwargs):
        return ops.strided.take_view_in_place(self, lambda: getattr(self, view_name)(*args, **kwargs))

    method.__name__ = method.__qualname__ = view_name + "_"
    method.__doc__ = f"``{view_name}`` in place: ``self`` takes the view's shape and strides; returns ``self``."
    return method


# ---------------------------------------------------------------- in-place random fills
# Each distribution is drawn from uniform or normal samples by its inverse CDF or definition,
# which every device's generator has (numpy's and CuPy's ``random``, ``standard_normal``).
def _fill_from(self, draw, generator):
    """Write ``draw(rng)`` (an array of ``self``'s shape on the generator's device) into ``self``,
    drawn by ``generator`` or by ``self``'s device's generator."""
    return self.copy_(_random._sample(draw, generator, self.dtype, self.device))


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 1 with probability ``p`` (a number or a tensor broadcast to ``self``), else 0."""
    return self.copy_(_random.bernoulli(self.detach(), p, generator=generator))


def exponential_(self, lambd: float = 1.0, *, generator=None):
    """Fill with samples of the exponential distribution of rate ``lambd``.

    Raises:
        RuntimeError: unless ``lambd > 0``.
    """
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    shape = self.shape
    return _fill_from(self, lambda rng: -np.log1p(-rng.random(shape)) / lambd, generator)


def geometric_(self, p: float, *, generator=None):
    """Fill with samples of the geometric distribution (trials to the first success, from 1).

    Raises:
        RuntimeError: unless ``0 < p < 1``.
    """
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    shape = self.shape
    return _fill_from(self, lambda rng: np.floor(np.log1p(-rng.random(shape)) / np.log1p(-p)) + 1, generator)


def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator=None):
    """Fill with samples of the Cauchy distribution."""
    shape = self.shape
    return _fill_from(self, lambda rng: median + sigma * np.tan(np.pi * (rng.random(shape) - 0.5)), generator)


def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator=None):
    """Fill with samples whose logarithm is normal with ``mean`` and ``std``.

    Raises:
        RuntimeError: unless ``std > 0``.
    """
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    shape = self.shape
    return _fill_from(self, lambda rng: np.exp(mean + std * rng.standard_normal(shape)), generator)


def random_(self, *bounds, to=None, generator=None):
    """Fill with integers drawn uniformly from ``[from, to)``: ``random_()``, ``random_(to)`` or
    ``random_(from, to)``. Without ``to``: up to the dtype's largest value, or for a float dtype
    up to ``2**digits`` (every integer there is exact), as PyTorch.

    Raises:
        RuntimeError: unless ``from < to``; TypeError for more than two bounds.
    """
    if len(bounds) > 2:
        raise TypeError(f"random_() takes at most 2 positional bounds (from, to), got {len(bounds)}")
    low, high = 0, to
    if len(bounds) == 1 and to is None:
        high = bounds[0]
    elif bounds:
        low = bounds[0]
        high = bounds[1] if len(bounds) == 2 else to
    if high is None:
        high = _random_upper(self.dtype)
    if not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    shape = self.shape
    return _fill_from(self, lambda rng: rng.integers(low, high, shape), generator)


def _random_upper(dtype) -> int:
    """``random_()``'s exclusive upper bound for ``dtype``."""
    if dtype == _dtype.bool_:
        return 2
    if dtype.is_floating_point:
        return 2 ** (8 if dtype == _dtype.bfloat16 else np.finfo(dtype.numpy).nmant + 1) + 1
    return int(np.iinfo(dtype.numpy).max) + 1


# ---------------------------------------------------------------- other methods
def fill_diagonal_(self, fill_value, wrap: bool = False):
    """Write ``fill_value`` on the main diagonal, in place; a tall matrix with ``wrap`` starts the
    diagonal again every ``columns + 1`` rows, as numpy's ``fill_diagonal``.

    Raises:
        RuntimeError: for fewer than 2 dims, or more than 2 dims of unequal lengths.
    """
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2:
        if len(set(self.shape)) != 1:
            raise RuntimeError("all dimensions of input must be of equal length")
        index = _creation.arange(self.shape[0], device=self.device)
        self[(index,) * self.ndim] = fill_value
        return self
    rows, cols = self.shape
    end = rows * cols if wrap else min(rows, cols) * cols
    flat = _creation.arange(0, end, cols + 1, device=self.device)
    self[flat // cols, flat % cols] = fill_value
    return self


def resize_(self, *sizes, memory_format=None):
    """Resize in place to ``sizes`` (ints or one sequence), keeping the first elements in storage
    order; new ones are uninitialised. Raises as ``resize_as_``."""
    shape = as_ints(sizes[0] if len(sizes) == 1 and not is_int(sizes[0]) else sizes)
    return ops.strided.resize_as_(self, _Shape(shape), memory_format)


class _Shape:
    """A stand-in template for ``resize_as_``: only its ``shape`` is read."""

    def __init__(self, shape) -> None:
        self.shape = tuple(shape)


def new(self, *args, **kwargs):
    """The legacy constructor: ``x.new()`` (empty), ``x.new(*sizes)`` or ``x.new(Size)``
    (uninitialised), ``x.new(data)`` (a copy of a sequence or array) or ``x.new(t)`` (``t``'s
    storage), in ``self``'s dtype and device.

    Raises:
        TypeError: for a tensor of another dtype or device.
    """
    dtype, device = kwargs.pop("dtype", self.dtype), kwargs.pop("device", self.device)
    if len(args) == 1 and _dispatch.is_tensor(args[0]):
        data = args[0]
        if data.dtype != dtype or data.device != as_device(device):
            raise TypeError(f"expected {dtype} on {device} (got {data.dtype} on {data.device})")
        return _dispatch.make(data._data, data._device, data._version_box)
    return _creation.legacy_new(args, dtype, device)


def as_subclass(self, cls):
    """``self`` as an instance of ``cls`` (a subclass of Tensor), on the same memory and on the
    same autograd graph: an alias whose gradient flows back to ``self``, as PyTorch's. ``cls``'s
    ``__init__`` is not called.

    Raises:
        TypeError: if ``cls`` does not inherit from Tensor.
    """
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(
            "Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. "
            "Make sure your class inherits from Tensor."
        )
    alias = self.view_as(self)
    alias.__class__ = cls
    return alias


def record_stream(self, stream) -> None:
    """Keep ``self``'s memory, once it is freed, from reuse until the work then queued on ``stream``
    is done (Note [record_stream] in tensor/cuda.py). Raises as ``tensor.cuda.record_stream``."""
    _cuda.record_stream(self, stream)


def narrow_copy(self, dim: int, start: int, length: int):
    """``narrow``'s slice, copied into new storage."""
    return self.narrow(dim, start, length).clone()


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad: bool = False):
    """``tensor.empty_strided`` with ``self``'s dtype and device unless given."""
    return _torch_misc.empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                                     requires_grad=requires_grad)


def _host_map(self, fn, arrays, name: str):
    if self.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")
    if self._requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    values = np.vectorize(fn, otypes=[self._data.dtype])(*arrays)
    _inplace._store(self, Ellipsis, values)
    return self


def apply_(self, callable):  # noqa: A002 - PyTorch's parameter name
    """Replace each element by ``callable(element)``, in place (CPU tensors, slow: one Python call each).

    Raises:
        TypeError: for a tensor that is not on the CPU; RuntimeError if it requires grad.
    """
    return _host_map(self, callable, (self._data,), "apply_")


def map_(self, other, callable):  # noqa: A002 - PyTorch's parameter name
    """Replace each element by ``callable(element, other's element)`` (``other`` broadcast), in place.

    Raises:
        As ``apply_``.
    """
    return _host_map(self, callable, (self._data, np.broadcast_to(other._data, self.shape)), "map_")


def dim_order(self, *, ambiguity_check: bool = False) -> tuple:
    """The dims from outermost to innermost in memory (by decreasing stride; ties keep dim order)."""
    strides = self.stride()
    return tuple(sorted(range(self.ndim), key=lambda d: -strides[d]))


def is_set_to(self, other) -> bool:
    """Whether both tensors view the same memory with the same geometry."""
    return (self.data_ptr() == other.data_ptr() and self.shape == other.shape and self.stride() == other.stride()
            and self.dtype == other.dtype and self.device == other.device)


def get_device(self) -> int:
    """The CUDA device index, or -1 on the CPU."""
    return _torch_misc.get_device(self)


def pin_memory(self, device=None):
    """A copy in page-locked host memory, for faster copies to a GPU.

    Raises:
        RuntimeError: where no CUDA device is available (no pinned memory then), as PyTorch.
    """
    if not _pinned.available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.device.type}' memory: only dense CPU tensors can be pinned")
    return _dispatch.make(_pinned.pinned_copy(self._data), self._device)


def _h(self):
    if self.ndim != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
    return self.transpose(0, 1).conj()


def _mh(self):
    if self.ndim < 2:
        raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. Got "
                           f"{self.ndim}-D tensor.")
    return self.transpose(-2, -1).conj()


_SELF_FIRST = {
    "adjoint": _torch_misc.adjoint, "bernoulli": _random.bernoulli, "multinomial": _random.multinomial,
    "bitwise_and": ops.bitwise_and, "bitwise_or": ops.bitwise_or, "bitwise_xor": ops.bitwise_xor,
    "bitwise_not": ops.bitwise_not, "bitwise_left_shift": ops.bitwise_left_shift,
    "bitwise_right_shift": ops.bitwise_right_shift, "erf": ops.erf, "erfc": ops.erfc, "frexp": ops.frexp,
    "gcd": ops.gcd, "lcm": ops.lcm, "nextafter": ops.nextafter, "select_scatter": ops.select_scatter,
    "slice_scatter": ops.slice_scatter, "matrix_power": linalg.matrix_power, "matrix_exp": linalg.matrix_exp,
    "pinverse": linalg.pinverse, "cholesky_inverse": _torch_misc.cholesky_inverse,
    "cholesky_solve": _torch_misc.cholesky_solve, "triangular_solve": _torch_misc.triangular_solve,
    "split_with_sizes": _torch_misc.split_with_sizes, "unsafe_split_with_sizes": _torch_misc.unsafe_split_with_sizes,
    "unsafe_chunk": _torch_misc.unsafe_chunk, "unsafe_split": _torch_misc.unsafe_split,
}
# In-place forms: the out-of-place result committed into self (tensor/_inplace.py), cast to self's dtype.
_IN_PLACE = {
    "bitwise_and_": ops.bitwise_and, "bitwise_or_": ops.bitwise_or, "bitwise_xor_": ops.bitwise_xor,
    "bitwise_not_": ops.bitwise_not, "bitwise_left_shift_": ops.bitwise_left_shift,
    "bitwise_right_shift_": ops.bitwise_right_shift, "eq_": ops.eq, "ne_": ops.ne, "lt_": ops.lt, "le_": ops.le,
    "gt_": ops.gt, "ge_": ops.ge, "greater_": ops.greater, "greater_equal_": ops.greater_equal, "less_": ops.less,
    "less_equal_": ops.less_equal, "not_equal_": ops.not_equal, "logical_and_": ops.logical_and,
    "logical_or_": ops.logical_or, "logical_xor_": ops.logical_xor, "logical_not_": ops.logical_not,
    "absolute_": ops.absolute, "addbmm_": ops.addbmm, "addr_": ops.addr, "arctan2_": ops.arctan2,
    "divide_": ops.divide, "multiply_": ops.multiply, "subtract_": ops.subtract, "true_divide_": ops.true_divide,
    "floor_divide_": ops.floor_divide, "remainder_": ops.remainder, "heaviside_": ops.heaviside, "sgn_": ops.sgn,
    "sign_": ops.sign, "nextafter_": ops.nextafter, "mvlgamma_": ops.mvlgamma, "polygamma_": Tensor.polygamma,
}
_OTHERS = {
    "untyped_storage": _storage.untyped_storage, "storage": _storage.storage, "set_": _storage.set_,
    **_torch_misc.REMOVED_FUNCTIONS, "as_subclass": as_subclass,
    "record_stream": record_stream,
    "where": where, "float_power_": float_power_, "bernoulli_": bernoulli_, "exponential_": exponential_,
    "geometric_": geometric_, "cauchy_": cauchy_, "log_normal_": log_normal_, "random_": random_,
    "fill_diagonal_": fill_diagonal_, "resize_": resize_, "new": new, "apply_": apply_, "map_": map_,
    "narrow_copy": narrow_copy, "new_empty_strided": new_empty_strided,
    "dim_order": dim_order, "is_set_to": is_set_to, "get_device": get_device, "pin_memory": pin_memory,
    "nelement": Tensor.numel, "ndimension": Tensor.dim, "const_data_ptr": Tensor.data_ptr,
    "is_pinned": lambda self, device=None: _pinned.is_pinned(self._data), "is_distributed": lambda self: False,
    "hardshrink": _nn_functional("hardshrink"), "prelu": _nn_functional("prelu"),
}
_PROPERTIES = {
    "H": property(_h, doc="The conjugate transpose of a matrix."),
    "mH": property(_mh, doc="The conjugate transpose of the last two dims."),
    "layout": property(lambda self: _torch_misc.strided, doc="``tensor.strided``: every tensor here is dense."),
    "retains_grad": property(lambda self: bool(self._retains_grad),
                             doc="Whether ``retain_grad()`` was called on this non-leaf."),
    "output_nr": property(lambda self: self._output_nr, doc="Which output of its grad_fn this tensor is."),
    "is_nested": property(lambda self: False, doc="False: there are no nested tensors here."),
}


def install() -> None:
    """Add the methods and properties to ``Tensor`` (where it does not define them itself)."""
    methods = {name: _self_first(fn) for name, fn in _SELF_FIRST.items()}
    methods.update({name: _inplace.inplace(fn) for name, fn in _IN_PLACE.items()})
    methods.update(_OTHERS)
    methods.update({name + "_": _view_in_place(name)
                    for name in ("unsqueeze", "squeeze", "t", "transpose", "swapaxes", "swapdims")})
    methods.update(_PROPERTIES)
    # ``x //= 2`` and friends update ``x`` itself (and its views), as ``+=`` does
    for operator, name in (("ifloordiv", "floor_divide_"), ("imod", "remainder_"), ("ilshift", "bitwise_left_shift_"),
                           ("irshift", "bitwise_right_shift_"), ("iand", "bitwise_and_"), ("ior", "bitwise_or_"),
                           ("ixor", "bitwise_xor_")):
        methods[f"__{operator}__"] = methods[name]
    for name, value in methods.items():
        if name not in Tensor.__dict__:
            if getattr(value, "__name__", "") == "<lambda>":
                value.__name__ = value.__qualname__ = name
            setattr(Tensor, name, value)
