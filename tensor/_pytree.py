"""Trees of values (tuples, lists and dicts, nested) as the function transforms take them:
``vmap``'s inputs and outputs, ``func.grad``'s arguments and results."""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["leaves", "rebuild"]


def leaves(tree) -> list:
    """The leaves of a tuple/list/dict tree, depth first."""
    if isinstance(tree, (tuple, list)):
        return [leaf for child in tree for leaf in leaves(child)]
    if isinstance(tree, dict):
        return [leaf for key in tree for leaf in leaves(tree[key])]
    return [tree]


def rebuild(tree, new_leaves: Iterator):
    """A tree shaped as ``tree`` whose leaves are taken in order from the iterator ``new_leaves``."""
    if isinstance(tree, (tuple, list)):
        return type(tree)(rebuild(child, new_leaves) for child in tree)
    if isinstance(tree, dict):
        return {key: rebuild(tree[key], new_leaves) for key in tree}
    return next(new_leaves)
