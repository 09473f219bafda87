"""Activation checkpointing: ``checkpoint`` and ``checkpoint_sequential``, as ``torch.utils.checkpoint``.

Note [Checkpointing by recompute]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``checkpoint(fn, *args)`` runs ``fn`` once with recording on, only to learn which tensors the
region reaches (its inputs, and leaves it reads without being given them, such as a module's
parameters), then drops that graph, so the region's activations are freed as soon as the forward
leaves it. In their place one node records the region: its inputs are the region's inputs plus
the leaves found, and its derivative runs ``fn`` again (with the random-number state of the
first run, so dropout draws the same mask) and differentiates the recomputed graph. Gradients
reach the parameters through that node, so the engine accumulates them (and runs their
post-accumulate-grad hooks, which data-parallel training relies on) exactly as without
checkpointing. This gives PyTorch's non-reentrant semantics (parameters get gradients even when
no input requires grad; ``autograd.grad`` and double backward work) without saved-tensor hooks.

Peak memory: while the forward runs a region its graph is alive, which is no more than what the
recompute holds during backward, so the peak is the region boundaries plus one region.
The backward of the recomputed region adds its temporaries (gradients of the hidden layers), so
the gain grows with the depth of a region: the peak of forward + backward over 8 checkpointed
blocks (batch 1024, float64, tracemalloc) is 8.5 MB instead of 30.2 MB (3.6x) for blocks of four
linear layers 32-128-128-128-32 with tanh between, 6.4 MB instead of 13.4 MB (2.1x) for blocks
of two (tests/autograd/test_checkpoint.py asserts >= 3x on the first).

A region may not read a tensor that has a history it was not given (a non-leaf captured by a
closure): the recompute would have to stop at that tensor's node, which it cannot. Pass such
tensors as arguments (inside a tuple, list or dict argument too: every tensor in the arguments'
tree is an input of the region). An input modified in place after the forward would make the
recompute read its new values, so backward raises then, as PyTorch's non-reentrant checkpoint does.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import tensor
from tensor import _dispatch, _pytree

from . import graph as _graph
from .engine import grad as _grad
from .function import Function
from .grad_mode import enable_grad, is_grad_enabled

__all__ = ["checkpoint", "checkpoint_sequential", "noop_context_fn"]

_DETERMINISM_CHECKS = ("default", "none")


def noop_context_fn() -> tuple[contextlib.AbstractContextManager, contextlib.AbstractContextManager]:
    """``checkpoint``'s default ``context_fn``: no context around the forward or the recompute."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(
    function: Callable,
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable[[], tuple] = noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """Run ``function(*args, **kwargs)`` without keeping its activations; recompute them in backward.

    Gradients are those of the plain call (bit for bit: the same ops run again), and random
    draws (dropout) repeat those of the forward when ``preserve_rng_state``. Tensors may be
    passed inside tuples, lists and dicts, and returned so (any such tree). ``context_fn``
    returns two context managers: the first is entered around the forward, the second around
    the recompute. ``determinism_check="default"`` checks that the recompute returns outputs of
    the forward's shapes, dtypes and devices; ``"none"`` skips that. ``debug`` is accepted (the
    errors here name what differs without it). See Note [Checkpointing by recompute].

    >>> import tensor, autograd
    >>> w = tensor.ones(3, requires_grad=True)
    >>> y = autograd.checkpoint(lambda x: (x * w).tanh(), tensor.ones(3)).sum()
    >>> y.backward(); w.grad.shape
    (3,)

    Raises:
        NotImplementedError: for ``use_reentrant=True`` (only the non-reentrant variant exists).
        ValueError: for a ``determinism_check`` other than "default" or "none".
        RuntimeError: if ``function`` reads a non-leaf tensor it was not given as an argument; in
            backward, if a tensor argument was modified in place after the forward, or the
            recomputation returns different outputs.
    """
    if use_reentrant:
        raise NotImplementedError(
            "checkpoint: use_reentrant=True is not supported; "
            "use_reentrant=False (the default here) gives the same gradients"
        )
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM_CHECKS)}, but got {determinism_check}")
    forward_context, recompute_context = context_fn()
    if not is_grad_enabled():
        with forward_context:
            return function(*args, **kwargs)
    inputs = _Inputs(args, kwargs)
    rng = _RngStash(inputs.tensors()) if preserve_rng_state else None
    detached = inputs.detached()
    start = next(_graph._sequence)
    with forward_context, enable_grad():
        outputs = function(*detached[0], **detached[1])
    outs = _pytree.leaves(outputs)
    leaves = _external_leaves(outs, start, {id(t) for t in _pytree.leaves(detached)})
    if not leaves and not any(t.requires_grad for t in inputs.tensors()):
        return outputs  # nothing to differentiate: no graph was recorded
    region = _Region(function, inputs, leaves, rng, recompute_context, determinism_check == "default")
    region.differentiable = [_dispatch.is_tensor(o) and o.requires_grad for o in outs]
    region.metadata = [_metadata(o) for o in outs]
    plain = tuple(o.detach() if _dispatch.is_tensor(o) else o for o in outs)
    skeleton = _pytree.rebuild(outputs, iter([None] * len(outs)))
    del outputs, outs, detached  # the recorded graph: the activations go with it
    wrapped = _CheckpointFunction.apply(region, plain, *inputs.tensors(), *leaves)
    return _pytree.rebuild(skeleton, iter(wrapped if isinstance(wrapped, tuple) else (wrapped,)))


def checkpoint_sequential(
    functions: Sequence[Callable] | Any,
    segments: int,
    input: Any,
    *,
    use_reentrant: bool | None = None,
    preserve_rng_state: bool = True,
) -> Any:
    """Run ``functions`` (a sequence of callables, or an ``nn.Sequential``) in order, in
    ``segments`` checkpointed chunks; the last chunk runs normally, as PyTorch does.

    Raises:
        ValueError: if ``segments`` is not in [1, len(functions)].
    """
    functions = list(functions)
    if not 1 <= segments <= max(len(functions), 1):
        raise ValueError(f"checkpoint_sequential: segments must be in [1, {len(functions)}], got {segments}")
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(
            _run_chunk(functions[start : end + 1]),
            input,
            use_reentrant=use_reentrant,
            preserve_rng_state=preserve_rng_state,
        )
    return _run_chunk(functions[end + 1 :])(input)


def _run_chunk(chunk: list) -> Callable:
    def run(x):
        for fn in chunk:
            x = fn(x)
        return x

    return run


def _metadata(output) -> tuple | None:
    """What the determinism check compares: a tensor's shape, dtype and device."""
    return (tuple(output.shape), output.dtype, output.device) if _dispatch.is_tensor(output) else None


class _Inputs:
    """The arguments of a region, as the tree ``(args, kwargs)``: its tensor leaves are the
    region's inputs, wherever they sit (in a tuple, list or dict argument too)."""

    def __init__(self, args: tuple, kwargs: dict) -> None:
        self.tree = (args, kwargs)
        self.flat = _pytree.leaves(self.tree)
        self.positions = [i for i, a in enumerate(self.flat) if _dispatch.is_tensor(a)]

    def tensors(self) -> list:
        return [self.flat[i] for i in self.positions]

    def detached(self) -> tuple[tuple, dict]:
        """``(args, kwargs)`` with each tensor replaced by a detached alias that requires grad as
        the tensor does: the region's graph starts there."""
        detached = list(self.flat)
        for i in self.positions:
            detached[i] = self.flat[i].detach().requires_grad_(self.flat[i].requires_grad)
        return _pytree.rebuild(self.tree, iter(detached))


def _external_leaves(outs: tuple, start: int, own_inputs: set) -> list:
    """The leaves requiring grad that the region's recorded graph reaches, other than its
    own (detached) inputs.

    Raises:
        RuntimeError: if the graph reaches a node made before the region (a captured non-leaf).
    """
    stack = [o.grad_fn for o in outs if _dispatch.is_tensor(o) and o.grad_fn is not None]
    seen = set(stack)
    leaves: dict = {}
    while stack:
        for target in stack.pop().next_fns:
            if target is None:
                continue
            if type(target) is not _graph.Node:
                if id(target) not in own_inputs:
                    leaves[id(target)] = target
                continue
            if target in seen:
                continue
            if target.seq < start:
                raise RuntimeError(
                    f"checkpoint: the function reads a tensor made by {target.name()} before the "
                    "checkpointed region without receiving it as an argument; help: pass it to "
                    "checkpoint() as an argument"
                )
            seen.add(target)
            stack.append(target)
    return list(leaves.values())


class _Region:
    """What the recompute needs: the function, its arguments, the leaves it reads, the RNG, the
    recompute's context, and the forward outputs' metadata to check against."""

    def __init__(self, function, inputs: _Inputs, leaves, rng, context, check: bool) -> None:
        self.function, self.inputs, self.leaves, self.rng = function, inputs, leaves, rng
        self.context, self.check = context, check
        self.differentiable: list = []
        self.metadata: list = []

    def recompute(self, create_graph: bool) -> tuple[list, list]:
        """Run the function again with recording on: (its tensor arguments, its output leaves).

        For a double backward (``create_graph``) the gradients must stay connected to the
        arguments' own history, so the recompute reads them as they are instead of detached.
        """
        args, kwargs = self.inputs.tree if create_graph else self.inputs.detached()
        rng = self.rng.replay() if self.rng is not None else contextlib.nullcontext()
        with rng, self.context, enable_grad():
            outs = _pytree.leaves(self.function(*args, **kwargs))
        if self.check:
            self._check(outs)
        tensors = [t for t in _pytree.leaves((args, kwargs)) if _dispatch.is_tensor(t)]
        return tensors, outs

    def _check(self, outs: list) -> None:
        """Raise when the recomputed outputs differ from the forward's in number or metadata."""
        if len(outs) != len(self.metadata):
            raise RuntimeError(
                f"checkpoint: the recomputation returned {len(outs)} outputs, the forward {len(self.metadata)}"
            )
        for index, (out, expected) in enumerate(zip(outs, self.metadata)):
            if _metadata(out) != expected:
                raise RuntimeError(
                    "checkpoint: recomputed values for the following tensors have different metadata than during the "
                    f"forward pass.\ntensor at position {index}:\nsaved metadata: {expected}\nrecomputed metadata: "
                    f"{_metadata(out)}"
                )


class _CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, region, plain, *tensors):
        ctx.region = region
        # The inputs are saved for their version check: an in-place change after the forward
        # would make the recompute read new values (PyTorch raises here too).
        ctx.save_for_backward(*tensors[: len(region.inputs.positions)])
        ctx.set_materialize_grads(False)  # outputs without a gradient are skipped in backward
        ctx.mark_non_differentiable(
            *[o for o, d in zip(plain, region.differentiable) if _dispatch.is_tensor(o) and not d]
        )
        return plain

    @staticmethod
    def backward(ctx, *grads):
        _ = ctx.saved_tensors  # reading them raises when an input was modified in place since the forward
        region = ctx.region
        create_graph = is_grad_enabled()
        inputs, outs = region.recompute(create_graph)
        roots, root_grads = [], []
        for o, g, d in zip(outs, grads, region.differentiable):
            if d and g is not None:
                roots.append(o)
                root_grads.append(g)
        wrt = [x for x in inputs if x.requires_grad] + region.leaves
        found = iter(
            _grad(roots, wrt, root_grads, create_graph=create_graph, allow_unused=True)
            if roots and wrt
            else [None] * len(wrt)
        )
        input_grads = [next(found) if x.requires_grad else None for x in inputs]
        return (None, None, *input_grads, *found)


class _RngStash:
    """The default generators' states of the CPU and of the arguments' devices, to replay."""

    def __init__(self, tensors: list) -> None:
        devices = {"cpu"} | {str(t.device) for t in tensors}
        self.states = []
        for device in devices:
            gen = tensor._random.generator_of(device)
            try:
                self.states.append((gen, gen.get_state()))
            except RuntimeError as exc:
                warnings.warn(
                    f"checkpoint: cannot preserve the RNG state of {device} ({exc}); "
                    "random ops there will draw different numbers when recomputed",
                    stacklevel=3,
                )

    @contextlib.contextmanager
    def replay(self):
        """Set the stashed states, and restore the current ones afterwards."""
        current = [(gen, gen.get_state()) for gen, _ in self.states]
        for gen, state in self.states:
            gen.set_state(state)
        try:
            yield
        finally:
            for gen, state in current:
                gen.set_state(state)
