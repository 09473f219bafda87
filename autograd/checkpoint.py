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
tensors as arguments.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import tensor
from tensor import _dispatch

from . import graph as _graph
from .engine import grad as _grad
from .function import Function
from .grad_mode import enable_grad, is_grad_enabled

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(
    function: Callable, *args: Any, use_reentrant: bool | None = None, preserve_rng_state: bool = True, **kwargs: Any
) -> Any:
    """Run ``function(*args, **kwargs)`` without keeping its activations; recompute them in backward.

    Gradients are those of the plain call (bit for bit: the same ops run again), and random
    draws (dropout) repeat those of the forward when ``preserve_rng_state``. See
    Note [Checkpointing by recompute].

    >>> import tensor, autograd
    >>> w = tensor.ones(3, requires_grad=True)
    >>> y = autograd.checkpoint(lambda x: (x * w).tanh(), tensor.ones(3)).sum()
    >>> y.backward(); w.grad.shape
    (3,)

    Raises:
        NotImplementedError: for ``use_reentrant=True`` (only the non-reentrant variant exists).
        RuntimeError: if ``function`` reads a non-leaf tensor it was not given as an argument,
            or the recomputation returns different outputs (shapes, number).
    """
    if use_reentrant:
        raise NotImplementedError(
            "checkpoint: use_reentrant=True is not supported; "
            "use_reentrant=False (the default here) gives the same gradients"
        )
    if not is_grad_enabled():
        return function(*args, **kwargs)
    positions = [i for i, a in enumerate(args) if _dispatch.is_tensor(a)]
    rng = _RngStash(args) if preserve_rng_state else None
    detached = _detached_args(args, positions)
    start = next(_graph._sequence)
    with enable_grad():
        outputs = function(*detached, **kwargs)
    outs, single = _as_tuple(outputs)
    kind = type(outputs)
    leaves = _external_leaves(outs, start, {id(detached[i]) for i in positions})
    if not leaves and not any(args[i].requires_grad for i in positions):
        return outputs  # nothing to differentiate: no graph was recorded
    region = _Region(function, args, kwargs, positions, leaves, rng)
    region.differentiable = [_dispatch.is_tensor(o) and o.requires_grad for o in outs]
    plain = tuple(o.detach() if _dispatch.is_tensor(o) else o for o in outs)
    del outputs, outs, detached  # the recorded graph: the activations go with it
    wrapped = _CheckpointFunction.apply(region, plain, *[args[i] for i in positions], *leaves)
    return wrapped[0] if single else kind(wrapped)


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


def _as_tuple(outputs) -> tuple[tuple, bool]:
    if isinstance(outputs, (tuple, list)):
        return tuple(outputs), False
    return (outputs,), True


def _detached_args(args: tuple, positions: list) -> list:
    detached = list(args)
    for i in positions:
        detached[i] = args[i].detach().requires_grad_(args[i].requires_grad)
    return detached


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
    """What the recompute needs: the function, its arguments, the leaves it reads, the RNG."""

    def __init__(self, function, args, kwargs, positions, leaves, rng) -> None:
        self.function, self.args, self.kwargs = function, args, kwargs
        self.positions, self.leaves, self.rng = positions, leaves, rng
        self.differentiable: list = []

    def recompute(self, create_graph: bool) -> tuple[list, tuple]:
        """Run the function again with recording on: (its tensor arguments, its outputs).

        For a double backward (``create_graph``) the gradients must stay connected to the
        arguments' own history, so the recompute reads them as they are instead of detached.
        """
        detached = list(self.args) if create_graph else _detached_args(self.args, self.positions)
        with self.rng.replay() if self.rng is not None else contextlib.nullcontext(), enable_grad():
            outs, _ = _as_tuple(self.function(*detached, **self.kwargs))
        return [detached[i] for i in self.positions], outs


class _CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, region, plain, *tensors):
        ctx.region = region
        ctx.set_materialize_grads(False)  # outputs without a gradient are skipped in backward
        ctx.mark_non_differentiable(
            *[o for o, d in zip(plain, region.differentiable) if _dispatch.is_tensor(o) and not d]
        )
        return plain

    @staticmethod
    def backward(ctx, *grads):
        region = ctx.region
        create_graph = is_grad_enabled()
        inputs, outs = region.recompute(create_graph)
        if len(outs) != len(region.differentiable):
            raise RuntimeError(
                f"checkpoint: the recomputation returned {len(outs)} outputs, the forward {len(region.differentiable)}"
            )
        roots, root_grads = [], []
        for o, g, d in zip(outs, grads, region.differentiable):
            if d and g is not None:
                if o.shape != g.shape:
                    raise RuntimeError(
                        f"checkpoint: a recomputed output has shape {list(o.shape)}, the forward's {list(g.shape)}"
                    )
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

    def __init__(self, args: tuple) -> None:
        devices = {"cpu"} | {str(a.device) for a in args if _dispatch.is_tensor(a)}
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
