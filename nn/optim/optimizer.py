"""``Optimizer``: the base class of every optimizer (our ``torch.optim.Optimizer``), and
``ParamwiseOptimizer``, the base of those that update each parameter on its own.

Parameters are organised in groups (a list of dicts, each with its own options).
Updates run on the raw arrays of the parameters, in place, through the device's
array module, so views and shared memory see them. The step hooks are in ``_hooks``,
``state_dict``/``load_state_dict`` (PyTorch's format) in ``_state_dict``, and the helpers the
update rules share in ``_update_helpers``; this module's public names are
``torch.optim.optimizer``'s.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import tensor
from tensor import Tensor

from ._checks import required
from ._hooks import StepHooksMixin, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from ._state_dict import StateDictMixin
from ._update_helpers import as_real, increment_step, new_step

__all__ = ["Optimizer", "required", "ParamsT", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]


def _typename(obj) -> str:
    if isinstance(obj, Tensor):
        return f"tensor.Tensor (dtype {obj.dtype})"
    module = getattr(type(obj), "__module__", "") or ""
    name = type(obj).__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"


_HOOK_STORES = (
    "_optimizer_step_pre_hooks",
    "_optimizer_step_post_hooks",
    "_optimizer_state_dict_pre_hooks",
    "_optimizer_state_dict_post_hooks",
    "_optimizer_load_state_dict_pre_hooks",
    "_optimizer_load_state_dict_post_hooks",
)


class Optimizer(StepHooksMixin, StateDictMixin):
    """Base class for optimizers.

    Args:
        params: an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (parameter
            groups, each with ``"params"`` and any per-group options).
        defaults: the default value of each option, used where a group does not set it.

    Raises:
        TypeError: if ``params`` is a single tensor, or holds something other than tensors.
        ValueError: for an empty parameter list, a non-leaf tensor, or a parameter in two groups.
    """

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        for store in _HOOK_STORES:
            setattr(self, store, OrderedDict())
        self._patch_step_function()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, "
                "but got " + _typename(params)
            )
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for store in _HOOK_STORES:
            self.__dict__.setdefault(store, OrderedDict())
        self._patch_step_function()

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # ------------------------------------------------------------ groups
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (a dict with ``"params"`` and options) to optimize.

        Raises:
            TypeError: if ``param_group`` is not a dict, its params are a set, or one is not a tensor.
            ValueError: for a non-leaf tensor, a missing required option, or a parameter that
                is already in another group.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering "
                "of tensors in sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not (param.is_leaf or param._retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        if len(tensors) != len({id(p) for p in tensors}):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this will "
                "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if any(id(p) in seen for p in tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ------------------------------------------------------------ gradients and steps
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradient of every parameter: to None (the default), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad._data.fill(0)
                    grad._version_box[0] += 1

    # torch's error for an integer parameter, from the kernel that meets it first: RuntimeError
    # ("result type Float can't be cast to ... Long"), or NotImplementedError (for "lerp").
    _integer_param_error: type[Exception] = RuntimeError

    def _params_with_grad(self, group: dict[str, Any]) -> Iterator[tuple[Tensor, Tensor]]:
        """``(param, param.grad)`` for each parameter of ``group`` that has a gradient, to update.

        Raises:
            RuntimeError (NotImplementedError for some optimizers, as torch): for an integer or
                bool parameter, which a floating-point update cannot be written to.
        """
        for p in group["params"]:
            grad = p.grad
            if grad is not None:
                if p._data.dtype.kind not in "fc":
                    raise self._integer_param_error(
                        f"{type(self).__name__} cannot update a parameter of dtype {p.dtype}: its update is "
                        "floating point; optimize floating-point (or complex) parameters"
                    )
                yield p, grad

    def _param_states(
        self, group: dict[str, Any], init_state: Callable[[Tensor, dict[str, Any]], dict[str, Tensor]]
    ) -> Iterator[tuple[Tensor, Tensor, dict[str, Any], float]]:
        """``(param, grad, state, step)`` for each parameter of ``group`` that has a gradient.

        On first use the state is created: a ``step`` counter plus ``init_state(param, group)``. The
        counter is advanced before yielding (``step`` is its new value), and the parameter's
        version is bumped once the caller has updated it in place.
        """
        for p, grad in self._params_with_grad(group):
            state = self.state[p]
            if len(state) == 0:
                state["step"] = new_step()
                state.update(init_state(p, group))
            yield p, grad, state, increment_step(state["step"])
            p._version_box[0] += 1

    def step(self, closure: Callable[[], Any] | None = None):
        """Perform one optimization step; subclasses implement it.

        ``closure`` (optional) re-evaluates the model and returns the loss.
        """
        raise NotImplementedError

    def _run_closure(self, closure: Callable[[], Any] | None):
        if closure is None:
            return None
        with tensor.enable_grad():
            return closure()


class ParamwiseOptimizer(Optimizer):
    """An optimizer whose ``step`` updates each parameter on its own: subclasses give the initial
    state (``_init_state``, besides the ``step`` counter) and the in-place update (``_update``)."""

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Tensor]:
        """The state of ``param`` (besides ``step``) before its first update."""
        raise NotImplementedError

    def _update(self, param: Tensor, grad: Tensor, state: dict[str, Any], step: float, group: dict[str, Any]) -> None:
        """Update ``param`` (and its ``state``) in place; ``step`` is the advanced step count."""
        raise NotImplementedError

    def step(self, closure: Callable[[], Any] | None = None):
        """Update every parameter that has a gradient; returns the closure's loss (or None)."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            for p, grad, state, step in self._param_states(group, self._init_state):
                if p.is_complex():
                    self._update_as_real(p, grad, state, step, group)
                else:
                    self._update(p, grad, state, step, group)
        return loss

    def _update_as_real(self, param: Tensor, grad: Tensor, state: dict[str, Any], step: float,
                        group: dict[str, Any]) -> None:
        """``_update`` of a complex parameter on real views of it, its gradient and its state (as
        torch does); the state keeps its complex tensors, and takes any other entry set."""
        real_state = {key: as_real(value) for key, value in state.items()}
        self._update(as_real(param), as_real(grad), real_state, step, group)
        for key, value in real_state.items():
            if not (isinstance(state.get(key), Tensor) and state[key].is_complex()):
                state[key] = value
