"""``nn.utils.checkpoint``: activation checkpointing (our ``torch.utils.checkpoint``) and helpers
that apply it to chosen submodules, as FSDP's ``checkpoint_wrapper`` and
``apply_activation_checkpointing``.

``checkpoint`` and ``checkpoint_sequential`` are ``autograd``'s (see
Note [Checkpointing by recompute] in autograd/checkpoint.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autograd.checkpoint import checkpoint, checkpoint_sequential

from ..modules.module import Module

__all__ = [
    "checkpoint",
    "checkpoint_sequential",
    "CheckpointWrapper",
    "checkpoint_wrapper",
    "apply_activation_checkpointing",
]

_WRAPPED = "_checkpoint_wrapped_module"


class CheckpointWrapper(Module):
    """Runs the wrapped module under ``checkpoint``; its state_dict keys are the wrapped
    module's (no ``_checkpoint_wrapped_module.`` prefix), so checkpoints load either way: a
    state-dict post hook drops the prefix and a load pre hook puts it back, as PyTorch's wrapper
    does (Note [State dict protocol] in nn/modules/_state_dict.py)."""

    def __init__(self, module: Module, preserve_rng_state: bool = True) -> None:
        super().__init__()
        self._checkpoint_wrapped_module = module
        self.preserve_rng_state = preserve_rng_state
        self.register_state_dict_post_hook(_drop_wrapped_prefix)
        self.register_load_state_dict_pre_hook(_add_wrapped_prefix)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped module's forward, its activations recomputed in backward."""
        return checkpoint(
            self._checkpoint_wrapped_module,
            *args,
            use_reentrant=False,
            preserve_rng_state=self.preserve_rng_state,
            **kwargs,
        )

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules[_WRAPPED], name)


def _drop_wrapped_prefix(module, state_dict, prefix, local_metadata) -> None:
    inner = prefix + _WRAPPED + "."
    for key in [k for k in state_dict if k.startswith(inner)]:
        state_dict[prefix + key[len(inner):]] = state_dict.pop(key)


def _add_wrapped_prefix(module, state_dict, prefix, *args) -> None:
    inner = prefix + _WRAPPED + "."
    for key in [k for k in state_dict if k.startswith(prefix) and not k.startswith(inner)]:
        state_dict[inner + key[len(prefix):]] = state_dict.pop(key)


def checkpoint_wrapper(module: Module, preserve_rng_state: bool = True) -> CheckpointWrapper:
    """Wrap ``module`` so that its activations are recomputed in backward instead of kept.

    >>> import nn
    >>> block = checkpoint_wrapper(nn.Linear(4, 4))
    >>> list(block.state_dict())
    ['weight', 'bias']
    """
    return CheckpointWrapper(module, preserve_rng_state)


def apply_activation_checkpointing(
    model: Module,
    checkpoint_wrapper_fn: Callable[[Module], Module] = checkpoint_wrapper,
    check_fn: Callable[[Module], bool] = lambda _: True,
) -> Module:
    """Replace, in place, each submodule of ``model`` for which ``check_fn(submodule)`` is true
    (outermost first; not ``model`` itself) by ``checkpoint_wrapper_fn(submodule)``; returns ``model``.

    >>> import nn
    >>> net = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
    >>> _ = apply_activation_checkpointing(net, check_fn=lambda m: isinstance(m, nn.Linear))
    >>> type(net[0]).__name__
    'CheckpointWrapper'
    """
    for name, child in list(model.named_children()):
        if isinstance(child, CheckpointWrapper):
            continue
        if check_fn(child):
            setattr(model, name, checkpoint_wrapper_fn(child))
        else:
            apply_activation_checkpointing(child, checkpoint_wrapper_fn, check_fn)
    return model
