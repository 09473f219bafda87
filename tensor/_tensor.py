"""The Tensor class: an n-d array with a device, a dtype and an autograd history.

Methods are thin: each forwards to the function of the same name in ``tensor.ops``,
so the function and method forms can never disagree.
"""

from __future__ import annotations

import numpy as np

from . import _autograd_hooks as hooks
from . import _conversion, _creation, _dispatch, _dtype, _format, _inplace, _legacy_types, _random, _shared, ops
from . import _memory_format as _formats
from ._device import device as _device_cls
from ._tensor_base import TensorBase

__all__ = ["Tensor"]


def _cast_method(dtype: _dtype.dtype):
    """``Tensor.float`` and its kin: a cast to ``dtype`` (laid out as ``memory_format`` asks)."""

    def cast(self, memory_format=_formats.preserve_format):
        return self.to(dtype, memory_format=memory_format)

    cast.__doc__ = f"Cast to {dtype.name} (``self`` itself if it is already), laid out as ``memory_format`` asks."
    return cast


class Tensor(TensorBase):
    """A multi-dimensional array on a device, with autograd support.

    Create tensors with ``tensor.tensor(data)``, ``tensor.zeros(...)`` and friends; the legacy
    ``Tensor(data)`` (the default float dtype) and ``Tensor(2, 3)`` (uninitialised) work too.
    """

    # The fields (_data, _device, _version_box, _requires_grad, _grad_fn, ..., grad) and their
    # defaults are TensorBase's (Note [Compiled Tensor fields] in tensor/_tensor_base.py): a
    # class attribute of the same name here would hide them.

    def __init__(self, *args, device=None) -> None:
        """The legacy constructor, as ``torch.Tensor``: ``Tensor()`` is empty, ``Tensor(2, 3)``
        and ``Tensor(Size)`` uninitialised of those sizes, ``Tensor(data)`` a copy of a sequence
        or array in the default dtype, and ``Tensor(t)`` shares ``t``'s storage (and dtype).

        Raises:
            TypeError: for a number that is no size (``Tensor(2.5)``), as ``legacy_new``.
            RuntimeError: for a negative size.
        """
        if len(args) == 1 and isinstance(args[0], Tensor):
            t = args[0]
        else:
            t = _creation.legacy_new(args, _dtype.get_default_dtype(), device)
        self._data, self._device, self._version_box = t._data, t._device, t._version_box

    # ------------------------------------------------------------ attributes
    @property
    def shape(self) -> tuple:
        """The sizes of the dims, as a tuple."""
        if _dispatch.tracer is not None:
            _dispatch.tracer.on_size(self)
        return self._data.shape

    @property
    def dtype(self) -> _dtype.dtype:
        """The element type, e.g. ``tensor.float32``."""
        return _dtype._FROM_NUMPY[self._data.dtype]

    @property
    def device(self) -> _device_cls:
        """The device the storage lives on."""
        return self._device

    @property
    def ndim(self) -> int:
        """The number of dims."""
        return self._data.ndim

    @property
    def is_cuda(self) -> bool:
        """True for tensors on a CUDA device."""
        return self._device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        """True for tensors on the CPU."""
        return self._device.type == "cpu"

    is_xpu = is_mps = is_meta = is_sparse = is_sparse_csr = is_quantized = is_mkldnn = property(
        lambda self: False, doc="Always False: there are no XPU, MPS, meta, sparse, quantized or MKL-DNN tensors.")
    is_xla = is_vulkan = is_ipu = is_mtia = is_maia = property(
        lambda self: False, doc="Always False: there are no XLA, Vulkan, IPU, MTIA or MAIA devices.")

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        """This tensor (in ``dtype`` when given): every tensor here is dense already."""
        return self if dtype is None else self.to(dtype)

    @property
    def requires_grad(self) -> bool:
        """Whether autograd records ops on this tensor."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    @property
    def grad_fn(self):
        """The graph node that produced this tensor (None for leaves)."""
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        """True unless the tensor was produced by a recorded op."""
        return self._grad_fn is None

    @property
    def _version(self) -> int:
        return self._version_box[0]

    @property
    def data(self) -> Tensor:
        """A detached alias of this tensor (same storage, no history) with a version counter of its
        own, as PyTorch's: in-place changes through ``.data`` (weight clipping between forward and
        backward) do not invalidate the saved tensors of a recorded graph."""
        return _dispatch.make(self._data, self._device)

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = value._data
        self._device = value._device

    @property
    def T(self) -> Tensor:
        """All dims reversed."""
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self) -> Tensor:
        """The last two dims swapped (a batch of matrix transposes)."""
        return self.transpose(-2, -1)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the elements this tensor addresses."""
        return self._data.nbytes

    def size(self, dim: int | None = None):
        """The shape, or the size of one dim.

        Raises:
            IndexError: for a dim out of range (any dim of a 0-d tensor, as in PyTorch).
        """
        if dim is None:
            if _dispatch.tracer is not None:
                _dispatch.tracer.on_size(self, None)
            return self._data.shape
        if not self.ndim:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        if _dispatch.tracer is not None:
            _dispatch.tracer.on_size(self, dim % self.ndim)
        return self._data.shape[ops.reduction.wrap_dim(dim, self.ndim)]

    def dim(self) -> int:
        """The number of dims."""
        return self._data.ndim

    def numel(self) -> int:
        """The number of elements."""
        if _dispatch.tracer is not None:
            _dispatch.tracer.on_size(self)
        return self._data.size

    def element_size(self) -> int:
        """Bytes per element."""
        return self._data.itemsize

    def stride(self, dim: int | None = None):
        """Strides in elements (not bytes), as in PyTorch."""
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        if not self._data.size and not any(strides):  # numpy zeroes a new empty array's strides
            strides = _formats.dense_strides(self._data.shape, tuple(range(self._data.ndim)))
        return strides if dim is None else strides[ops.reduction.wrap_dim(dim, self.ndim)]

    def is_contiguous(self, memory_format=_formats.contiguous_format) -> bool:
        """True if the elements are laid out densely in row-major order (or in the order
        ``memory_format`` names: ``tensor.channels_last`` is NHWC)."""
        if memory_format is _formats.contiguous_format:
            return bool(self._data.flags.c_contiguous)
        _formats.check(memory_format, "is_contiguous")
        return _formats.is_laid_out(self.shape, self.stride(), memory_format)

    def data_ptr(self) -> int:
        """The address of the first element."""
        return self._device.backend.data_ptr(self._data)

    def is_complex(self) -> bool:
        """True for complex dtypes."""
        return self._data.dtype.kind == "c"

    def is_floating_point(self) -> bool:
        """True for float16/32/64 tensors."""
        return self._data.dtype.kind in "fV"  # V: bfloat16, float8 (ml_dtypes)

    def is_inference(self) -> bool:
        """True for an inference tensor: made under ``inference_mode``, or a view of one (Note
        [Inference tensors] in tensor/_grad_state.py)."""
        return self._is_inference

    def share_memory_(self) -> Tensor:
        """Move the storage into shared memory, in place (a no-op if it already is; CUDA tensors
        are always shareable). Processes that receive this tensor then see each other's writes."""
        return _shared.share_memory_(self)

    def is_shared(self) -> bool:
        """True if the storage is in shared memory (always True for CUDA tensors)."""
        return _shared.is_shared(self)

    # ------------------------------------------------------------ conversion
    def item(self):
        """The value of a one-element tensor as a Python number.

        Raises:
            RuntimeError: if the tensor has more than one element.
        """
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        if _dispatch.tracer is not None:
            _dispatch.tracer.on_read(self, "item")
        return self._device.backend.to_numpy(self._data).reshape(()).item()

    def tolist(self):
        """The data as nested Python lists (a number for 0-d tensors)."""
        if _dispatch.tracer is not None:
            _dispatch.tracer.on_read(self, "tolist")
        return self._device.backend.to_numpy(self._data).tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a numpy array, sharing memory for CPU tensors.

        Raises:
            RuntimeError: for tensors that require grad (use ``detach()``), or GPU
                tensors without ``force=True``.
        """
        if self._requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
            )
        if self._device.type != "cpu" and not force:
            raise TypeError(
                f"can't convert {self._device} device type tensor to numpy. Use Tensor.cpu() "
                "to copy the tensor to host memory first."
            )
        if _dispatch.tracer is not None:  # inside tensor.compile: may stay a traced array
            traced = _dispatch.tracer.on_read(self, "numpy")
            if traced is not None:
                return traced
        return self._device.backend.to_numpy(self._data)

    # numpy's operators on a Tensor defer to the Tensor's own (``np.float64(2) * t`` is a Tensor),
    # and its ufuncs wrap their results back into Tensors (``__array_wrap__``), as in PyTorch.
    __array_priority__ = 1000

    def __array__(self, dtype=None, copy=None):
        """The data as a numpy array (``np.asarray(t)``; a copy for GPU tensors).

        Raises:
            RuntimeError: for a tensor that requires grad, as ``numpy()``.
        """
        if self._requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
            )
        # numpy 2 passes copy=True for np.array(t) and trusts us to honour it.
        if _dispatch.tracer is not None:
            _dispatch.tracer.on_read(self, "array")
        array = self._device.backend.to_numpy(self._data)
        if copy is False and (self._device.type != "cpu" or (dtype is not None and array.dtype != dtype)):
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        if dtype is not None:
            array = array.astype(dtype, copy=False)
        on_host = self._device.type == "cpu"  # to_numpy already copied a GPU tensor
        return array.copy() if copy and on_host and np.may_share_memory(array, self._data) else array

    def __array_wrap__(self, array, context=None, return_scalar=False) -> Tensor:
        """A numpy ufunc's result on tensors (``np.exp(t)``) as a CPU Tensor (also a 0-d one)."""
        return _creation.from_numpy(np.asarray(array))

    def __dlpack__(self, *args, **kwargs):
        if self._requires_grad:
            raise RuntimeError(
                "Can't export tensors that require gradient, use tensor.detach()"
            )
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def to(self, *args, **kwargs) -> Tensor:
        """Copy to another device and/or dtype: ``to(device)``, ``to(dtype)``, ``to(device, dtype)``,
        or ``to(other_tensor)``. Returns ``self`` when nothing changes (unless ``copy=True``)."""
        return _conversion.to(self, *args, **kwargs)

    def cpu(self) -> Tensor:
        """This tensor on the CPU."""
        return self.to("cpu")

    def cuda(self, device=None) -> Tensor:
        """This tensor on a CUDA device (the current one by default)."""
        return self.to("cuda" if device is None else _device_cls("cuda", device)
                       if isinstance(device, int) else device)

    float = _cast_method(_dtype.float32)
    double = _cast_method(_dtype.float64)
    half = _cast_method(_dtype.float16)
    bfloat16 = _cast_method(_dtype.bfloat16)
    cfloat = _cast_method(_dtype.complex64)
    cdouble = _cast_method(_dtype.complex128)
    long = _cast_method(_dtype.int64)
    int = _cast_method(_dtype.int32)
    char = _cast_method(_dtype.int8)
    short = _cast_method(_dtype.int16)
    byte = _cast_method(_dtype.uint8)
    bool = _cast_method(_dtype.bool_)

    def type(self, dtype=None, non_blocking: bool = False) -> str | Tensor:
        """Without ``dtype``, the legacy type name ("torch.FloatTensor", "torch.cuda.LongTensor");
        with one (a dtype, such a name or a legacy class such as ``tensor.DoubleTensor``), a
        cast (a name with ``cuda`` also moves to the GPU).

        Raises:
            ValueError: for a string that is not a legacy type name.
        """
        if dtype is None:
            return _legacy_types.type_name(self.dtype, self._device.type)
        if isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), _dtype.dtype):
            dtype = _legacy_types.type_name(dtype.dtype, "cpu")  # a legacy class: tensor.DoubleTensor
        if isinstance(dtype, str):
            dtype, device_type = _legacy_types.parse(dtype)
            return self.to(device=device_type if device_type != self._device.type else self._device,
                           dtype=dtype, non_blocking=non_blocking)
        return self.to(dtype, non_blocking=non_blocking)

    def type_as(self, other: Tensor) -> Tensor:
        """Cast to ``other``'s dtype."""
        return self.to(other.dtype)

    # ------------------------------------------------------------ autograd
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Turn recording on or off for this leaf, in place.

        Raises:
            RuntimeError: for non-float dtypes, to turn it off on a non-leaf, or to turn it on for
                an inference tensor outside ``inference_mode``.
        """
        if requires_grad and self._data.dtype.kind not in "fcV":
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients "
                f"(got {self.dtype.name})"
            )
        if requires_grad and self._is_inference and not hooks.grad_mode.inference:
            raise RuntimeError(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
            )
        if not requires_grad and self._grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if requires_grad:
            hooks.ensure_autograd()
        self._requires_grad = bool(requires_grad)
        return self

    def detach(self) -> Tensor:
        """A new tensor sharing storage (and the version counter) with no history."""
        t = _dispatch.make(self._data, self._device, self._version_box)
        t._is_inference = self._is_inference  # a view, as in make_view
        return t

    def detach_(self) -> Tensor:
        """Cut this tensor from its history, in place."""
        self._grad_fn = None
        self._requires_grad = False
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf after backward."""
        hooks.api.retain_grad(self)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new grad.

        Returns a handle whose ``remove()`` unregisters the hook.

        Raises:
            RuntimeError: on a tensor that does not require grad.
        """
        return hooks.api.register_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after a leaf's ``.grad`` has been accumulated.

        Raises:
            RuntimeError: on a non-leaf tensor or one that does not require grad.
        """
        return hooks.api.register_post_accumulate_grad_hook(self, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``.

        Raises:
            RuntimeError: "grad can be implicitly created only for scalar outputs" without
                ``gradient`` on a non-scalar, "element 0 of tensors does not require grad and
                does not have a grad_fn", or a second backward without ``retain_graph``.
        """
        hooks.api.run_backward((self,), (gradient,), retain_graph, create_graph, inputs)

    # ------------------------------------------------------------ python protocol
    def __repr__(self) -> str:
        return _format.format_tensor(self)

    def __format__(self, format_spec: str) -> str:
        """A 0-d tensor formats as its Python number (``f"{loss:.4f}"``), as in PyTorch; any other
        tensor as its repr (a non-empty spec raises TypeError, as for any object)."""
        if self.ndim == 0:
            return format(self.item(), format_spec)
        return object.__format__(self, format_spec)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        if _dispatch.tracer is not None:
            _dispatch.tracer.on_size(self, 0)
        return self._data.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with more than one value is ambiguous "
                f"(it has {self._data.size} elements)"
            )
        return bool(self.item())

    def __complex__(self) -> complex:
        """The value of a one-element tensor as a complex number.

        Raises:
            ValueError: unless the tensor has one element.
        """
        return complex(self._one_item())

    def __float__(self) -> float:
        """The value of a one-element tensor as a float.

        Raises:
            ValueError: unless the tensor has one element.
            RuntimeError: for a complex value with an imaginary part.
        """
        return float(self._real_scalar("double"))

    def __int__(self) -> int:
        """The value of a one-element tensor as an int (truncated). Raises as ``__float__``."""
        return int(self._real_scalar("int64_t"))

    def _real_scalar(self, c_type: str):
        """``item()`` for ``float()`` and ``int()``, with PyTorch's errors."""
        value = self._one_item()
        if isinstance(value, complex):
            if value.imag:
                raise RuntimeError(f"value cannot be converted to type {c_type} without overflow")
            return value.real
        return value

    def _one_item(self):
        """``item()`` of a one-element tensor, for the number protocols.

        Raises:
            ValueError: unless the tensor has one element.
        """
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __index__(self) -> int:
        """The value of a one-element integer or bool tensor as an index (``lst[t]``).

        Raises:
            TypeError: for other dtypes or sizes.
        """
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    __hash__ = object.__hash__

    def __reduce_ex__(self, protocol):
        return _conversion.reduce_tensor(self)

    def __deepcopy__(self, memo):
        return _conversion.deepcopy_tensor(self, memo)

    # ------------------------------------------------------------ operators
    __add__ = __radd__ = ops.elementwise.add_operator
    __sub__ = ops.sub

    def __rsub__(self, other):
        return ops.sub(self._scalar_operand(other), self)

    __mul__ = __rmul__ = ops.mul
    __truediv__ = ops.div

    def __rtruediv__(self, other):
        return ops.div(self._scalar_operand(other, floating=True), self)

    __floordiv__ = ops.floor_divide

    def __rfloordiv__(self, other):
        return ops.floor_divide(self._scalar_operand(other), self)

    __mod__ = ops.remainder

    def __rmod__(self, other):
        return ops.remainder(self._scalar_operand(other), self)

    __pow__ = ops.pow

    def __rpow__(self, other):
        return ops.pow(self._scalar_operand(other), self)

    __matmul__ = ops.matmul

    def __rmatmul__(self, other):
        return ops.matmul(other, self)

    __neg__ = ops.neg

    def __pos__(self):
        return self

    __abs__ = ops.abs

    def __invert__(self):
        kind = self._data.dtype.kind
        if kind in "fcV":
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
        return ops.logical_not(self) if kind == "b" else ops.bitwise_not(self)

    __lshift__ = ops.bitwise_left_shift
    __rshift__ = ops.bitwise_right_shift

    def __rlshift__(self, other):
        return ops.bitwise_left_shift(self._scalar_operand(other), self)

    def __rrshift__(self, other):
        return ops.bitwise_right_shift(self._scalar_operand(other), self)

    __and__ = ops.bitwise_and
    __or__ = ops.bitwise_or
    __xor__ = ops.bitwise_xor
    __rand__ = ops.bitwise_and
    __ror__ = ops.bitwise_or
    __rxor__ = ops.bitwise_xor
    __eq__ = ops.eq
    __ne__ = ops.ne
    __lt__ = ops.lt
    __le__ = ops.le
    __gt__ = ops.gt
    __ge__ = ops.ge
    __getitem__ = ops.getitem

    def __setitem__(self, index, value):
        _inplace.setitem(self, index, value)

    def _scalar_operand(self, value, floating: bool = False) -> Tensor:
        """A Python number as a 0-d tensor of the dtype it would give combined with ``self``
        (with ``floating``, at least the default float: the left operand of a true division, which
        must not wrap around in an integer dtype first, as ``-2 / uint8_tensor``)."""
        return value if isinstance(value, Tensor) else _dispatch.number_operand(value, self, floating)

    # ------------------------------------------------------------ op methods
    # Each is the function of the same name in ``tensor.ops``; ``self`` is its first argument.
    add, sub, mul, div, pow = ops.add, ops.sub, ops.mul, ops.div, ops.pow
    maximum, minimum, remainder, floor_divide = ops.maximum, ops.minimum, ops.remainder, ops.floor_divide
    neg, abs, exp, log, sqrt, rsqrt = ops.neg, ops.abs, ops.exp, ops.log, ops.sqrt, ops.rsqrt
    sin, cos, tanh, sigmoid, relu = ops.sin, ops.cos, ops.tanh, ops.sigmoid, ops.relu
    log1p, expm1, reciprocal, sign = ops.log1p, ops.expm1, ops.reciprocal, ops.sign
    floor, ceil, round, trunc, clamp, clip = ops.floor, ops.ceil, ops.round, ops.trunc, ops.clamp, ops.clamp
    eq, ne, lt, le, gt, ge = ops.eq, ops.ne, ops.lt, ops.le, ops.gt, ops.ge
    logical_and, logical_or, logical_xor, logical_not = (
        ops.logical_and, ops.logical_or, ops.logical_xor, ops.logical_not)
    isnan, isinf, isfinite = ops.isnan, ops.isinf, ops.isfinite
    sum, mean, prod, var, std, logsumexp = ops.sum, ops.mean, ops.prod, ops.var, ops.std, ops.logsumexp
    max, min, amax, amin, argmax, argmin = ops.max, ops.min, ops.amax, ops.amin, ops.argmax, ops.argmin
    all, any, sum_to_size = ops.all, ops.any, ops.sum_to_size
    matmul, mm, bmm, dot = ops.matmul, ops.mm, ops.bmm, ops.dot
    softmax, log_softmax = ops.softmax, ops.log_softmax
    view, reshape, permute, transpose = ops.view, ops.reshape, ops.permute, ops.transpose
    squeeze, unsqueeze, expand, flatten, contiguous = (
        ops.squeeze, ops.unsqueeze, ops.expand, ops.flatten, ops.contiguous)
    split, chunk, narrow, unbind = ops.split, ops.chunk, ops.narrow, ops.unbind
    gather, scatter, scatter_add, index_select, index_add = (
        ops.gather, ops.scatter, ops.scatter_add, ops.index_select, ops.index_add)
    index_put, masked_fill = ops.index_put, ops.masked_fill

    def clone(self, *, memory_format=_formats.preserve_format) -> Tensor:
        """A copy with its own storage (laid out as ``self``, or as ``memory_format`` asks);
        gradients flow back to ``self``."""
        if memory_format is _formats.preserve_format and self._data.flags.c_contiguous:
            return ops.clone(self)
        return ops.strided.clone_as(self, memory_format)

    # issue 16: sorting, scans and layout ops
    sort, argsort, msort, topk, kthvalue = ops.sort, ops.argsort, ops.msort, ops.topk, ops.kthvalue
    median, nanmedian, mode = ops.median, ops.nanmedian, ops.mode
    cumsum, cumprod, cummax, cummin, logcumsumexp = (
        ops.cumsum, ops.cumprod, ops.cummax, ops.cummin, ops.logcumsumexp)
    tril, triu, flip, fliplr, flipud, roll, rot90 = (
        ops.tril, ops.triu, ops.flip, ops.fliplr, ops.flipud, ops.roll, ops.rot90)
    repeat, tile, repeat_interleave, broadcast_to, unflatten, unfold = (
        ops.repeat, ops.tile, ops.repeat_interleave, ops.broadcast_to, ops.unflatten, ops.unfold)
    diag, diagonal, diag_embed, swapaxes, swapdims, moveaxis = (
        ops.diag, ops.diagonal, ops.diag_embed, ops.swapaxes, ops.swapdims, ops.moveaxis)
    movedim = ops.moveaxis
    nonzero, argwhere, masked_select, masked_scatter = ops.nonzero, ops.argwhere, ops.masked_select, ops.masked_scatter
    unique, unique_consecutive, scatter_reduce = ops.unique, ops.unique_consecutive, ops.scatter_reduce
    index_copy, index_fill, index_reduce, take, put = (
        ops.index_copy, ops.index_fill, ops.index_reduce, ops.take, ops.put)
    count_nonzero, bincount, histc = ops.count_nonzero, ops.bincount, ops.histc
    asin, acos, atan, asinh, acosh, atanh = ops.asin, ops.acos, ops.atan, ops.asinh, ops.acosh, ops.atanh
    arcsin, arccos, arctan, arcsinh, arccosh, arctanh = (
        ops.arcsin, ops.arccos, ops.arctan, ops.arcsinh, ops.arccosh, ops.arctanh)
    tan, sinh, cosh, log2, log10, exp2 = ops.tan, ops.sinh, ops.cosh, ops.log2, ops.log10, ops.exp2
    square, sinc, frac, logit, deg2rad, rad2deg = (
        ops.square, ops.sinc, ops.frac, ops.logit, ops.deg2rad, ops.rad2deg)
    atan2, arctan2, lerp, logaddexp, logaddexp2, hypot = (
        ops.atan2, ops.arctan2, ops.lerp, ops.logaddexp, ops.logaddexp2, ops.hypot)
    xlogy, copysign, fmod = ops.xlogy, ops.copysign, ops.fmod
    addmm, addbmm, baddbmm, addmv, addr = ops.addmm, ops.addbmm, ops.baddbmm, ops.addmv, ops.addr
    addcmul, addcdiv, outer, ger, cross = ops.addcmul, ops.addcdiv, ops.outer, ops.ger, ops.cross
    trace, kron, nan_to_num, nansum, nanmean = ops.trace, ops.kron, ops.nan_to_num, ops.nansum, ops.nanmean
    isclose, allclose, equal = ops.isclose, ops.allclose, ops.equal
    lgamma, digamma, erfinv, mvlgamma = ops.lgamma, ops.digamma, ops.erfinv, ops.mvlgamma
    i0, igamma, igammac = ops.i0, ops.igamma, ops.igammac
    norm, dist, renorm = ops.norm, ops.dist, ops.renorm
    det, slogdet, logdet, inverse, cholesky, qr = (
        ops.det, ops.slogdet, ops.logdet, ops.inverse, ops.cholesky, ops.qr)
    svd = ops.decomp.torch_svd
    lu, lu_solve = ops.lu.torch_lu, ops.lu.lu_solve
    geqrf, orgqr, ormqr = ops.householder.geqrf, ops.householder.orgqr, ops.householder.ormqr
    stft, istft = ops.spectral.stft, ops.spectral.istft
    conj, conj_physical, angle = ops.conj, ops.conj_physical, ops.angle
    absolute, divide, multiply, subtract, negative, positive = (
        ops.absolute, ops.divide, ops.multiply, ops.subtract, ops.negative, ops.positive)
    greater, greater_equal, less, less_equal, not_equal = (
        ops.greater, ops.greater_equal, ops.less, ops.less_equal, ops.not_equal)
    true_divide, fix, sgn, float_power, ravel, clamp_min, clamp_max, aminmax = (
        ops.true_divide, ops.fix, ops.sgn, ops.float_power, ops.ravel, ops.clamp_min, ops.clamp_max, ops.aminmax)
    diff, inner, mv, vdot, cov, corrcoef, histogram, quantile, nanquantile = (
        ops.diff, ops.inner, ops.mv, ops.vdot, ops.cov, ops.corrcoef, ops.histogram, ops.quantile, ops.nanquantile)
    tensor_split, hsplit, vsplit, dsplit, take_along_dim = (
        ops.tensor_split, ops.hsplit, ops.vsplit, ops.dsplit, ops.take_along_dim)
    signbit, heaviside, fmax, fmin, ldexp, isneginf, isposinf, isreal = (
        ops.signbit, ops.heaviside, ops.fmax, ops.fmin, ops.ldexp, ops.isneginf, ops.isposinf, ops.isreal)
    is_nonzero, is_same_size, is_conj, is_neg, is_signed, resolve_conj, resolve_neg = (
        ops.is_nonzero, ops.is_same_size, ops.is_conj, ops.is_neg, ops.is_signed, ops.resolve_conj, ops.resolve_neg)
    diagflat, diagonal_scatter = ops.diagflat, ops.diagonal_scatter
    # issue 16: views by explicit geometry; results of fixed size
    as_strided, as_strided_, as_strided_scatter, slice_inverse, resize_as_ = (
        ops.as_strided, ops.as_strided_, ops.as_strided_scatter, ops.slice_inverse, ops.resize_as_)
    storage_offset, nonzero_static, hash_tensor = ops.strided.storage_offset, ops.nonzero_static, ops.hash_tensor
    real = property(ops.real, doc="The real part (a copy; the tensor itself for real dtypes).")
    imag = property(ops.imag, doc="The imaginary part (a copy); RuntimeError for real dtypes.")

    def polygamma(self, n: int) -> Tensor:
        """``tensor.polygamma(n, self)``."""
        return ops.polygamma(n, self)

    def select(self, dim: int, index: int) -> Tensor:
        """The slice at ``index`` along ``dim``, without that dim; a view."""
        d = ops.reduction.wrap_dim(dim, self.ndim)
        return self[(slice(None),) * d + (index,)]

    def view_as(self, other: Tensor) -> Tensor:
        """``view`` with ``other``'s shape."""
        return self.view(other.shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        """``reshape`` with ``other``'s shape."""
        return self.reshape(other.shape)

    def expand_as(self, other: Tensor) -> Tensor:
        """``expand`` to ``other``'s shape."""
        return self.expand(other.shape)

    def t(self) -> Tensor:
        """Transpose a tensor of at most 2 dims."""
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return self.T

    new_zeros, new_ones, new_full = _creation.new_zeros, _creation.new_ones, _creation.new_full
    new_empty, new_tensor = _creation.new_empty, _creation.new_tensor

    # ------------------------------------------------------------ in-place ops
    add_, sub_, mul_, div_ = (_inplace.inplace(ops.add), _inplace.inplace(ops.sub),
                              _inplace.inplace(ops.mul), _inplace.inplace(ops.div))
    pow_, clamp_, neg_, abs_ = (_inplace.inplace(ops.pow), _inplace.inplace(ops.clamp),
                                _inplace.inplace(ops.neg), _inplace.inplace(ops.abs))
    exp_, log_, sqrt_ = _inplace.inplace(ops.exp), _inplace.inplace(ops.log), _inplace.inplace(ops.sqrt)
    relu_, sigmoid_, tanh_ = (_inplace.inplace(ops.relu), _inplace.inplace(ops.sigmoid),
                              _inplace.inplace(ops.tanh))
    masked_fill_, index_put_ = _inplace.inplace(ops.masked_fill), _inplace.inplace(ops.index_put)
    scatter_, scatter_add_, index_add_ = (_inplace.inplace(ops.scatter), _inplace.inplace(ops.scatter_add),
                                          _inplace.inplace(ops.index_add))
    # issue 16: in-place forms of the new ops (each commits the out-of-place result into self)
    (lerp_, addcmul_, addcdiv_, addmm_, baddbmm_, tril_, triu_, nan_to_num_, cumsum_, cumprod_,
     index_fill_, index_copy_, index_reduce_, masked_scatter_, scatter_reduce_, put_, renorm_,
     atan2_, hypot_, xlogy_, lgamma_, digamma_, erfinv_, fmod_, copysign_) = (
        _inplace.inplace(f) for f in (
            ops.lerp, ops.addcmul, ops.addcdiv, ops.addmm, ops.baddbmm, ops.tril, ops.triu, ops.nan_to_num,
            ops.cumsum, ops.cumprod, ops.index_fill, ops.index_copy, ops.index_reduce, ops.masked_scatter,
            ops.scatter_reduce, ops.put, ops.renorm, ops.atan2, ops.hypot, ops.xlogy, ops.lgamma, ops.digamma,
            ops.erfinv, ops.fmod, ops.copysign))
    (asin_, acos_, atan_, asinh_, acosh_, atanh_, tan_, sinh_, cosh_, log2_, log10_, exp2_, square_, frac_) = (
        _inplace.inplace(f) for f in (
            ops.asin, ops.acos, ops.atan, ops.asinh, ops.acosh, ops.atanh, ops.tan, ops.sinh, ops.cosh, ops.log2,
            ops.log10, ops.exp2, ops.square, ops.frac))
    (addmv_, conj_physical_, arccos_, arccosh_, arcsin_, arcsinh_, arctan_, arctanh_, ceil_, clamp_max_, clamp_min_,
     clip_, cos_, deg2rad_, erf_, erfc_, expm1_, fix_, floor_, gcd_, lcm_, ldexp_, log1p_, logit_, negative_,
     rad2deg_, reciprocal_, round_, rsqrt_, sin_, sinc_, trunc_) = (
        _inplace.inplace(f) for f in (
            ops.addmv, ops.conj_physical, ops.arccos, ops.arccosh, ops.arcsin, ops.arcsinh, ops.arctan, ops.arctanh,
            ops.ceil, ops.clamp_max, ops.clamp_min, ops.clip, ops.cos, ops.deg2rad, ops.erf, ops.erfc, ops.expm1,
            ops.fix, ops.floor, ops.gcd, ops.lcm, ops.ldexp, ops.log1p, ops.logit, ops.negative, ops.rad2deg,
            ops.reciprocal, ops.round, ops.rsqrt, ops.sin, ops.sinc, ops.trunc))
    i0_, igamma_, igammac_ = _inplace.inplace(ops.i0), _inplace.inplace(ops.igamma), _inplace.inplace(ops.igammac)
    fill_, zero_, copy_ = _inplace.fill_, _inplace.zero_, _inplace.copy_
    uniform_, normal_ = _random.uniform_, _random.normal_
    # ``w -= lr * w.grad`` must update ``w`` itself (a leaf stays a leaf), as in PyTorch.
    __iadd__, __isub__, __imul__, __itruediv__, __ipow__ = add_, sub_, mul_, div_, pow_


_dispatch.Tensor = Tensor  # the class _dispatch.make creates
