"""``tensor.func``: function transforms, as ``torch.func``: ``vmap`` (by looping, Note [vmap by
looping] in tensor/_vmap.py), the derivative transforms and ``functional_call`` (Note [Transforms
on the tape] in tensor/_func_transforms.py)."""

from ._func_transforms import (
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    stack_module_state,
    vjp,
)
from ._vmap import vmap

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian",
           "functional_call", "stack_module_state"]
