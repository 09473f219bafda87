"""``tensor.vmap`` (``tensor.func.vmap``): map a function over a dim of its inputs (issue 16).

Note [vmap by looping]
----------------------
PyTorch's vmap runs the function once on batched tensors. Here it runs the function once per
index of the mapped dim, on the inputs' slices there (``select``: views, so gradients flow
back), and stacks the results along ``out_dims``: the same values, dtypes and gradients, at
the cost of one call per sample. ``chunk_size`` is checked and accepted; calls are per sample
anyway. ``randomness``: "different" draws fresh numbers per sample (the loop's natural
behaviour), "same" restores the CPU generator's state before each sample, and "error" (the
default) raises when the CPU generator advanced during the calls. An in-place write into an
unmapped input (in_dim None) would repeat once per sample, so it raises (PyTorch refuses one that
mixes in mapped data, and runs others once); the first sample's write has happened by then.
An output with out dim None must not depend on the sample: PyTorch refuses one computed from
mapped inputs; here one that differs between samples is refused (one equal in every sample is
returned, which is its value either way). ``.item()`` inside the function works on the sample,
where PyTorch refuses it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from . import _random
from ._pytree import leaves as _leaves
from ._pytree import rebuild as _rebuild
from ._tensor import Tensor
from .ops.join_split import stack
from .ops.math_extra import equal

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")


def _broadcast(dims, tree, error: Callable[[], Exception]) -> list:
    """One dim per leaf of ``tree``: ``dims`` is an int/None for a whole subtree, or a tree of the
    same structure."""
    if dims is None or isinstance(dims, int) and not isinstance(dims, bool):
        return [dims] * len(_leaves(tree))
    same_kind = isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)) and len(dims) == len(tree)
    if same_kind:
        return [d for sub_dims, sub in zip(dims, tree) for d in _broadcast(sub_dims, sub, error)]
    if isinstance(dims, dict) and isinstance(tree, dict) and dims.keys() == tree.keys():
        return [d for key in tree for d in _broadcast(dims[key], tree[key], error)]
    raise error()


def _batch_size(name: str, in_dims, args, dims: list) -> int:
    sizes = []
    for arg, dim in zip(_leaves(args), dims):
        if dim is None:
            continue
        if not isinstance(arg, Tensor):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for an input but the "
                f"input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please use "
                "None as the respective in_dim"
            )
        if not -arg.ndim <= dim < arg.ndim:
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for some input, but "
                f"that input is a Tensor of dimensionality {arg.ndim} so expected in_dim to satisfy "
                f"-{arg.ndim} <= in_dim < {arg.ndim}."
            )
        sizes.append(arg.shape[dim])
    if not sizes:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one Tensor must be mapped over "
            f"(got in_dims={in_dims})"
        )
    if len(set(sizes)) > 1:
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
            f"{sizes} for the mapped dimension"
        )
    return sizes[0]


def _sample(args, dims: list, index: int | None):
    """``args`` with each mapped leaf replaced by its slice at ``index`` (zeros of a slice's shape
    for None: the call that gives an empty batch its output shapes)."""
    sliced = []
    for arg, dim in zip(_leaves(args), dims):
        if dim is not None:
            arg = arg.select(dim, index) if index is not None else arg.new_zeros(_drop(arg.shape, dim))
        sliced.append(arg)
    return _rebuild(args, iter(sliced))


def _unmapped_tensors(args, dims: list) -> list:
    """``(position, tensor, version)`` of each Tensor leaf of ``args`` that is not mapped."""
    return [(position, arg, arg._version) for position, (arg, dim) in enumerate(zip(_leaves(args), dims))
            if dim is None and isinstance(arg, Tensor)]


def _check_unmapped_unchanged(name: str, unmapped: list) -> None:
    for position, arg, version in unmapped:
        if arg._version != version:
            raise RuntimeError(
                f"vmap({name}, ...): an in-place operation wrote into input {position}, which is not "
                "mapped over (in_dim None). vmap runs the function once per sample here, so the write "
                "would repeat for every sample. Please use out-of-place operators instead, or map that "
                "input."
            )


def _drop(shape: tuple, dim: int) -> tuple:
    dim %= len(shape)
    return shape[:dim] + shape[dim + 1 :]


def _stack_outputs(name: str, results: list, out_dims, batch: int):
    """Stack each output leaf of the per-sample ``results`` along its out dim."""
    first = results[0]
    dims = _broadcast(
        out_dims,
        first,
        lambda: ValueError(
            f"vmap({name}, ...): out_dims is not compatible with the structure of `outputs`: out_dims={out_dims}"
        ),
    )
    stacked = []
    for position, (leaf, dim) in enumerate(zip(_leaves(first), dims)):
        if dim is None:
            if isinstance(leaf, Tensor):
                _check_unbatched(name, leaf, [_leaves(r)[position] for r in results[1:]])
            stacked.append(leaf)
            continue
        if not isinstance(leaf, Tensor):
            raise ValueError(
                f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(leaf)}. Did you "
                "mean to set out_dims= to None for output?"
            )
        column = [_leaves(r)[position] for r in results]
        out = stack(column) if batch else column[0].unsqueeze(0)[:0]
        stacked.append(out.movedim(0, dim))
    return _rebuild(first, iter(stacked))


def _check_unbatched(name: str, first: Tensor, others: list) -> None:
    """Refuse an output with out dim None that differs between samples: PyTorch refuses one
    computed from the mapped inputs (a BatchedTensor); by looping, that shows as samples that
    differ."""
    for other in others:
        if other is not first and not (other.shape == first.shape and equal(other, first)):
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")


def vmap(func: Callable, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size: int | None = None):
    """``func`` mapped over dim ``in_dims`` of its inputs, its results stacked along ``out_dims``
    (``torch.vmap`` / ``torch.func.vmap``), by calling ``func`` once per sample (Note [vmap by looping]).

    ``in_dims``: an int (every positional input), or a tuple with one entry per input: an int,
    None (not mapped) or a nested tuple/list/dict matching that input. ``out_dims`` likewise for
    the outputs. Keyword arguments are passed unmapped.

    >>> import tensor
    >>> tensor.vmap(tensor.dot)(tensor.ones(3, 2), tensor.ones(3, 2))
    tensor([2., 2., 2.])

    Raises:
        RuntimeError: for an unknown ``randomness``, a random op under ``randomness="error"``,
            or an in-place write into an input that is not mapped over.
        ValueError: for malformed ``in_dims``/``out_dims`` or ``chunk_size``, inputs whose mapped
            dims differ in size, a non-Tensor output with an int out dim, or an output with out
            dim None that differs between samples (PyTorch's messages).
    """
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    name = getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def mapped(*args, **kwargs):
        if in_dims is None or isinstance(in_dims, bool) or not isinstance(in_dims, (int, tuple)):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}."
            )
        dims = _broadcast(
            in_dims,
            args,
            lambda: ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure of "
                f"`inputs`: {len(args)} inputs"
            ),
        )
        batch = _batch_size(name, in_dims, args, dims)
        state = _random.get_rng_state()
        unmapped = _unmapped_tensors(args, dims)
        results = []
        for index in range(batch) if batch else [None]:
            if randomness == "same":
                _random.set_rng_state(state)
            results.append(func(*_sample(args, dims, index), **kwargs))
            _check_unmapped_unchanged(name, unmapped)
        if randomness == "error" and not equal(_random.get_rng_state(), state):
            raise RuntimeError(
                "vmap: called random operation while in randomness error mode. Please either use the "
                "'same' or 'different' randomness flags on vmap or perform the randomness operation "
                "out of vmap"
            )
        return _stack_outputs(name, results, out_dims, batch)

    return mapped
