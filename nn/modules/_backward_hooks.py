"""Full backward hooks of modules (``register_full_backward_hook`` / ``_pre_hook``).

Note [Module backward hooks]: a module with backward hooks wraps its tensor inputs and its
tensor outputs in two identity ``autograd.Function``s. Backward reaches the outputs' identity
first: its backward sees every ``grad_output`` at once, runs the pre hooks (which may replace
them) and keeps them. It reaches the inputs' identity last: its backward sees every
``grad_input`` at once and runs the full hooks with both (which may replace ``grad_input``).
When no input needs a gradient, the full hooks run at the outputs' identity with ``grad_input``
all None, as in PyTorch.
"""

from __future__ import annotations

import warnings

from autograd.function import Function
from tensor import Tensor


class HookState:
    """One call's bookkeeping: the module, the hooks to run (collected at forward, global ones
    first), which positional args are wrapped tensors, and the grad outputs seen so far."""

    def __init__(self, module, pre_hooks: list, full_hooks: list, n_args: int, wrapped: list[int]) -> None:
        self.module, self.pre_hooks, self.full_hooks = module, pre_hooks, full_hooks
        self.n_args, self.wrapped = n_args, wrapped
        self.grad_outputs: tuple | None = None
        self.active = True  # False when the output is not a tensor or a tuple: no hook runs

    def on_grad_outputs(self, grads: tuple) -> tuple:
        for hook in self.pre_hooks:
            result = hook(self.module, grads)
            if result is not None:
                grads = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        self.grad_outputs = grads
        if not self.wrapped:
            self.on_grad_inputs(())
        return grads

    def on_grad_inputs(self, grads: tuple) -> tuple:
        if not self.active:
            return grads
        full = [None] * self.n_args
        for position, grad in zip(self.wrapped, grads):
            full[position] = grad
        grad_input = tuple(full)
        for hook in self.full_hooks:
            result = hook(self.module, grad_input, self.grad_outputs)
            if result is not None:
                grad_input = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(grad_input) != self.n_args:
                    raise RuntimeError(
                        f"Backward hook returned an invalid number of grad_input, got "
                        f"{len(grad_input)}, but expected {self.n_args}"
                    )
        return tuple(grad_input[position] for position in self.wrapped)


class _GradTap(Function):
    """The identity on ``tensors``, whose backward hands every incoming gradient at once to
    ``on_grads`` and passes on what it returns."""

    @staticmethod
    def forward(ctx, on_grads, *tensors):
        ctx.on_grads = on_grads
        ctx.set_materialize_grads(False)  # an unused output's grad_output is None, as in PyTorch
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        return (None, *ctx.on_grads(grads))


def _tap(values, positions: list[int], on_grads) -> list:
    """``values`` as a list, with those at ``positions`` passed through one ``_GradTap``."""
    passed = _GradTap.apply(on_grads, *(values[i] for i in positions))
    result = list(values)
    for i, t in zip(positions, passed):
        result[i] = t
    return result


def wrap_inputs(module, args: tuple, pre_hooks: list, full_hooks: list) -> tuple[tuple, HookState]:
    """``args`` with the tensors that need gradients passed through the inputs' identity, whose
    backward runs ``full_hooks``; the outputs' identity will run ``pre_hooks``."""
    wrapped = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    state = HookState(module, pre_hooks, full_hooks, len(args), wrapped)
    if not wrapped:
        return args, state
    return tuple(_tap(args, wrapped, state.on_grad_inputs)), state


def wrap_outputs(output, state: HookState):
    """``output`` (a tensor or a tuple of them) passed through the outputs' identity. For another
    kind of output the hooks do not run, as in PyTorch, which warns."""
    single = isinstance(output, Tensor)
    outs = (output,) if single else output
    if not isinstance(outs, tuple):
        warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of Tensors "
                      f"but received {type(output)}", stacklevel=4)
        state.active = False
        return output
    if not any(isinstance(o, Tensor) and o.requires_grad for o in outs):
        return output
    positions = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
    result = _tap(outs, positions, state.on_grad_outputs)
    return result[0] if single else tuple(result)
