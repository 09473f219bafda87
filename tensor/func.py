"""``tensor.func``: function transforms, as ``torch.func``. Only ``vmap`` exists here (by looping,
Note [vmap by looping] in tensor/_vmap.py)."""

from ._vmap import vmap

__all__ = ["vmap"]
