"""``tensor.func``'s derivative transforms, as ``torch.func``: ``grad``, ``grad_and_value``,
``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``, ``hessian``, ``functional_call`` and
``stack_module_state``.

Note [Transforms on the tape]
-----------------------------
torch.func runs these as functorch levels; here each transform runs the function under
``enable_grad`` on fresh leaves and asks ``autograd.grad`` for the derivative (autograd is
imported on first use, through ``tensor._autograd_hooks.api``, as for ``Tensor.backward``). An
argument that already requires grad is taken as a view instead (``view_as``). When the output's
history reaches a tensor that requires grad other than the fresh leaves (such an argument, or
one the function captures, like a module's parameters in ``grad(lambda x: model(x).sum())``),
and grad mode is on at the call, the derivative is built with ``create_graph=True``, and each
result whose history reaches such a tensor is kept attached (the others are detached). So
transforms nest (``jacrev(jacrev(f))``, ``grad(grad(f))``) and a result stays differentiable with
respect to the caller's tensors, as torch's are. Forward-mode transforms (``jvp``, ``jacfwd``)
use the double-backward trick or the reverse-mode Jacobian: the same values (and zeros for an
integer or bool output, as forward mode gives). Composed with ``vmap`` (which loops, Note [vmap
by looping]) they give per-sample gradients. Arguments at ``argnums`` may be trees (tuples,
namedtuples, lists, dicts) of tensors; the derivatives come back in the same shape. An output
independent of an input gives zeros, as in torch.func.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from . import _dispatch, _dtype, _pytree
from ._autograd_hooks import api as _api
from ._autograd_hooks import grad_mode
from ._creation import zeros, zeros_like
from .ops.join_split import stack

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian", "functional_call",
           "stack_module_state"]


def _argnums(argnums, n_args: int, fn_name: str) -> tuple[int, ...]:
    """``argnums`` as a tuple of non-negative positions; raises as torch.func does."""
    positions = (argnums,) if isinstance(argnums, int) else argnums
    if not isinstance(positions, tuple) or not positions or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in positions):
        raise RuntimeError(f"{fn_name}: argnums must be int or Tuple[int, ...], got: {argnums!r}")
    for p in positions:
        if not -n_args <= p < n_args:
            raise RuntimeError(f"Got argnums={p}, but only {n_args} positional inputs")
    return tuple(p % n_args for p in positions)


def _differentiable(tree, fn_name: str):
    """``(tree of fresh tensors to differentiate at, its leaves)``: a view of an argument that
    requires grad, a new leaf for one that does not."""
    leaves = _pytree.leaves(tree)
    for leaf in leaves:
        if not _dispatch.is_tensor(leaf):
            raise ValueError(f"{fn_name}: expected the differentiated arguments to be Tensors (or trees of "
                             f"them), but got {type(leaf).__name__}")
        if not _is_differentiable(leaf):
            raise RuntimeError(f"{fn_name}: only Tensors of floating point dtype can be differentiated, got "
                               f"{leaf.dtype}")
    fresh = [leaf.view_as(leaf) if leaf.requires_grad else leaf.detach().requires_grad_() for leaf in leaves]
    return _pytree.rebuild(tree, iter(fresh)), fresh


def _is_differentiable(t) -> bool:
    return t.is_floating_point() or t.is_complex()


def _call_at(func, args: tuple, kwargs: dict, argnums, has_aux: bool, fn_name: str):
    """Call ``func`` with fresh tensors in place of the arguments at ``argnums`` (under
    ``enable_grad``, which the caller holds): ``(those arguments' tree, its leaves, the output, aux)``."""
    positions = _argnums(argnums, len(args), fn_name)
    args = list(args)
    picked, fresh = _differentiable(tuple(args[p] for p in positions), fn_name)
    for p, value in zip(positions, picked):
        args[p] = value
    output, aux = _split_aux(func(*args, **kwargs), has_aux, fn_name)
    return picked, fresh, output, aux


def _reaches_outside(tensors: list, own: set) -> bool:
    """Whether the recorded history of one of ``tensors`` reaches a tensor that requires grad
    other than the transform's fresh leaves (ids in ``own``): an argument that requires grad, or
    a captured one such as a module's parameter. Results must then stay differentiable for the
    caller (Note [Transforms on the tape])."""
    nodes = []
    for t in tensors:
        if _dispatch.is_tensor(t) and t.requires_grad:
            if t.grad_fn is None and id(t) not in own:
                return True
            nodes.append(t.grad_fn)
    seen = set()
    while nodes:
        for target in nodes.pop().next_fns:
            if target is None or id(target) in seen:
                continue
            if _dispatch.is_tensor(target):  # a leaf
                if id(target) not in own:
                    return True
                continue
            seen.add(id(target))
            nodes.append(target)
    return False


def _kept(tree, own: set, outer: bool):
    """``tree`` with each tensor detached, except (when ``outer``) one whose history reaches
    outside the fresh leaves ``own`` (``_reaches_outside``)."""
    def keep(x):
        if not _dispatch.is_tensor(x) or outer and _reaches_outside([x], own):
            return x
        return x.detach()

    return _pytree.rebuild(tree, iter([keep(x) for x in _pytree.leaves(tree)]))


def _gradients(outputs: list, inputs: list, grad_outputs, create_graph: bool) -> list:
    """``autograd.grad`` of the outputs that require grad; zeros for an input none depends on."""
    grad_outputs = [None] * len(outputs) if grad_outputs is None else grad_outputs
    pairs = [(out, g) for out, g in zip(outputs, grad_outputs) if out.requires_grad]
    found = [None] * len(inputs)
    if pairs:
        outs, gs = zip(*pairs)
        found = _api.grad(outs, inputs, gs, retain_graph=True, create_graph=create_graph, allow_unused=True)
    return [zeros_like(x) if g is None else g for g, x in zip(found, inputs)]


def _split_aux(result, has_aux: bool, fn_name: str):
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(f"{fn_name}(f, ...)(*args): output of function f should be a tuple: (output, aux) if "
                           "has_aux is True")
    return result


def _check_tensors(outputs: list, call: str) -> None:
    for out in outputs:
        if not _dispatch.is_tensor(out):
            raise RuntimeError(f"{call}: expected f(*primals) to return only tensors, got unsupported type {type(out)}")


def _check_reverse_outputs(outputs: list) -> None:
    """Raise as torch.func's reverse mode for outputs that are not floating-point Tensors."""
    _check_tensors(outputs, "vjp(f, *primals)")
    for out in outputs:
        if not _is_differentiable(out):
            raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got "
                               f"Tensor with dtype {out.dtype}")


def _check_real(outputs: list, fn_name: str) -> None:
    for index, out in enumerate(outputs):
        if out.is_complex():
            raise RuntimeError(f"{fn_name}: Expected all outputs to be real but received complex tensor at "
                               f"flattened input idx: {index}")


def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """``func`` made to return ``(gradient, value)``: the gradient of its scalar output with respect
    to the arguments at ``argnums`` (Note [Transforms on the tape]); with ``has_aux``, ``func``
    returns ``(output, aux)`` and the value is ``(output, aux)``.

    The returned function raises RuntimeError when ``func``'s output is not a real scalar Tensor,
    for bad ``argnums``, or for a differentiated argument that is not floating point.
    """

    @functools.wraps(func)
    def run(*args, **kwargs):
        recording = grad_mode.enabled
        with _api.enable_grad():
            picked, fresh, output, aux = _call_at(func, args, kwargs, argnums, has_aux, "grad_and_value")
            _check_scalar(output)
            own = {id(x) for x in fresh}
            outer = recording and _reaches_outside([output], own)
            grads = _gradients([output], fresh, None, create_graph=outer)
        grads = _kept(_pytree.rebuild(picked, iter(grads)), own, outer)
        grads = grads[0] if isinstance(argnums, int) else grads
        value = output if outer else output.detach()
        return grads, ((value, _kept(aux, own, recording)) if has_aux else value)

    return run


def _check_scalar(output) -> None:
    if not _dispatch.is_tensor(output):
        raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}")
    if output.dim() != 0:
        raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with "
                           f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
    if output.is_complex():
        raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {output.dtype}")


def grad(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """``func`` made to return the gradient of its scalar output with respect to the arguments at
    ``argnums`` (``(gradient, aux)`` with ``has_aux``). Raises as ``grad_and_value``."""
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def run(*args, **kwargs):
        grads, value = both(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return run


def vjp(func: Callable, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` returns the vector-Jacobian product with
    respect to each primal, as a tuple; it may be called more than once.

    Raises:
        RuntimeError: when ``func`` returns something other than floating-point Tensors, and from
            ``vjp_fn`` when the cotangents do not have the outputs' structure and shapes.
    """
    recording = grad_mode.enabled
    with _api.enable_grad():
        picked, fresh = _differentiable(primals, "vjp")
        output, aux = _split_aux(func(*picked), has_aux, "vjp")
    outputs = _pytree.leaves(output)
    _check_reverse_outputs(outputs)
    own = {id(x) for x in fresh}
    outer = recording and _reaches_outside(outputs, own)

    def vjp_fn(cotangents):
        given = _pytree.leaves(cotangents)
        if len(given) != len(outputs):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function: {len(outputs)} leaves, got {len(given)}")
        for out, cot in zip(outputs, given):
            if tuple(out.shape) != tuple(cot.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output has a shape of {tuple(cot.shape)} and output "
                                   f"has a shape of {tuple(out.shape)}.")
        create_graph = grad_mode.enabled and (outer or any(c.requires_grad for c in given))
        with _api.enable_grad():
            grads = _gradients(outputs, fresh, given, create_graph=create_graph)
        return _kept(_pytree.rebuild(tuple(picked), iter(grads)), own, create_graph)

    result = _kept(output, own, outer)
    return (result, vjp_fn, _kept(aux, own, recording)) if has_aux else (result, vjp_fn)


def jvp(func: Callable, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J tangents)``: the Jacobian-vector product, by the double-backward trick
    (Note [Transforms on the tape]), in the dtype of the output and tangents promoted, as forward
    mode gives it; zeros for an integer or bool output. ``strict`` is accepted; it raises nothing here.

    Raises:
        RuntimeError: when ``primals`` or ``tangents`` is not a tuple, their structure or shapes
            differ, or ``func`` returns something other than Tensors.
        ValueError: for a primal that is not floating point or complex.
    """
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples")
    if len(_pytree.leaves(primals)) != len(_pytree.leaves(tangents)):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python structure")
    for p, t in zip(_pytree.leaves(primals), _pytree.leaves(tangents)):
        if _dispatch.is_tensor(p) and not _is_differentiable(p):
            raise ValueError(f"Expected primal to be floating point or complex, but got: {p.dtype}")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same shape, "
                               f"got {tuple(p.shape)} and {tuple(t.shape)}")
    recording = grad_mode.enabled
    with _api.enable_grad():
        picked, fresh = _differentiable(primals, "jvp")
        output, aux = _split_aux(func(*picked), has_aux, "jvp")
        outputs = _pytree.leaves(output)
        _check_tensors(outputs, "jvp(f, primals, tangents)")
        own = {id(x) for x in fresh}
        outer = recording and (_reaches_outside(outputs, own) or any(t.requires_grad for t in _pytree.leaves(tangents)))
        products = _forward_products(outputs, fresh, _pytree.leaves(tangents), outer)
    products = _in_tangent_dtype(products, primals, tangents)
    result = (_kept(output, own, outer), _kept(_pytree.rebuild(output, iter(products)), own, outer))
    return (*result, _kept(aux, own, recording)) if has_aux else result


def _forward_products(outputs: list, fresh: list, tangents: list, create_graph: bool) -> list:
    """``J tangents`` for each output (zeros of an integer or bool output's dtype), by the
    double-backward trick: the VJP with a cotangent leaf, then its VJP with the tangents."""
    floating = [out for out in outputs if _is_differentiable(out)]
    cotangents = [zeros_like(out, requires_grad=True) for out in floating]
    vjps = _gradients(floating, fresh, cotangents, create_graph=True)
    products = iter(_gradients(vjps, cotangents, tangents, create_graph=create_graph))
    return [next(products) if _is_differentiable(out) else zeros_like(out) for out in outputs]


def _in_tangent_dtype(products: list, primals, tangents) -> list:
    """The floating products promoted to wider tangent dtypes than their primals' (a float64
    tangent for a float32 primal gives a float64 product in forward mode)."""
    wider = [t.dtype for p, t in zip(_pytree.leaves(primals), _pytree.leaves(tangents)) if t.dtype is not p.dtype]
    if not wider:
        return products
    return [g.to(functools.reduce(_dtype.promote_types, wider, g.dtype)) if _is_differentiable(g) else g
            for g in products]


def linearize(func: Callable, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is ``jvp(func, primals, tangents)[1]``, the
    Jacobian-vector product at ``primals`` (``func`` runs again on each call here; torch traces it
    once).

    The returned ``jvp_fn`` raises RuntimeError for tangents whose structure, shapes, devices or
    dtypes differ from the primals'.
    """
    output = func(*primals)
    flat_primals = _pytree.leaves(primals)

    def jvp_fn(*tangents):
        if _structure(tangents) != _structure(primals):
            raise RuntimeError(f"Expected the tangents {_structure(tangents)} to have the same argspec as the primals "
                               f"{_structure(primals)}")
        for index, (p, t) in enumerate(zip(flat_primals, _pytree.leaves(tangents))):
            for what in ("shape", "device", "dtype"):
                if getattr(t, what) != getattr(p, what):
                    raise RuntimeError(f"tangent:{index} with {what} {getattr(t, what)} in flattened pytree doesn't "
                                       f"match the {what} {getattr(p, what)} of the corresponding primal.")
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn


def _structure(tree):
    """``tree`` with every leaf replaced by ``"*"``: equal for trees of the same shape."""
    return _pytree.rebuild(tree, iter(["*"] * len(_pytree.leaves(tree))))


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False, chunk_size: int | None = None) -> Callable:
    """``func`` made to return its Jacobian with respect to the arguments at ``argnums``, by one
    backward pass per output element: for each output leaf, a tree shaped as the arguments whose
    leaves have shape ``output.shape + argument.shape``. ``chunk_size`` is accepted; the passes run
    one at a time anyway.

    Raises:
        ValueError: for a ``chunk_size`` that is not None or a positive int.
        RuntimeError: for bad ``argnums``, a differentiated argument that is not floating point, or
            an output that is not a real floating-point Tensor.
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"jacrev: `chunk_size` should be greater than 0, got {chunk_size!r}")
    return _jacobian(func, argnums, has_aux, "jacrev")


def _jacobian(func: Callable, argnums, has_aux: bool, fn_name: str) -> Callable:
    """``jacrev``/``jacfwd`` (``fn_name``): the same values; jacfwd, as forward mode, also takes
    integer and bool outputs (zero blocks of their dtype)."""

    @functools.wraps(func)
    def run(*args):
        recording = grad_mode.enabled
        with _api.enable_grad():
            picked, fresh, output, aux = _call_at(func, args, {}, argnums, has_aux, fn_name)
            outputs = _pytree.leaves(output)
            if fn_name == "jacfwd":
                _check_tensors(outputs, "jvp(f, primals, tangents)")
            else:
                _check_reverse_outputs(outputs)
            _check_real(outputs, fn_name)
            own = {id(x) for x in fresh}
            outer = recording and _reaches_outside(outputs, own)
            blocks = [_jacobian_blocks(out, fresh, outer) for out in outputs]
        per_output = [_kept(_pytree.rebuild(picked, iter(b)), own, outer) for b in blocks]
        per_output = [b[0] if isinstance(argnums, int) else b for b in per_output]
        jac = _pytree.rebuild(output, iter(per_output))
        return (jac, _kept(aux, own, recording)) if has_aux else jac

    return run


def _jacobian_blocks(out, inputs: list, create_graph: bool) -> list:
    """The Jacobian of ``out`` with respect to each input: ``out.shape + input.shape`` each (zeros
    of ``out``'s dtype for an integer or bool ``out``)."""
    if not _is_differentiable(out):
        return [zeros(tuple(out.shape) + tuple(x.shape), dtype=out.dtype, device=x.device) for x in inputs]
    rows = [_gradients([element], inputs, None, create_graph) for element in out.reshape(-1)]
    if not rows:
        return [zeros(tuple(out.shape) + tuple(x.shape), dtype=x.dtype, device=x.device) for x in inputs]
    return [stack([row[j] for row in rows]).reshape(tuple(out.shape) + tuple(x.shape)) for j, x in enumerate(inputs)]


def jacfwd(func: Callable, argnums=0, has_aux: bool = False, *, randomness: str = "error") -> Callable:
    """``jacrev``'s Jacobian (the same values; torch computes it by forward mode), and zeros for an
    integer or bool output, as forward mode gives. ``randomness`` is checked and accepted.
    Raises as ``jacrev``, and ValueError for an unknown ``randomness``."""
    if randomness not in ("error", "different", "same"):
        raise ValueError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    return _jacobian(func, argnums, has_aux, "jacfwd")


def hessian(func: Callable, argnums=0) -> Callable:
    """``func`` made to return the Hessian of its output with respect to the arguments at ``argnums``
    (the Jacobian of the Jacobian). Raises as ``jacrev``."""
    return jacfwd(jacrev(func, argnums), argnums)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """Call ``module`` with the parameters and buffers named in ``parameter_and_buffer_dicts`` (a
    dict, or a tuple of dicts) in place of its own, which are restored afterwards.

    Raises:
        ValueError: when the dicts name a key twice, or (with ``tie_weights``) give different
            tensors for names of one tied parameter or buffer.
        RuntimeError: with ``strict``, when they miss a parameter or buffer (a tied one counts as
            given with ``tie_weights``) or name one the module does not have.
        AttributeError: for a name with no submodule on its path.
    """
    dicts = (parameter_and_buffer_dicts,) if isinstance(parameter_and_buffer_dicts, dict) else \
        tuple(parameter_and_buffer_dicts)
    replacements: dict = {}
    for d in dicts:
        twice = replacements.keys() & d.keys()
        if twice:
            raise ValueError(f"{sorted(twice)} appeared in multiple dictionaries; behavior of functional call is "
                             "ambiguous")
        replacements.update(d)
    if tie_weights:
        replacements = _tied(module, replacements)
    if strict:
        _check_names(module, replacements)
    args = () if args is None else (args if isinstance(args, tuple) else (args,))
    restores = []
    try:
        for name, value in replacements.items():
            restores.append(_swap(module, name, value))
        return module(*args, **(kwargs or {}))
    finally:
        for restore in reversed(restores):
            restore()


def _named_tensors(module) -> list:
    return [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]


def _check_names(module, replacements: dict) -> None:
    own = {name for name, _ in _named_tensors(module)}
    problems = []
    for what, names in (("Missing", own - replacements.keys()), ("Unexpected", replacements.keys() - own)):
        if names:
            problems.append(f"\t{what} key(s): {', '.join(repr(n) for n in sorted(names))}.")
    if problems:
        raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n" + "\n".join(problems))


def _tied(module, replacements: dict) -> dict:
    """``replacements`` plus every other name of a replaced parameter or buffer that is the same
    tensor (a tied weight), given the replacement of that tensor.

    Raises:
        ValueError: when names of one tied tensor are given different tensors, as PyTorch.
    """
    names_of: dict = {}
    for name, t in _named_tensors(module):
        names_of.setdefault(id(t), []).append(name)
    tied = dict(replacements)
    for names in names_of.values():
        given = [n for n in names if n in replacements]
        if not given:
            continue
        if len({id(replacements[n]) for n in given}) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                             "Consider using tie_weights=False")
        for name in names:
            tied[name] = replacements[given[0]]
    return tied


def _swap(module, name: str, value):
    """Put ``value`` at the dotted ``name``; returns the function that puts back what was there.
    A parametrized tensor (``nn.utils.parametrize``) is assigned as torch does, through its
    parametrizations' ``right_inverse``, and its originals' values come back afterwards."""
    *path, key = name.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part)
    for store in (owner._parameters, owner._buffers):
        if key in store:
            old, store[key] = store[key], value
            return functools.partial(store.__setitem__, key, old)
    parametrization = _parametrization_of(owner, key)
    if parametrization is not None:
        originals = [(p, p.detach().clone()) for p in parametrization._parameters.values()]
        setattr(owner, key, value)
        return functools.partial(_copy_back, originals)
    object.__setattr__(owner, key, value)  # a name the module does not have: removed afterwards
    return functools.partial(delattr, owner, key)


def _parametrization_of(owner, key: str):
    """The ``ParametrizationList`` of ``owner``'s parametrized tensor ``key``, or None (read from
    the module's children: this layer does not import nn)."""
    parametrizations = owner._modules.get("parametrizations")
    return None if parametrizations is None else parametrizations._modules.get(key)


def _copy_back(originals) -> None:
    with _api.no_grad():
        for original, value in originals:
            original.copy_(value)


def stack_module_state(models) -> tuple[dict, dict]:
    """``(params, buffers)``: each parameter and buffer of the same-class ``models`` stacked along a new
    first dim, by name, for ``vmap`` over ``functional_call`` (model ensembling). Stacked
    parameters are new leaves that require grad when the models' do.

    Raises:
        RuntimeError: for no models, models of different classes or training modes, or a parameter
            that requires grad in some models only.
    """
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if len({type(m) for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    per_model = [(dict(m.named_parameters()), dict(m.named_buffers())) for m in models]
    params, buffers = ({name: _stacked_leaf([state[kind][name] for state in per_model], name) for name in
                        per_model[0][kind]} for kind in (0, 1))
    return params, buffers


def _stacked_leaf(tensors: list, name: str):
    requires_grad = {t.requires_grad for t in tensors}
    if len(requires_grad) > 1:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    stacked = stack(tensors)
    return stacked.detach().requires_grad_() if True in requires_grad else stacked
