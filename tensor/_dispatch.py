"""Running an op: check devices, promote dtypes, call the kernel, record the graph.

This is the hot path of every op, so it is written for speed: no keyword
arguments, no per-call allocation beyond the result, and the autograd hook is
only touched when an input requires grad.
"""

from __future__ import annotations

from . import _autograd_hooks as hooks
from . import _backend, _dtype, _tensor
from ._device import CPU as _CPU
from ._grad_state import grad_enabled, inference_enabled
from ._tensor_base import TensorBase

_COMPILED = not __file__.endswith(".py")  # as in autograd/graph.py
_api = hooks.api
# autograd.graph.record, taken from hooks.api (which imports autograd) by the first recorded op:
# then one global read per op instead of an attribute lookup on hooks.api.
_record = None
_new = object.__new__
# The CPU backend and its array type, numpy's ndarray: what most ops take and make (the compiled
# dispatcher reads the dtypes of such arrays from their struct).
_HOST = _backend.cpu_backend
_HOST_ARRAY = _HOST.array_type
# tensor/_tensor.py sets this to its Tensor (this module is imported before it is defined).
Tensor = None
# A new tensor's version counter is a copy (compiled, one C call; a dict literal is two), which
# the GC does not track, as it does not track this dict: Note [Graphs and the cyclic GC].
_VERSION_0 = {0: 0}
# While tensor.compile captures a function, its Tracer (tensor/_compile/capture.py): every op
# run here is reported to it.
tracer = None
# While tensor.profiler records (tensor/profiler/_recorder.py): each op is timed by it. Its
# ``enter`` returns False for the call it makes itself, so that call runs the body below.
profiler = None
# While any tensor.autocast region is open (tensor/_autocast.py): ``autocast(op, inputs)`` returns
# the inputs cast by the op's autocast policy (unchanged for ops without one or outside a region).
autocast = None


def _recorder():
    """``hooks.api.record`` (importing autograd on first use), kept in ``_record`` for the next ops."""
    global _record
    _record = _api.record
    return _record


def make(array, device, version=None) -> _tensor.Tensor:
    """Wrap an array (already on ``device``) in a fresh Tensor without copying."""
    if _COMPILED:  # a C call to TensorBase's tp_new (Note [Compiled Tensor fields])
        t = new_tensor(Tensor)  # noqa: F821 (C, in tensor/_tensor_base.pxd)
    else:
        t = _new(Tensor)  # without Tensor.__init__
    t._data = array
    t._device = device
    t._version_box = _VERSION_0.copy() if version is None else version
    if inference_enabled():  # Note [Inference tensors] in tensor/_grad_state.py
        t._is_inference = True
    return t


def make_view(array, parent, op, params) -> _tensor.Tensor:
    """Wrap ``array``, a view of ``parent``'s storage made by ``op``.

    The view shares the parent's version counter and remembers how it was made,
    so that an in-place op on it can update the base's history.
    """
    t = make(array, parent._device, parent._version_box)
    t._base = parent._base if parent._base is not None else parent
    t._view_src = (parent, op, params)
    t._is_inference = parent._is_inference  # a view is what its base is (Note [Inference tensors])
    return t


def is_tensor(obj) -> bool:
    """True for a Tensor (or a subclass such as Parameter)."""
    return isinstance(obj, _tensor.Tensor)


def scalar_tensor(value, dtype, device):
    """A 0-d tensor holding a Python number; ``dtype=None`` infers it like ``tensor.tensor``."""
    np_dtype = None if dtype is None else dtype.numpy
    if dtype is None and isinstance(value, float):
        np_dtype = _dtype.get_default_dtype().numpy
    elif dtype is None and isinstance(value, complex):  # complex64 beside float32, as tensor(1j)
        np_dtype = _dtype.get_default_dtype().to_complex().numpy
    try:
        array = device.backend.asarray(value, np_dtype, device.index)
    except OverflowError:  # an int out of range of an integer dtype wraps around, as in PyTorch
        array = device.backend.asarray(value & 0xFFFFFFFFFFFFFFFF, "uint64", device.index).astype(np_dtype)
    return make(array, device)


def check_same_device(op_name, tensors):
    """Raise RuntimeError naming both devices when ``tensors`` do not all share one."""
    first = tensors[0]._device
    for t in tensors[1:]:
        if t._device is not first:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two "
                f"devices, {first} and {t._device}! (when checking arguments for {op_name})"
            )
    return first


def apply(op, inputs, params=()):
    """Run ``op`` on Tensors ``inputs`` with non-tensor ``params``; return the output Tensor."""
    if profiler is not None and profiler.enter(op, inputs, inputs):
        return profiler.exit(apply(op, inputs, params))
    if autocast is not None:
        inputs = autocast(op, inputs)
    device = inputs[0]._device
    if len(inputs) > 1:
        device = check_same_device(op.name, inputs)
    backend = device._backend or device.backend
    out = backend.launch(device.index, op.kernel, backend.xp, *[t._data for t in inputs], *params)
    out = _as_backend_array(out, backend)
    if op.is_view:
        result = make_view(out, inputs[0], op, params)
    else:
        result = make(out, device)
    if op.differentiable and grad_enabled():
        for t in inputs:
            if t._requires_grad:
                (_record or _recorder())(op, result, inputs, params)
                break
    if tracer is not None:
        tracer.record(op, "apply", inputs, params, result)
    return result


def apply_unary(op, a, params=()):
    """``apply`` for a single input; the hot path for unary ops and views.

    Raises:
        TypeError: when ``a`` is not a Tensor.
    """
    if not isinstance(a, TensorBase):  # as in apply_binary
        raise TypeError(f"{op.name}(): argument 'input' must be Tensor, not {type(a).__name__}")
    if profiler is not None and profiler.enter(op, a, (a,)):
        return profiler.exit(apply_unary(op, a, params))
    if autocast is not None:
        (a,) = autocast(op, (a,))
    device = a._device
    backend = device._backend or device.backend
    if device.index is None:  # every backend's launch is the plain call then: skip a frame
        out = op.kernel(backend.xp, a._data, *params)
    else:
        out = backend.launch(device.index, op.kernel, backend.xp, a._data, *params)
    out = _as_backend_array(out, backend)
    if op.is_view:
        result = make_view(out, a, op, params)
    else:
        result = make(out, device)
    if a._requires_grad and op.differentiable and grad_enabled():
        (_record or _recorder())(op, result, (a,), params)
    if tracer is not None:
        tracer.record(op, "unary", (a,), params, result)
    return result


def apply_binary(op, a, b, float_result=False):
    """Run a broadcasting binary op on a Tensor ``a`` and a Tensor or Python scalar ``b``.

    Applies PyTorch's type promotion: tensors meet at ``result_type``; a Python
    scalar never widens the tensor's dtype. With ``float_result`` integer
    results become the default float dtype (true division).

    Raises:
        TypeError: when ``a`` is not a Tensor, or ``b`` neither a Tensor nor a number.
        RuntimeError: for tensors on different devices or shapes that do not broadcast.
    """
    if not isinstance(a, TensorBase):  # compiled, ``a`` is typed TensorBase, which lets None through
        raise TypeError(f"{op.name}(): argument 'input' must be Tensor, not {type(a).__name__}")
    if profiler is not None and profiler.enter(op, a, (a, b)):
        return profiler.exit(apply_binary(op, a, b, float_result))
    if autocast is not None:
        a, b = autocast(op, (a, b))
    device = a._device
    if isinstance(b, TensorBase):
        b_tensor = b  # typed TensorBase when compiled: its fields are struct reads
        if b_tensor._device is not device:
            check_same_device(op.name, (a, b))
        b_grad = b_tensor._requires_grad
    else:
        if type(b) is not float and type(b) is not int:
            b = _check_scalar(op, b)
            if isinstance(b, TensorBase):  # an ndarray operand
                check_same_device(op.name, (a, b))
        b_grad = False
    backend = device._backend or device.backend
    if device.index is None:  # as in apply_unary
        out = _binary_kernel(op, backend, a, b, float_result)
    else:
        out = backend.launch(device.index, _binary_kernel, op, backend, a, b, float_result)
    result = make(out, device)
    if (a._requires_grad or b_grad) and op.differentiable and grad_enabled():
        (_record or _recorder())(op, result, (a, b), ())
    if tracer is not None:
        if isinstance(b, TensorBase):
            tracer.record(op, "binary", (a, b), (), result, None, float_result)
        else:
            tracer.record(op, "binary", (a,), (), result, b, float_result)
    return result


# Ops whose functions take a Python number first, as torch's Scalar-self overloads (torch.mul(2, t));
# the comparisons and most others refuse one, as torch does.
_SCALAR_FIRST = frozenset({"mul", "remainder", "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor",
                           "bitwise_left_shift", "bitwise_right_shift"})


def binary_function(op, float_result=False):
    """``fn(input, other)``: ``apply_binary(op, input, other, float_result)``, the public function
    (and Tensor operator) of a binary op with no other argument. Compiled, it is a C function: no
    Python frame between ``a * b`` and the dispatcher."""

    def run(input, other):
        try:
            return apply_binary(op, input, other, float_result)
        except TypeError:  # off the hot path: a Python number first (torch.mul(2, t)), or a bad input
            if not _takes_number_first(op, input, other):
                raise
        return _number_first(op, input, other, float_result)

    _BINARY[run] = (op, float_result)
    return run


def _takes_number_first(op, input, other) -> bool:
    """Whether ``op(input, other)`` is a Python number then a tensor, which ``op`` accepts."""
    return op.name in _SCALAR_FIRST and type(input) in (bool, int, float, complex) and isinstance(other, TensorBase)


def _number_first(op, number, other, float_result):
    """``op(number, other)``: the number as ``number_operand`` makes it."""
    return apply_binary(op, number_operand(number, other), other, float_result)


def number_operand(value, other, floating=False):
    """A Python number operand of a binary op whose other operand is the Tensor ``other``, as the
    0-d tensor of the dtype it gives combined with ``other`` (``torch.add(1, t)``, ``1 - t``);
    with ``floating``, at least the default float (a true division's dividend must not wrap around
    in an integer dtype first, as ``-2 / uint8_tensor``)."""
    other_tensor = other  # typed TensorBase when compiled
    dtype = _dtype.scalar_result_type(other_tensor.dtype, value)
    if floating and not (dtype.is_floating_point or dtype.is_complex):
        dtype = _dtype.get_default_dtype()
    return scalar_tensor(value, dtype, other_tensor._device)


# A function binary_function made -> (op, float_result), for binary_with_out.
_BINARY: dict = {}


def binary_with_out(fn, write_out):
    """``fn`` (a function ``binary_function`` made) taking PyTorch's ``out=`` too, for the
    ``tensor`` namespace (Note [out= arguments] in tensor/_out_arg.py): with ``out`` given,
    ``write_out(fn, input, other, out)`` runs. Compiled, a call without ``out`` is still a C
    function, where a Python wrapper would add a frame. None for another function."""
    found = _BINARY.get(fn)
    if found is None:
        return None
    op, float_result = found

    def run(input, other, *, out=None):
        if out is None:
            try:
                return apply_binary(op, input, other, float_result)
            except TypeError:  # as in binary_function
                if not _takes_number_first(op, input, other):
                    raise
            return _number_first(op, input, other, float_result)
        return write_out(fn, input, other, out)

    run.__name__, run.__qualname__, run.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return run


def _binary_kernel(op, backend, a, b, float_result):
    """The arrays of ``apply_binary``: promotion casts, the kernel and its retry."""
    # Compiled, a numpy array's dtype and kind are read from its struct (array_dtype, array_kind
    # in tensor/_host_arrays.pxd): the same values, without attribute lookups.
    ad = a._data
    ad_dtype = array_dtype(ad, _HOST_ARRAY) if _COMPILED else ad.dtype  # noqa: F821 (C, in the .pxd)
    if isinstance(b, TensorBase):
        b_tensor = b  # as in apply_binary
        bd = b_tensor._data
        bd_dtype = array_dtype(bd, _HOST_ARRAY) if _COMPILED else bd.dtype  # noqa: F821
        if ad_dtype is not bd_dtype and ad_dtype != bd_dtype:
            target = _dtype.result_type(a.dtype, ad.ndim, b.dtype, bd.ndim)
            if float_result and not (target.is_floating_point or target.is_complex):
                target = _dtype.get_default_dtype()
            ad = ad.astype(target.numpy, copy=False)
            bd = bd.astype(target.numpy, copy=False)
        elif float_result and ad_dtype.kind not in "fcV":  # V: bfloat16, float8 (ml_dtypes)
            target = _dtype.get_default_dtype().numpy
            ad = ad.astype(target)
            bd = bd.astype(target)
    else:
        kind = ad_dtype.kind
        if kind not in "fcV":
            if type(b) is complex:
                ad = ad.astype(_dtype.scalar_result_type(a.dtype, b).numpy)
            elif float_result or isinstance(b, float):
                ad = ad.astype(_dtype.get_default_dtype().numpy)
            elif kind == "b" and type(b) is int:
                ad = ad.astype("int64")
        elif kind != "c" and type(b) is complex:
            ad = ad.astype(_dtype.scalar_result_type(a.dtype, b).numpy)
        bd = backend.scalar_operand(b, ad.dtype)
    try:
        operator = op.operator
        # ad.dtype.kind (ad may have been cast above)
        kind = array_kind(ad, _HOST_ARRAY) if _COMPILED else ad.dtype.kind  # noqa: F821
        if operator is not None and kind != "V":  # no Python frame for the kernel
            out = operator(ad, bd)
        else:
            out = op.kernel(backend.xp, ad, bd)
    except (ValueError, OverflowError) as exc:
        # Off the hot path: only reached when numpy refuses the operands.
        out = _retry_binary(op, backend.xp, ad, bd, exc)
    return _as_backend_array(out, backend)


def _as_backend_array(out, backend):
    """``out`` as an array of ``backend``: a kernel may return a scalar (numpy's ops on 0-d arrays)."""
    # The first test spares most ops the lookup of backend.array_type.
    if (type(out) is not _HOST_ARRAY or backend is not _HOST) and type(out) is not backend.array_type:
        return backend.xp.asarray(out)
    return out


def _retry_binary(op, xp, ad, bd, exc):
    """Handle the operands numpy refused in ``apply_binary``, with PyTorch's errors and semantics.

    * Shapes that do not broadcast raise PyTorch's RuntimeError naming both sizes.
    * A Python int out of range for an integer tensor wraps around, as in PyTorch
      (``uint8 + -1`` is ``uint8 + 255``), where numpy 2 raises OverflowError.
    * Any other ValueError (e.g. integers to negative integer powers) becomes a RuntimeError.
    """
    a_shape, b_shape = getattr(ad, "shape", ()), getattr(bd, "shape", ())
    for i in range(1, min(len(a_shape), len(b_shape)) + 1):
        sa, sb = a_shape[-i], b_shape[-i]
        if sa != sb and sa != 1 and sb != 1:
            dim = max(len(a_shape), len(b_shape)) - i
            raise RuntimeError(
                f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at non-singleton dimension {dim}"
            ) from None
    if isinstance(exc, OverflowError) and type(bd) is int and ad.dtype.kind in "iu":
        wrapped = xp.asarray(bd & 0xFFFFFFFFFFFFFFFF, dtype="uint64").astype(ad.dtype)
        return op.kernel(xp, ad, wrapped)
    raise RuntimeError(str(exc)) from exc


def _check_scalar(op, value):
    """The second operand of a binary op that is not a Python int or float, as the op takes it:
    numpy scalars (and other 0-d arrays) as Python numbers (``t * np.float64(2)`` stays float32,
    as in PyTorch), numpy arrays as CPU tensors of their dtype (``t + array``).

    Raises:
        TypeError: for anything else.
    """
    if type(value) is bool or type(value) is complex:
        return value
    if hasattr(value, "dtype") and getattr(value, "ndim", None) == 0:  # numpy scalar
        return value.item()
    if type(value) is _HOST_ARRAY:
        _dtype.from_numpy_dtype(value.dtype)  # TypeError for dtypes tensors cannot hold
        return make(value, _CPU)
    if isinstance(value, (int, float, complex)):
        return value
    raise TypeError(
        f"{op.name}(): expected a Tensor or a Python number as the second operand, got {type(value).__name__}"
    )
