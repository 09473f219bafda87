"""``nn.utils``: gradient clipping, flattening parameters to one vector, activation checkpointing
(``nn.utils.checkpoint``, our ``torch.utils.checkpoint``)."""

from . import checkpoint
from .checkpoint import apply_activation_checkpointing, checkpoint_wrapper
from .clip_grad import clip_grad_norm_, clip_grad_value_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "get_total_norm",
    "parameters_to_vector",
    "vector_to_parameters",
    "checkpoint",
    "checkpoint_wrapper",
    "apply_activation_checkpointing",
]
