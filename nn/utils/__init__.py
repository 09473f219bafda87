"""``nn.utils``: gradient clipping, flattening parameters to one vector, activation checkpointing
(``nn.utils.checkpoint``, our ``torch.utils.checkpoint``), variable-length sequences (``rnn``),
parametrizations, weight/spectral normalization and pruning (``prune``)."""

from . import checkpoint, parametrizations, parametrize, prune, rnn, stateless
from .checkpoint import apply_activation_checkpointing, checkpoint_wrapper
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .init_helpers import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format, skip_init
from .weight_norm import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "get_total_norm",
    "parameters_to_vector",
    "vector_to_parameters",
    "checkpoint",
    "checkpoint_wrapper",
    "apply_activation_checkpointing",
    "rnn",
    "stateless",
    "parametrize",
    "parametrizations",
    "prune",
    "weight_norm",
    "remove_weight_norm",
    "spectral_norm",
    "remove_spectral_norm",
    "clip_grad_norm",
    "clip_grads_with_norm_",
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
    "skip_init",
    "convert_conv2d_weight_memory_format",
    "convert_conv3d_weight_memory_format",
]
