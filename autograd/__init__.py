"""``autograd``: the recorded graph, backward, custom Functions and gradcheck. Our ``torch.autograd``.

Importing this package installs the recorder and engine into ``tensor``
(``tensor._autograd_hooks.api``); ``tensor`` imports it by itself the first
time a tensor requires grad.
"""

import tensor
from tensor import _autograd_hooks as _hooks

from . import engine as _engine
from . import forward_ad, functional, graph
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .checkpoint import checkpoint, checkpoint_sequential
from .engine import grad
from .function import Function, FunctionCtx
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .variable import Variable

__all__ = [
    "backward", "grad", "Function", "FunctionCtx", "no_grad", "enable_grad", "set_grad_enabled",
    "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "gradcheck",
    "gradgradcheck", "GradcheckError", "forward_ad", "functional", "graph", "checkpoint", "checkpoint_sequential",
    "detect_anomaly", "set_detect_anomaly", "Variable",
]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Accumulate the gradients of ``tensors`` into the leaves' ``.grad`` (see ``Tensor.backward``)."""
    tensors = (tensors,) if tensor.is_tensor(tensors) else tuple(tensors)
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    elif tensor.is_tensor(grad_tensors):
        grad_tensors = (grad_tensors,)
    _engine.run_backward(tensors, tuple(grad_tensors), retain_graph, create_graph, inputs)


def _install() -> None:
    api = _hooks.api.__dict__
    api.update(
        record=graph.record, run_backward=_engine.run_backward,
        rebase_history=graph.rebase_history, register_hook=graph.register_hook,
        register_post_accumulate_grad_hook=graph.register_post_accumulate_grad_hook,
        retain_grad=graph.retain_grad, no_grad=no_grad, enable_grad=enable_grad,
        set_grad_enabled=set_grad_enabled, inference_mode=inference_mode, grad=grad,
    )


_install()
