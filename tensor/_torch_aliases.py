"""``torch.X`` spellings of what exists here under another form (issue 16, coverage).

* method forms: ``torch.sigmoid_(x)``, ``torch.cos_(x)``, ``torch.t(x)``, ``torch.fill_(x, v)``...
  call the Tensor method (the in-place ones commit into ``input`` by ``tensor/_inplace.py``);
* view-copy variants (``torch.permute_copy``...): the view op, then ``clone()``: the same values
  in new storage, with gradients flowing through the clone as in PyTorch;
* the ``torch.*`` forms of ``nn.functional`` functions whose ATen signature differs from F's
  (``torch.dropout(input, p, train)``, ``torch.batch_norm(input, weight, bias, running_mean, ...)``,
  the losses taking ``reduction`` as an int): wrappers that import ``nn.functional`` when called.
  Those with F's signature are F's own function objects, imported on first access by
  ``tensor.__getattr__`` (``F_ALIASES``, tensor/_higher_layers.py).

``forms(namespace)`` builds them all from the lists below; ``tensor/__init__.py`` adds them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ._tensor import Tensor

# torch.X(input, *args) that is the method Tensor.X
METHOD_FORMS = (
    "abs_", "acos_", "acosh_", "asin_", "asinh_", "atan_", "atanh_", "clamp_", "cosh_", "detach", "detach_",
    "exp2_", "exp_", "fill_", "frac_", "index_put_", "is_inference", "log10_", "log2_", "log_", "nan_to_num_",
    "neg_", "select", "sigmoid_", "sinh_", "sqrt_", "square_", "t", "tan_", "tanh_", "xlogy_", "zero_",
    "addmv_", "conj_physical_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_", "ceil_",
    "clamp_max_", "clamp_min_", "clip_", "cos_", "deg2rad_", "erf_", "erfc_", "expm1_", "fix_", "floor_", "gcd_",
    "lcm_", "ldexp_", "log1p_", "logit_", "negative_", "rad2deg_", "reciprocal_", "round_", "rsqrt_", "sin_", "sinc_",
    "trunc_",
)  # fmt: skip
# torch.X_copy(input, *args): the view X, cloned. ``None``: the Tensor method, or else the function, X.
_VIEWS: dict[str, Callable | None] = {
    "alias": lambda input: input[...],
    "detach": None,
    "diagonal": None,
    "expand": None,
    "narrow": None,
    "permute": None,
    "select": None,
    "slice": lambda input, dim=0, start=None, end=None, step=1: input[(slice(None),) * (dim % input.ndim)
                                                                       + (slice(start, end, step),)],
    "split": None,
    "split_with_sizes": lambda input, split_sizes, dim=0: input.split(list(split_sizes), dim),
    "squeeze": None,
    "t": None,
    "transpose": None,
    "unbind": None,
    "unfold": None,
    "unsqueeze": None,
    "view": None,
    "view_as_complex": None,
    "view_as_real": None,
}  # fmt: skip
# nn.functional functions whose torch.X is the same function (same signature, or F's extends it)
F_ALIASES = (
    "adaptive_avg_pool1d", "avg_pool1d", "bilinear", "celu", "celu_", "channel_shuffle", "conv1d", "conv2d",
    "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "cosine_similarity",
    "group_norm", "hardshrink", "layer_norm", "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool3d",
    "native_channel_shuffle", "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle", "prelu", "relu_",
    "rms_norm", "rrelu", "rrelu_", "selu", "selu_", "threshold", "threshold_",
)  # fmt: skip
_REDUCTIONS = ("none", "mean", "sum")  # ATen's int reduction codes
# torch.X with ATen's positional parameters (after the tensors F takes first), passed to F.X by name
_ATEN_LOSSES = {
    "binary_cross_entropy_with_logits": ("input", "target", "weight", "pos_weight", "reduction"),
    "cosine_embedding_loss": ("input1", "input2", "target", "margin", "reduction"),
    "hinge_embedding_loss": ("input", "target", "margin", "reduction"),
    "kl_div": ("input", "target", "reduction"),
    "margin_ranking_loss": ("input1", "input2", "target", "margin", "reduction"),
    "poisson_nll_loss": ("input", "target", "log_input", "full", "eps", "reduction"),
    "triplet_margin_loss": ("anchor", "positive", "negative", "margin", "p", "eps", "swap", "reduction"),
    "ctc_loss": ("log_probs", "targets", "input_lengths", "target_lengths", "blank", "reduction", "zero_infinity"),
}


def _functional():
    return importlib.import_module("nn.functional")


def _named(fn: Callable, name: str, doc: str) -> Callable:
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _method_form(name: str) -> Callable:
    def form(input: Tensor, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    return _named(form, name, f"``input.{name}(*args, **kwargs)``, as ``torch.{name}``.")


def _copy_form(name: str, view: Callable) -> Callable:
    def form(input: Tensor, *args, **kwargs):
        result = view(input, *args, **kwargs)
        return tuple(r.clone() for r in result) if isinstance(result, (tuple, list)) else result.clone()

    return _named(
        form,
        f"{name}_copy",
        f"``{name}`` of ``input`` copied into new storage (``torch.{name}_copy``); gradients flow.",
    )


def _aten_loss(name: str, params: tuple[str, ...]) -> Callable:
    def form(*args, **kwargs):
        if len(args) > len(params):
            raise TypeError(f"{name}() takes at most {len(params)} positional arguments ({len(args)} given)")
        kwargs.update(zip(params, args))
        reduction = kwargs.get("reduction")
        if isinstance(reduction, int) and not isinstance(reduction, bool):
            if reduction not in range(len(_REDUCTIONS)):
                raise ValueError(f"{name}: reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction}")
            kwargs["reduction"] = _REDUCTIONS[reduction]
        return getattr(_functional(), name)(**kwargs)

    return _named(
        form,
        name,
        f"``torch.{name}({', '.join(params)})``: ``nn.functional.{name}`` with ATen's positional order; "
        "``reduction`` may be ATen's int (0 none, 1 mean, 2 sum). Raises as F's, and TypeError for "
        "too many arguments.",
    )


def _dropout(name: str, inplace: bool) -> Callable:
    def form(input: Tensor, p: float, train: bool) -> Tensor:
        return getattr(_functional(), name)(input, p, train, inplace)

    return _named(
        form,
        name + "_" * inplace,
        f"``torch.{name}{'_' * inplace}(input, p, train)``: "
        f"``nn.functional.{name}(input, p, training=train, inplace={inplace})``.",
    )


def batch_norm(input, weight, bias, running_mean, running_var, training: bool, momentum: float, eps: float,
               cudnn_enabled: bool = True) -> Tensor:  # fmt: skip
    """``torch.batch_norm`` (ATen's order): ``nn.functional.batch_norm``; ``cudnn_enabled`` is ignored."""
    return _functional().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats: bool, momentum: float,
                  eps: float, cudnn_enabled: bool = True) -> Tensor:  # fmt: skip
    """``torch.instance_norm`` (ATen's order): ``nn.functional.instance_norm``; ``cudnn_enabled`` is ignored."""
    return _functional().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:  # fmt: skip
    """``torch.embedding(weight, indices, ...)`` (weight first, ``padding_idx=-1`` for none):
    ``nn.functional.embedding(indices, weight, ...)``."""
    return _functional().embedding(
        indices, weight, None if padding_idx == -1 else padding_idx, scale_grad_by_freq=scale_grad_by_freq,
        sparse=sparse,
    )  # fmt: skip


def constant_pad_nd(input: Tensor, pad, value: float = 0) -> Tensor:
    """``torch.constant_pad_nd``: ``nn.functional.pad(input, pad, "constant", value)``."""
    return _functional().pad(input, pad, "constant", value)


def adaptive_max_pool1d(input: Tensor, output_size) -> tuple[Tensor, Tensor]:
    """``torch.adaptive_max_pool1d``: the pooled values and their indices (always both, as ATen)."""
    return _functional().adaptive_max_pool1d(input, output_size, return_indices=True)


def forms(namespace: dict) -> dict[str, Callable]:
    """The functions above by their torch names; a view-copy variant whose view is no Tensor method
    takes it from ``namespace`` (the ``tensor`` module's globals)."""
    out: dict[str, Callable] = {name: _method_form(name) for name in METHOD_FORMS}
    for name, view in _VIEWS.items():
        out[f"{name}_copy"] = _copy_form(name, view or getattr(Tensor, name, None) or namespace[name])
    out.update((name, _aten_loss(name, params)) for name, params in _ATEN_LOSSES.items())
    for name in ("dropout", "alpha_dropout", "feature_alpha_dropout"):
        out.update({name: _dropout(name, False), f"{name}_": _dropout(name, True)})
    out.update(batch_norm=batch_norm, instance_norm=instance_norm, embedding=embedding, constant_pad_nd=constant_pad_nd,
               adaptive_max_pool1d=adaptive_max_pool1d)  # fmt: skip
    return out
