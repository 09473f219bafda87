"""PyTorch's ``out=`` keyword on the public functions (Note [out= arguments]).

Note [out= arguments]
    ``torch.add(a, b, out=c)`` writes the result into ``c`` and returns ``c``; ported code uses
    it to reuse buffers. ``install`` wraps each function of ``tensor``, ``tensor.linalg``,
    ``tensor.special`` and ``tensor.fft`` whose PyTorch counterpart takes ``out``
    (``OUT_FUNCTIONS``: for ``torch``, the names in torch 2.13's ``_VariableFunctions.pyi`` and
    the Python functions with an ``out`` parameter; for the others, the functions whose
    documented signature has ``out=None``; ``tests/tensor/test_out_arg.py`` keeps the lists
    equal to torch's). ``Tensor`` methods take no ``out``, as in PyTorch.

    The wrapped function computes its result as usual and then writes it into ``out``, so an
    ``out`` that aliases an input (``add(a, b, out=a)``) is safe. As in PyTorch:

    * ``out`` must be on the result's device, and the result's dtype must cast to ``out``'s
      without going down a kind (float to int, complex to real): ``RuntimeError`` otherwise;
    * an ``out`` of another shape is resized, with PyTorch's deprecation ``UserWarning``
      unless it had no elements;
    * a function that takes ``dtype`` or ``device`` (factories such as ``zeros`` and
      ``arange``; reductions such as ``sum`` and ``cumsum``) computes in ``out``'s dtype and on
      its device when they are not given; a ``dtype`` given that differs is a ``RuntimeError``;
    * functions returning several tensors (``max(x, dim)``, ``sort``, ``frexp``) take a tuple
      of them and return the same kind of named tuple of the ``out`` tensors; ``split_copy``,
      ``split_with_sizes_copy`` and ``unbind_copy`` fill the list given and return None;
    * when autograd is recording and an argument or ``out`` requires grad, ``RuntimeError``:
      ``out=`` results are not differentiable.

    One difference: PyTorch requires the exact dtype for some ops (``mm``, ``softmax``, the
    indices of ``max``) and takes ``out`` on only some overloads of others (``argsort`` with
    ``stable=``, ``median`` with ``dim``); here every call of these functions takes any ``out``
    the result casts to.

    A call without ``out`` costs one more Python frame (~0.1 us); the wrapper also renames
    NumPy's keywords where the function takes them, so that there is never a second one. The
    plain binary ops (``tensor.mul``, ``tensor.eq``, ...) get a compiled variant instead
    (``_dispatch.binary_with_out``), which costs nothing without ``out``.
"""

from __future__ import annotations

import functools
import inspect
import warnings

from . import _dispatch, _inplace, _numpy_names
from ._autograd_hooks import grad_mode

__all__ = ["OUT_FUNCTIONS", "install"]

# module of ``tensor`` ('' for ``tensor`` itself) -> its functions whose torch counterparts take ``out``
OUT_FUNCTIONS = {
    "": frozenset("""
        abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr alias_copy all amax amin
        aminmax angle any arange arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin
        argsort as_strided_copy asin asinh atan atan2 atanh baddbmm batch_norm_elemt bernoulli
        bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor bmm
        bucketize cat ceil chain_matmul cholesky cholesky_inverse cholesky_solve clamp clamp_max
        clamp_min clip column_stack complex concat concatenate conj_physical copysign cos cosh cross
        cummax cummin cumprod cumsum deg2rad detach_copy diag diagonal_copy diff digamma div divide dot
        dstack empty eq erf erfc erfinv exp exp2 expand_copy expm1 eye fix float_power floor
        floor_divide fmax fmin fmod frac frexp frobenius_norm full gather gcd ge geqrf ger greater
        greater_equal gt hash_tensor heaviside histc histogram hstack hypot i0 igamma igammac index_add
        index_copy index_reduce index_select inner inverse isin isneginf isposinf kron kthvalue lcm
        ldexp le lerp less less_equal lgamma linspace log log10 log1p log2 log_softmax logaddexp
        logaddexp2 logcumsumexp logical_and logical_not logical_or logical_xor logit logspace logsumexp
        lt lu_solve lu_unpack masked_select matmul matrix_power max maximum mean median min minimum mm
        mode msort mul multinomial multiply mv mvlgamma nan_to_num nanmean nanmedian nanquantile nansum
        narrow_copy native_batch_norm ne neg negative nextafter nonzero nonzero_static norm normal
        not_equal nuclear_norm ones orgqr ormqr outer permute_copy polar polygamma pow prod qr quantile
        rad2deg rand randint randn randperm range reciprocal remainder renorm round row_stack rsqrt
        scatter scatter_add scatter_reduce searchsorted select_copy sgn sigmoid sign signbit sin sinc
        sinh slice_copy slice_scatter slogdet softmax sort split_copy split_with_sizes_copy sqrt square
        squeeze_copy stack std sub subtract sum svd t_copy take take_along_dim tan tanh tensordot topk
        transpose_copy triangular_solve tril triu true_divide trunc unbind_copy unfold_copy
        unsqueeze_copy var vdot view_as_complex_copy view_as_real_copy view_copy vstack where xlogy
        zeros
    """.split()),
    "linalg": frozenset("""
        cholesky cholesky_ex cond cross det eig eigh eigvals eigvalsh householder_product inv inv_ex
        ldl_factor ldl_factor_ex ldl_solve lu lu_factor lu_factor_ex lu_solve matmul matrix_norm
        matrix_power matrix_rank multi_dot norm pinv qr slogdet solve solve_ex solve_triangular svd
        svdvals tensorinv tensorsolve vecdot vector_norm
    """.split()),
    "special": frozenset("""
        digamma entr erf erfc erfcx erfinv exp2 expit expm1 gammainc gammaincc gammaln i0 i1 log1p
        log_ndtr logit logsumexp multigammaln ndtr ndtri polygamma psi round sinc xlog1py xlogy
    """.split()),
    "fft": frozenset("""
        fft fft2 fftfreq fftn hfft hfft2 hfftn ifft ifft2 ifftn ihfft ihfft2 ihfftn irfft irfft2 irfftn rfft rfft2
        rfftfreq rfftn
    """.split()),
}

# PyTorch's ``split_copy`` & co. fill the list given and return None.
_FILLING = frozenset(("split_copy", "split_with_sizes_copy", "unbind_copy"))
_RESIZE_WARNING = (
    "An output with one or more elements was resized since it had shape {old}, which does not match "
    "the required output shape {new}. This behavior is deprecated, and in a future PyTorch release "
    "outputs will not be resized unless they have zero elements. You can explicitly reuse an out "
    "tensor t by resizing it, inplace, to zero elements with t.resize_(0)."
)


def install(namespace: dict) -> None:
    """Give the functions ``OUT_FUNCTIONS`` of ``tensor`` (``namespace``: its globals) and of its
    ``linalg``, ``special`` and ``fft`` modules an ``out`` keyword (Note [out= arguments])."""
    for module, names in OUT_FUNCTIONS.items():
        functions = vars(namespace[module]) if module else namespace
        for name in names:
            fn = functions.get(name)
            if callable(fn) and not isinstance(fn, type) and not hasattr(fn, "__out_arg__"):
                # PyTorch's messages name the ATen op: ``linalg_solve``
                qualified = f"{module}_{name}" if module else name
                functions[name] = _dispatch.binary_with_out(fn, _binary_into) or _accepting_out(fn, qualified)


def _accepting_out(fn, name: str):
    # One wrapper for both keywords: NumPy's names (Note [NumPy argument names]) are renamed
    # here too, so that a call costs one extra frame, not two.
    renames = getattr(fn, "__numpy_names__", ())
    wrapped = fn.__wrapped__ if renames else fn
    try:
        signature = inspect.signature(wrapped)
    except (TypeError, ValueError):  # a builtin without one: no dtype or device
        signature = _NO_SIGNATURE
    takes = tuple(p for p in ("dtype", "device") if p in signature.parameters)

    @functools.wraps(wrapped)
    def accepting_out(*args, out=None, **kwargs):
        if kwargs and renames:
            _numpy_names.rename(name, kwargs, renames)
        if out is None:
            return wrapped(*args, **kwargs)
        return _call_into(wrapped, name, signature, takes, args, kwargs, out)

    accepting_out.__out_arg__ = True
    accepting_out.__numpy_names__ = renames
    return accepting_out


def _binary_into(fn, input, other, out):
    """``fn(input, other)`` written into ``out``, for ``_dispatch.binary_with_out``."""
    return _call_into(fn, fn.__name__, _NO_SIGNATURE, (), (input, other), {}, out)


_NO_SIGNATURE = inspect.Signature()


def _call_into(fn, name, signature, takes, args, kwargs, out):
    """``fn(*args, **kwargs)`` written into ``out`` (Note [out= arguments])."""
    outs = _out_tensors(name, out)
    if grad_mode.enabled and (any(t._requires_grad for t in outs) or _requires_grad(args, kwargs)):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic differentiation, "
            "but one of the arguments requires grad."
        )
    if takes and len(outs) == 1:
        bound = signature.bind_partial(*args, **kwargs).arguments
        for param, value in (("dtype", outs[0].dtype), ("device", outs[0].device)):
            if param not in takes:
                continue
            given = bound.get(param)
            if given is None:
                kwargs[param] = value
            elif param == "dtype" and given != value:
                raise RuntimeError(f"dtype {given} does not match dtype of out parameter ({value})")
    result = fn(*args, **kwargs)
    results = (result,) if _dispatch.is_tensor(result) else tuple(result)
    if len(results) != len(outs):
        raise TypeError(
            f"{name}() returns {len(results)} tensor{'s' if len(results) != 1 else ''}, so 'out' must be "
            + ("a Tensor" if len(results) == 1 else f"a tuple of {len(results)} Tensors")
            + f", not {_describe(out)}"
        )
    for value, target in zip(results, outs):
        _check_target(value, target)
    for value, target in zip(results, outs):
        if target.shape != value.shape:
            if target.numel():
                warnings.warn(_RESIZE_WARNING.format(old=list(target.shape), new=list(value.shape)), stacklevel=3)
            target.resize_(value.shape)
        _inplace._store(target, Ellipsis, value._data)
    if _dispatch.is_tensor(result):
        return out
    if name in _FILLING:
        return None
    return type(result)(*outs) if hasattr(result, "_fields") else tuple(outs)


def _out_tensors(name: str, out) -> tuple:
    if _dispatch.is_tensor(out):
        return (out,)
    if isinstance(out, (tuple, list)) and out and all(_dispatch.is_tensor(t) for t in out):
        return tuple(out)
    raise TypeError(f"{name}(): argument 'out' must be Tensor or a tuple of Tensors, not {_describe(out)}")


def _describe(out) -> str:
    if isinstance(out, (tuple, list)):
        return f"{type(out).__name__} of {len(out)} {'Tensors' if all(map(_dispatch.is_tensor, out)) else 'values'}"
    return type(out).__name__


def _requires_grad(args, kwargs) -> bool:
    for value in (*args, *kwargs.values()):
        if _dispatch.is_tensor(value):
            if value._requires_grad:
                return True
        elif isinstance(value, (tuple, list)) and any(_dispatch.is_tensor(t) and t._requires_grad for t in value):
            return True
    return False


def _check_target(value, target) -> None:
    if target.device != value.device:
        raise RuntimeError(f"Expected out tensor to have device {value.device}, but got {target.device} instead")
    _inplace.check_cast(value.dtype, target.dtype)
