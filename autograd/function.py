"""``autograd.Function``: custom ops with a hand-written backward.

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)
"""

from __future__ import annotations

import functools
import weakref

import tensor
from tensor import _dispatch
from tensor._autograd_hooks import grad_mode
from tensor._opdef import OpDef

from .grad_mode import no_grad
from .graph import _FREED_MESSAGE, Node

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward``."""

    # Saved outputs, {position in _saved: output number}, kept as aliases without history;
    # _node is a weak reference to the node they are outputs of (see _save_outputs_weakly).
    _saved_outputs = None
    _node = None

    def __init__(self, needs_input_grad: tuple) -> None:
        self.needs_input_grad = needs_input_grad
        self._saved = ()
        self._versions = ()
        self.non_differentiable = set()
        self.dirty = set()
        self.materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors (or None) for ``backward``; they are checked against in-place changes.

        Raises:
            TypeError: for an argument that is neither a Tensor nor None, as PyTorch.
        """
        for i, t in enumerate(tensors):
            if t is not None and not _dispatch.is_tensor(t):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}")
        self._saved = tensors
        self._versions = tuple(t._version_box[0] if t is not None else None for t in tensors)

    def free_saved(self) -> None:
        """Drop the saved tensors (after a backward without ``retain_graph``): reading them again
        raises, as PyTorch; the rest of ``ctx`` stays for another backward that does not."""
        self._saved = self._versions = None

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward``.

        Raises:
            RuntimeError: if one was modified in place after it was saved, or if they were freed
                by an earlier backward (as PyTorch's "backward through the graph a second time").
        """
        if self._saved is None:
            raise RuntimeError(_FREED_MESSAGE)
        for t, version in zip(self._saved, self._versions):
            if t is not None and t._version_box[0] != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: saved tensor is at version {t._version_box[0]}; "
                    f"expected version {version} instead."
                )
        if self._saved_outputs is None:
            return self._saved
        node = self._node()
        saved = list(self._saved)
        for k, nr in self._saved_outputs.items():
            if node is not None:
                out = saved[k] = _dispatch.make(saved[k]._data, saved[k]._device, saved[k]._version_box)
                out._grad_fn, out._output_nr, out._requires_grad = node, nr, True
        return tuple(saved)

    def _save_outputs_weakly(self, outputs, node) -> None:
        """Replace saved tensors that are outputs of ``node`` by aliases without history.

        An output saved as is would close a cycle (output -> node -> ctx -> output) that
        only the cyclic collector can free (Note [Graphs and the cyclic GC] in graph.py);
        ``saved_tensors`` gives the history back, as PyTorch's SavedVariable does.
        """
        positions = {}
        saved = list(self._saved)
        for k, t in enumerate(saved):
            for nr, o in enumerate(outputs):
                if t is not None and t is o and o._grad_fn is node:
                    saved[k] = _dispatch.make(t._data, t._device, t._version_box)
                    positions[k] = nr
        if positions:
            self._saved, self._saved_outputs = tuple(saved), positions
            self._node = weakref.ref(node)

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that never get a gradient (e.g. indices)."""
        self.non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that ``forward`` modified in place and returns: the returned tensors are
        those inputs themselves, their history now ending in this function's node."""
        self.dirty.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """Whether None output gradients become zeros before ``backward`` (default True)."""
        self.materialize_grads = value


def _function_op(cls) -> OpDef:
    """The op of a node recorded by ``cls.apply``: its derivative is ``cls.backward``."""
    # A partial of the class, not a method of the op: no reference cycle through the node's op.
    backward = functools.partial(_function_backward, cls)
    # Named as PyTorch names a custom Function's nodes: "CubeBackward" for class Cube.
    return OpDef(cls.__name__, None, (), False, True, False, backward=backward, grad_fn_name=cls.__name__ + "Backward")


def _function_backward(cls, node, grads):
    ctx = node.ctx
    grads = grads if node.n_outputs > 1 else (grads,)
    if ctx.materialize_grads:
        grads = tuple(_zeros_like_output(node, i) if g is None else g for i, g in enumerate(grads))
    result = cls._backward_function()(ctx, *grads)
    if not isinstance(result, tuple):
        result = (result,)
    expected = len(node.next_fns)
    if len(result) < expected or any(r is not None for r in result[expected:]):
        raise RuntimeError(
            f"function {cls.__name__}Backward returned an incorrect number of gradients "
            f"(expected {expected}, got {len(result)})"
        )
    return result[:expected]


def _zeros_like_output(node, i):
    """Zeros for a tensor output that got no gradient; None, as in PyTorch, for a non-tensor output."""
    meta = node.params[i]
    if meta is None:
        return None
    shape, dtype, device = meta
    return tensor.zeros(shape, dtype=dtype, device=device)


def once_differentiable(backward):
    """Decorate a Function's ``backward`` that is not itself differentiable: it runs without
    recording, so its results carry no graph (a second derivative through it is zero where
    PyTorch raises)."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with no_grad():
            return backward(ctx, *grads)

    return wrapper


class Function:
    """Base class for custom differentiable ops; subclass and define ``forward`` and ``backward``
    (or ``vjp``), and optionally ``setup_context``: then ``forward`` takes no ``ctx`` and
    ``setup_context(ctx, inputs, output)`` saves what ``backward`` needs, PyTorch 2's style."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Compute the outputs from the inputs (runs without recording)."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Save what ``backward`` needs from the ``inputs`` and ``output`` of a ``forward`` that
        takes no ``ctx`` (define it to use that style)."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Return one gradient per ``forward`` input (None for non-tensors)."""
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def _backward_function(cls):
        """``backward``, or ``vjp`` where that is the one defined.

        Raises:
            RuntimeError: when both are defined, as PyTorch.
        """
        backward, vjp = cls.backward, cls.vjp
        if backward is not Function.backward and vjp is not Function.vjp:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. "
                               "You should only implement one of them.")
        return vjp if vjp is not Function.vjp else backward

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` and record a node whose derivative is ``backward``.

        Raises:
            RuntimeError: for an input marked dirty that is a leaf requiring grad.
        """
        is_tensor = _dispatch.is_tensor
        needs = tuple(is_tensor(a) and a._requires_grad for a in args)
        ctx = FunctionCtx(needs)
        with no_grad():
            if cls.setup_context is Function.setup_context:
                outputs = cls.forward(ctx, *args, **kwargs)
            else:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
        if not (grad_mode.enabled and any(needs)):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        node = Node(_function_op(cls), None, args, n_outputs=len(outs))
        node.ctx = ctx
        node.params = tuple((o.shape, o.dtype, o.device) if is_tensor(o) else None for o in outs)
        node.out_meta = tuple((o._data.shape, o._data.dtype) if is_tensor(o) else None for o in outs)
        wrapped = []
        for i, o in enumerate(outs):
            if is_tensor(o) and id(o) not in ctx.non_differentiable and (o.is_floating_point() or o.is_complex()):
                if id(o) in ctx.dirty:  # modified in place: its history is rebased on this node
                    if o._requires_grad and o._grad_fn is None:
                        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
                elif o._grad_fn is not None or o._requires_grad or any(o is a for a in args):
                    o = o.detach()
                o._grad_fn, o._output_nr, o._requires_grad = node, i, True
            wrapped.append(o)
        ctx._save_outputs_weakly(wrapped, node)
        return wrapped[0] if single else tuple(wrapped)
