"""The parts of ``torch.autograd.graph``'s API built on ``autograd/graph.py``'s recording:
saved-tensor hooks (``saved_tensors_hooks``, ``save_on_cpu``, ``disable_saved_tensors_hooks``;
Note [Saved tensors hooks] there), ``GradientEdge``/``get_gradient_edge``, ``increment_version``
and ``register_multi_grad_hook``. Re-exported by ``autograd.graph``."""

from __future__ import annotations

import contextlib
from collections import namedtuple
from collections.abc import Callable
from typing import Any

from tensor import Tensor

from ._callbacks import queue_callback
from .graph import _function_of, _saved_hooks, pop_saved_hooks, push_saved_hooks, register_hook

__all__ = [
    "GradientEdge", "disable_saved_tensors_hooks", "get_gradient_edge", "increment_version",
    "register_multi_grad_hook", "save_on_cpu", "saved_tensors_hooks",
]


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Context manager under which the tensors that recorded ops save for backward are stored as
    ``pack_hook(tensor)``, and given back to backward as ``unpack_hook(packed)`` (Note [Saved
    tensors hooks]). Nested, the innermost pair applies. Per thread.

    >>> import tensor, autograd
    >>> x = tensor.ones(2, requires_grad=True)
    >>> with autograd.graph.saved_tensors_hooks(lambda t: t.detach() * 1, lambda t: t):
    ...     y = (x * x).sum()
    >>> y.backward(); x.grad.tolist()
    [2.0, 2.0]

    Raises:
        RuntimeError: on entering, inside ``disable_saved_tensors_hooks`` (its message).
    """

    def __init__(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        push_saved_hooks(self.pack_hook, self.unpack_hook)

    def __exit__(self, *exc) -> None:
        pop_saved_hooks()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    """``saved_tensors_hooks`` that keep saved tensors in host memory (pinned with ``pin_memory``)
    and move them back to their device for backward: no copy for tensors already on the CPU."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(t: Tensor) -> tuple:
            host = t.cpu()
            if pin_memory and host is not t:
                host = host.pin_memory()
            return t.device, host

        def unpack_from_cpu(packed: tuple) -> Tensor:
            device, host = packed
            return host.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Context manager (and decorator) under which entering ``saved_tensors_hooks`` raises
    RuntimeError(``error_message``), as PyTorch's.

    Raises:
        RuntimeError: ``error_message``, when saved-tensor hooks are already active in this thread.
    """
    if _saved_hooks.stack:
        raise RuntimeError(error_message)
    previous = _saved_hooks.disabled
    _saved_hooks.disabled = error_message
    try:
        yield
    finally:
        _saved_hooks.disabled = previous


# PyTorch's GradientEdge is a NamedTuple of these fields.
GradientEdge = namedtuple("GradientEdge", ("node", "output_nr", "ownership_token"), defaults=(None,))
GradientEdge.__doc__ = "Where the gradient of a tensor is computed: a node and its output number (PyTorch's)."


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The ``GradientEdge`` of ``tensor``: its ``grad_fn`` and output number, or its
    ``AccumulateGrad`` for a leaf.

    Raises:
        RuntimeError: if ``tensor`` does not require grad.
    """
    if not tensor._requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    if tensor._grad_fn is None:
        return GradientEdge(_function_of(tensor), 0)
    return GradientEdge(tensor._grad_fn, tensor._output_nr)


def increment_version(tensor) -> None:
    """Record an in-place change that autograd cannot see (a tensor or an iterable of them): a
    saved tensor so changed makes backward raise."""
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._version_box[0] += 1


class _MultiHandle:
    """The handle of ``register_multi_grad_hook``: ``remove()`` removes its hook from every tensor."""

    def __init__(self, handles: list) -> None:
        self.handles = handles

    def remove(self) -> None:
        """Unregister the hook (idempotent)."""
        for handle in self.handles:
            handle.remove()

    def __enter__(self) -> _MultiHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def register_multi_grad_hook(tensors, fn, *, mode: str = "all") -> _MultiHandle:
    """Call ``fn`` once per backward pass that computes the gradient of any of ``tensors``:
    ``mode="all"``, with the list of their gradients (None for those it did not compute) once the
    pass has finished propagating; ``mode="any"``, with the first gradient computed.

    Raises:
        ValueError: for another ``mode``.
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = list(tensors)
    grads: dict = {}  # position -> gradient, in the running backward pass

    def finish() -> None:
        collected = [grads.get(i) for i in range(len(tensors))]
        grads.clear()
        if mode == "all":
            fn(collected)

    def hook_for(i):
        def hook(g) -> None:
            if not grads:  # the first of this backward pass
                queue_callback(finish)
                if mode == "any":
                    fn(g)
            grads[i] = g
        return hook

    return _MultiHandle([register_hook(t, hook_for(i)) for i, t in enumerate(tensors) if t._requires_grad])
