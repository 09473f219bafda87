"""Trees of values (tuples, namedtuples, lists and dicts, nested) as the function transforms take
them: ``vmap``'s inputs and outputs, ``func.grad``'s arguments and results, ``checkpoint``'s."""

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
    """A tree shaped as ``tree`` (of its types: a namedtuple such as ``sort``'s result stays one)
    whose leaves are taken in order from the iterator ``new_leaves``."""
    if isinstance(tree, (tuple, list)):
        children = [rebuild(child, new_leaves) for child in tree]
        return type(tree)(*children) if hasattr(tree, "_fields") else type(tree)(children)
    if isinstance(tree, dict):
        return {key: rebuild(tree[key], new_leaves) for key in tree}
    return next(new_leaves)
