"""``autograd.functional``: derivatives of whole functions, PyTorch's ``torch.autograd.functional``.

``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``vhp`` and ``hvp`` take a function of tensors and
the point to differentiate it at, and build the derivative from ``autograd.grad``:

* the inputs are detached copies that require grad (or, with ``create_graph=True``, views that
  keep the caller's graph), so the caller's tensors and their ``.grad`` are left alone;
* an output that does not depend on an input gives zeros, or, with ``strict=True``, a
  RuntimeError naming the input;
* forward-mode products (``jvp``, ``hvp``) use the double-backward trick, as PyTorch does without
  forward AD: the vector-Jacobian product taken with respect to a zero cotangent that requires
  grad is linear in it, and its gradient is the Jacobian-vector product;
* ``jacobian`` runs one backward pass per output element. ``vectorize=True`` is accepted and
  gives the same values by the same loop (PyTorch batches the passes with vmap).

Differences from PyTorch: a ``strategy`` or ``outer_jacobian_strategy`` other than the two
names raises ValueError, where PyTorch raises AssertionError.
"""

from __future__ import annotations

from collections.abc import Callable

import tensor
from tensor import Tensor

from .engine import grad as _grad
from .grad_mode import enable_grad, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]

_STRATEGIES = ("forward-mode", "reverse-mode")


def _as_tuple(value, what: str, fn_name: str) -> tuple[bool, tuple]:
    """``(was a tuple, the tensors as a tuple)``; raises TypeError for anything else, as PyTorch."""
    if isinstance(value, tuple):
        for i, el in enumerate(value):
            if not tensor.is_tensor(el):
                raise TypeError(f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                                f"the value at index {i} has type {type(el)}.")
        return True, value
    if not tensor.is_tensor(value):
        raise TypeError(f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors but the "
                        f"given {what} has type {type(value)}.")
    return False, (value,)


def _untuple(value, was_tuple):
    """Undo ``_as_tuple``: ``was_tuple`` is one flag, or (outer, inner) for a nested result."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        value = value if inner else tuple(el[0] for el in value)
        return value if outer else value[0]
    return value if was_tuple else value[0]


def _prepare(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh leaves to differentiate at; with ``create_graph``, views keeping the caller's graph."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
                 for t in inputs)


def _finish(value, create_graph: bool):
    """The results detached unless the caller asked for a graph through them."""
    if isinstance(value, tuple):
        return tuple(_finish(el, create_graph) for el in value)
    return value if create_graph or value is None else value.detach()


def _check_v(v: tuple, like: tuple, was_tuple: bool) -> None:
    if len(v) != len(like):
        if was_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (el_v, el) in enumerate(zip(v, like)):
        if el_v.shape != el.shape:
            where = f"Entry {i} in " if was_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {list(el.shape)} but got {list(el_v.shape)}.")


def _vector(v, like: tuple, like_was_tuple: bool, fn_name: str, create_graph: bool, of_what: str):
    """``v`` as a validated tuple, or None where ``like`` is one single-element tensor."""
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _prepare(v, create_graph, need_graph=False)
        _check_v(v, like, like_was_tuple)
        return v
    if len(like) != 1 or like[0].numel() != 1:
        raise RuntimeError(f"The vector v can only be None if {of_what} a single Tensor with a single element.")
    return None


def _inputs(inputs, fn_name: str, create_graph: bool) -> tuple[bool, tuple]:
    """``(was a tuple, the leaves to differentiate at)``."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    return inputs_tuple, _prepare(inputs, create_graph, need_graph=True)


def _outputs(func, inputs: tuple, fn_name: str, strict: bool) -> tuple[bool, tuple]:
    """``(was a tuple, func's outputs)``, checked to depend on the inputs in strict mode."""
    outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
    _require_grad(outputs, "outputs", strict)
    return outputs_tuple, outputs


def _require_grad(values: tuple, kind: str, strict: bool) -> None:
    """In strict mode, raise where a value that must depend on the inputs does not."""
    if not strict:
        return
    for i, value in enumerate(values):
        if value is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. "
                               "This is not allowed in strict mode.")
        if not value.requires_grad:
            raise RuntimeError({
                "outputs": f"Output {i} of the user-provided function does not require gradients. The outputs "
                           "must be computed in a differentiable manner from the input when running in strict mode.",
                "jacobian": "While computing the hessian, found that the jacobian of the user-provided function "
                            f"with respect to input {i} is independent of the input. This is not allowed in strict "
                            "mode. You should ensure that your function is twice differentiable.",
                "grad_inputs": f"The gradient with respect to input {i} is independent of the inputs of the "
                               "user-provided function. This is not allowed in strict mode.",
            }[kind])


def _grads(outputs: tuple, inputs: tuple, grad_outputs, create_graph: bool, retain_graph=None) -> tuple:
    """``autograd.grad`` over the outputs that require grad (None per input where none does)."""
    grad_outputs = (None,) * len(outputs) if grad_outputs is None else grad_outputs
    pairs = [(out, g) for out, g in zip(outputs, grad_outputs) if out is not None and out.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    outs, gs = zip(*pairs)
    return tuple(_grad(outs, inputs, gs, retain_graph=retain_graph, create_graph=create_graph, allow_unused=True))


def _zeros_for_none(grads: tuple, like: tuple, strict: bool, create_graph: bool, subject: str) -> tuple:
    """Each missing gradient as zeros shaped like ``like[i]``; in strict mode a RuntimeError instead
    (``subject`` names what would be independent of the input), and with ``create_graph`` also for
    a gradient that does not require grad."""
    out = []
    for i, (g, ref) in enumerate(zip(grads, like)):
        if g is None or (strict and create_graph and not g.requires_grad):
            if strict:
                when = " when create_graph=True" if g is not None else ""
                raise RuntimeError(f"{subject} is independent of input {i}. This is not allowed in strict mode{when}.")
            g = tensor.zeros_like(ref)
        out.append(g)
    return tuple(out)


def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product of ``func`` at ``inputs``.

    Raises:
        TypeError: if ``inputs``, ``v`` or the outputs are not a Tensor or a tuple of Tensors.
        RuntimeError: if ``v`` is None while the output is not a single element, if ``v`` does not
            match the outputs' shapes, or (``strict``) if an output is independent of an input.
    """
    with enable_grad():
        inputs_tuple, inputs = _inputs(inputs, "vjp", create_graph)
        outputs_tuple, outputs = _outputs(func, inputs, "vjp", strict)
        v = _vector(v, outputs, outputs_tuple, "vjp", create_graph, "the user-provided function returns")
    with set_grad_enabled(create_graph or tensor.is_grad_enabled()):
        grads = _grads(outputs, inputs, v, create_graph)
        result = _zeros_for_none(grads, inputs, strict, create_graph, "The output of the user-provided function")
    return (_untuple(_finish(outputs, create_graph), outputs_tuple),
            _untuple(_finish(result, create_graph), inputs_tuple))


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)``: the Jacobian-vector product of ``func`` at ``inputs``, by the
    double-backward trick.

    Raises:
        TypeError: if ``inputs``, ``v`` or the outputs are not a Tensor or a tuple of Tensors.
        RuntimeError: if ``v`` is None while the input is not a single element, if ``v`` does not
            match the inputs' shapes, or (``strict``) if an output is independent of the inputs.
    """
    with enable_grad():
        inputs_tuple, inputs = _inputs(inputs, "jvp", create_graph)
        v = _vector(v, inputs, inputs_tuple, "jvp", create_graph, "the input to the user-provided function is")
        outputs_tuple, outputs = _outputs(func, inputs, "jvp", strict)
        cotangents = tuple(tensor.zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _grads(outputs, inputs, cotangents, create_graph=True)
        _require_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(create_graph or tensor.is_grad_enabled()):
        grads = _grads(grad_inputs, cotangents, v, create_graph)
        result = _zeros_for_none(grads, outputs, strict, create_graph, "The output of the user-provided function")
    return (_untuple(_finish(outputs, create_graph), outputs_tuple),
            _untuple(_finish(result, create_graph), outputs_tuple))


def jacobian(func: Callable, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output ``i`` and input ``j``, a tensor of shape
    ``outputs[i].shape + inputs[j].shape``, nested in tuples as the outputs and inputs are.

    Raises:
        ValueError: for a ``strategy`` other than ``"reverse-mode"`` or ``"forward-mode"``.
        NotImplementedError: for ``"forward-mode"`` without ``vectorize`` or with ``create_graph``,
            as PyTorch.
        TypeError: if ``inputs`` or the outputs are not a Tensor or a tuple of Tensors.
        RuntimeError: (``strict``) if an output is independent of an input, or with ``vectorize``
            or ``"forward-mode"``, which PyTorch does not take with ``strict`` either.
    """
    if strategy not in _STRATEGIES:
        raise ValueError(f'Expected strategy to be either "forward-mode" or "reverse-mode", but got {strategy!r}.')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('jacobian: `create_graph=True` and `strategy="forward-mode"` are not supported '
                                      'together. Please either set `create_graph=False` or `strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                                      "implemented for `vectorize=True`.")
    if strict and vectorize:
        raise RuntimeError("jacobian: `strict=True` and `vectorize=True` are not supported together. Please either "
                           "set `strict=False` or `vectorize=False`.")
    with enable_grad():
        inputs_tuple, inputs = _inputs(inputs, "jacobian", create_graph)
        outputs_tuple, outputs = _outputs(func, inputs, "jacobian", strict)
        rows = [_jacobian_of_output(i, out, inputs, create_graph, strict) for i, out in enumerate(outputs)]
    return _untuple(_finish(tuple(rows), create_graph), (outputs_tuple, inputs_tuple))


def _jacobian_of_output(i: int, out: Tensor, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    """Output ``i``'s Jacobian with respect to each input: one backward pass per element of ``out``."""
    per_input = [[] for _ in inputs]
    flat = out.reshape(-1)
    for k in range(out.numel()):
        grads = _grads((flat[k],), inputs, None, create_graph, retain_graph=True)
        grads = _zeros_for_none(grads, inputs, strict, create_graph, f"Output {i} of the user-provided function")
        for j, g in enumerate(grads):
            per_input[j].append(g)
    return tuple(tensor.stack(gs).reshape(tuple(out.shape) + tuple(inp.shape)) if gs
                 else tensor.zeros(tuple(out.shape) + tuple(inp.shape), dtype=inp.dtype, device=inp.device)
                 for gs, inp in zip(per_input, inputs))


def _check_scalar(out, fn_name: str, strict: bool) -> None:
    """Raise unless ``out``, what ``func`` returned, is one single-element Tensor."""
    out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", fn_name)
    _require_grad(outs, "outputs", strict)
    if out_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if out.numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")


def hessian(func: Callable, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs``: for inputs ``i`` and ``j``, a tensor
    of shape ``inputs[i].shape + inputs[j].shape`` (the Jacobian of its gradient).

    Raises:
        ValueError: for an ``outer_jacobian_strategy`` other than the two names.
        TypeError: if ``inputs`` is not a Tensor or a tuple of Tensors.
        RuntimeError: if ``func`` does not return one single-element Tensor, or (``strict``) if
            the gradient or the Hessian is independent of an input.
    """
    if outer_jacobian_strategy not in _STRATEGIES:
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode", but got '
                         f"{outer_jacobian_strategy!r}.")
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def scalar(*inputs):
        out = func(*inputs)
        _check_scalar(out, "hessian", strict)
        return out.reshape(())

    def gradient(*inputs):
        jac = jacobian(scalar, inputs, create_graph=True)
        _require_grad(jac, "jacobian", strict)
        return jac

    result = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                      strategy=outer_jacobian_strategy)
    return _untuple(result, (inputs_tuple, inputs_tuple))


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)``: the vector-Hessian product of the scalar function ``func``.

    Raises:
        TypeError: if ``inputs`` or ``v`` is not a Tensor or a tuple of Tensors.
        RuntimeError: if ``func`` does not return one single-element Tensor, if ``v`` is None while
            the input is not a single element or does not match the inputs' shapes, or (``strict``)
            if the gradient or the Hessian is independent of an input.
    """
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)``: the Hessian-vector product of the scalar function ``func``. The
    Hessian of a twice continuously differentiable function is symmetric, so this is ``vhp``'s
    product, computed the same way (PyTorch uses the double-backward trick, which costs more).

    Raises:
        As ``vhp``.
    """
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


def _hessian_product(func, inputs, v, create_graph: bool, strict: bool, fn_name: str):
    with enable_grad():
        inputs_tuple, inputs = _inputs(inputs, fn_name, create_graph)
        v = _vector(v, inputs, inputs_tuple, fn_name, create_graph, "the input to the user-provided function is")
        out = func(*inputs)
        _check_scalar(out, fn_name, strict)
        jac = _grads((out,), inputs, None, create_graph=True)
        _require_grad(jac, "jacobian", strict)
    with set_grad_enabled(create_graph or tensor.is_grad_enabled()):
        grads = _grads(jac, inputs, v, create_graph)
        result = _zeros_for_none(grads, inputs, strict, create_graph, "The hessian of the user-provided function")
    return _finish(out, create_graph), _untuple(_finish(result, create_graph), inputs_tuple)
