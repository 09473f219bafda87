"""``Optimizer``: the base class of every optimizer (our ``torch.optim.Optimizer``).

Parameters are organised in groups (a list of dicts, each with its own options).
Updates run on the raw arrays of the parameters, in place, through the device's
array module, so views and shared memory see them; ``state_dict`` uses PyTorch's
format (state keyed by the parameter's index, groups listing parameter indices).
"""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Iterator
from copy import deepcopy
from itertools import chain
from typing import Any

import tensor
from autograd.graph import RemovableHandle
from tensor import Tensor, _backend, _dispatch
from tensor.profiler import _recorder

from ._checks import check_betas, check_nonnegative

__all__ = ["Optimizer", "required", "ParamsT", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]


class _RequiredParameter:
    """Singleton marking an option that every parameter group must set."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj) -> str:
    if isinstance(obj, Tensor):
        return f"tensor.Tensor (dtype {obj.dtype})"
    module = getattr(type(obj), "__module__", "") or ""
    name = type(obj).__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"


_global_optimizer_pre_hooks: dict[int, Callable] = {}
_global_optimizer_post_hooks: dict[int, Callable] = {}


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` before the ``step`` of every optimizer (before its own
    pre-hooks); it may return new ``(args, kwargs)``. Returns a handle whose ``remove()`` unregisters it."""
    return RemovableHandle(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` after the ``step`` of every optimizer (after its own
    post-hooks). Returns a handle whose ``remove()`` unregisters it."""
    return RemovableHandle(_global_optimizer_post_hooks, hook)


def _hook_step(step: Callable) -> Callable:
    """Wrap a ``step`` so it runs the step hooks and records that the optimizer stepped."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in [*_global_optimizer_pre_hooks.values(), *self._optimizer_step_pre_hooks.values()]:
            result = hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(
                        f"{step} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                    )
        run = step
        if _recorder.current is not None:  # tensor.profiler: the step as one event
            run = _recorder.current.wrap(step, f"Optimizer.step#{type(self).__name__}.step", "optimizer")
        out = run(self, *args, **kwargs)
        for hook in [*self._optimizer_step_post_hooks.values(), *_global_optimizer_post_hooks.values()]:
            hook(self, args, kwargs)
        return out

    wrapper._hooked = True
    return wrapper


_HOOK_STORES = (
    "_optimizer_step_pre_hooks",
    "_optimizer_step_post_hooks",
    "_optimizer_state_dict_pre_hooks",
    "_optimizer_state_dict_post_hooks",
    "_optimizer_load_state_dict_pre_hooks",
    "_optimizer_load_state_dict_post_hooks",
)


def _register(store: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
    handle = RemovableHandle(store, hook)
    if prepend:
        store.move_to_end(handle.id, last=False)
    return handle


class Optimizer:
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

    def _patch_step_function(self) -> None:
        cls = type(self)
        if not getattr(cls.step, "_hooked", False):
            cls.step = _hook_step(cls.step)

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

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` before each ``step``; it may return new (args, kwargs)."""
        return RemovableHandle(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` after each ``step``."""
        return RemovableHandle(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer)`` at the start of each ``state_dict()`` (first of all if ``prepend``)."""
        return _register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` at the end of each ``state_dict()``; a result that is
        not None replaces the state dict (first of all if ``prepend``)."""
        return _register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` before each ``load_state_dict``; a result that is not
        None is loaded instead (first of all if ``prepend``)."""
        return _register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer)`` after each ``load_state_dict`` (first of all if ``prepend``)."""
        return _register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """The optimizer state as ``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``.

        Parameters are numbered in group order across groups; the state tensors are not copied. The
        state-dict pre-hooks run first, and each post-hook may replace the result.
        """
        for pre_hook in list(self._optimizer_state_dict_pre_hooks.values()):
            pre_hook(self)
        state_dict = self._pack_state()
        for post_hook in list(self._optimizer_state_dict_post_hooks.values()):
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def _pack_state(self) -> dict[str, Any]:
        mapping: dict[int, int] = {}
        start = 0

        def pack(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": param_groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state from ``state_dict()`` (copies its tensors, cast to each parameter's dtype/device).

        The load-state-dict pre-hooks may replace ``state_dict`` first; the post-hooks run last.

        Raises:
            ValueError: if the number of groups, or of parameters in a group, differs.
        """
        state_dict = dict(state_dict)
        for pre_hook in list(self._optimizer_load_state_dict_pre_hooks.values()):
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        self._unpack_state(state_dict)
        for post_hook in list(self._optimizer_load_state_dict_post_hooks.values()):
            post_hook(self)

    def _unpack_state(self, state_dict: dict[str, Any]) -> None:
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups), chain.from_iterable(g["params"] for g in groups)
            )
        )
        state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = _cast(param, value)
            else:
                state[key] = value
        param_groups = []
        for group, new_group in zip(groups, saved_groups):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            for name, default in self.defaults.items():
                if default is not required:
                    new_group.setdefault(name, default)
            param_groups.append(new_group)
        self.__setstate__({"state": state, "param_groups": param_groups})
        for param_state in self.state.values():
            if isinstance(param_state, dict) and "step" in param_state and not isinstance(param_state["step"], Tensor):
                param_state["step"] = tensor.tensor(float(param_state["step"]), dtype=tensor.float32, device="cpu")


def _cast(param: Tensor, value, key=None):
    """A copy of ``value`` with floating tensors cast to ``param``'s dtype and device ('step' is kept)."""
    if isinstance(value, Tensor):
        if key == "step":
            moved = value
        elif param.is_floating_point() and value.is_floating_point():
            moved = value.to(device=param.device, dtype=param.dtype)
        else:
            moved = value.to(device=param.device)
        return moved.detach().clone() if moved is value else moved.detach()
    if isinstance(value, dict):
        return {k: _cast(param, v, key=k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v) for v in value)
    return value


# ---------------------------------------------------------------- helpers for the update rules
def real_view(array):
    """``array`` itself, or a complex array as a writable real view with each (real, imag) pair in
    a new last dim: torch updates a complex parameter, its gradient and its state as such real
    tensors (``view_as_real``; ``tensor.view_as_real`` copies, so it cannot be updated in place)."""
    if array.dtype.kind != "c":
        return array
    return array[..., None].view(array.real.dtype)


def as_real(value):
    """``value`` itself, or a complex tensor as a real view of it (see :func:`real_view`)."""
    if not (isinstance(value, Tensor) and value.is_complex()):
        return value
    return _dispatch.make(real_view(value._data), value._device, value._version_box)


def for_blocks(xp, arrays, update) -> None:
    """Call ``update(*blocks)`` on matching blocks of same-shaped ``arrays`` (a parameter and
    its gradient and state), split across the intra-op threads when they are large; on the
    whole arrays when any of them is not contiguous. The update must be elementwise."""
    if all(a.flags.c_contiguous for a in arrays):
        flat = [a.reshape(-1) for a in arrays]
        size = flat[0].size
        _backend.parallel_for(xp, size, size * len(flat), lambda block: update(*(f[block] for f in flat)))
    else:
        update(*arrays)


def effective_grad(xp, param, grad, weight_decay: float, maximize: bool):
    """The gradient (negated if ``maximize``) plus ``weight_decay * param``, as a raw array.

    Returns ``(array, owned)``; ``owned`` says the array is a fresh temporary the caller may overwrite.
    """
    if weight_decay != 0:
        out = xp.empty_like(param)
        xp.multiply(param, weight_decay, out=out)
        (xp.subtract if maximize else xp.add)(out, grad, out=out)
        return out, True
    if maximize:
        out = xp.empty_like(grad)
        xp.negative(grad, out=out)
        return out, True
    return grad, False


def decayed_grad(xp, param, grad, lr: float, weight_decay: float, decoupled: bool, maximize: bool):
    """:func:`effective_grad` as an array, but with ``decoupled`` weight decay (AdamW's) applied to
    ``param`` in place (``param *= 1 - lr * weight_decay``) instead of added to the gradient."""
    if decoupled:
        if weight_decay != 0:
            xp.multiply(param, 1 - lr * weight_decay, out=param)
        weight_decay = 0
    return effective_grad(xp, param, grad, weight_decay, maximize)[0]


def adam_defaults(lr: float, betas: tuple[float, float], eps: float, weight_decay: float, **options: Any) -> dict:
    """The ``defaults`` of an Adam-family optimizer: ``lr``, ``betas``, ``eps``, ``weight_decay``,
    then ``options`` as given.

    Raises:
        ValueError: "Invalid learning rate/epsilon value/beta parameter at index i/weight_decay
            value: ..." for out-of-range options, checked in that order (as torch).
    """
    check_nonnegative(lr=lr, eps=eps)
    check_betas(betas)
    check_nonnegative(weight_decay=weight_decay)
    return {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, **options}


def lerp_(xp, target, end, weight: float, scratch) -> None:
    """``target += weight * (end - target)`` in place, with PyTorch's ``lerp`` formula (uses ``scratch``)."""
    xp.subtract(end, target, out=scratch)
    if abs(weight) < 0.5:
        xp.multiply(scratch, weight, out=scratch)
        xp.add(target, scratch, out=target)
    else:
        xp.multiply(scratch, 1 - weight, out=scratch)
        xp.subtract(end, scratch, out=target)


def square_avg_(xp, avg, grad, decay: float, scratch) -> None:
    """``avg = decay * avg + (1 - decay) * grad**2`` in place, rounding as PyTorch does (uses ``scratch``)."""
    xp.multiply(avg, decay, out=avg)
    xp.multiply(grad, 1 - decay, out=scratch)
    xp.multiply(scratch, grad, out=scratch)
    xp.add(avg, scratch, out=avg)


def addcdiv_(xp, target, numerator, denominator, value: float) -> None:
    """``target += value * numerator / denominator`` in place, rounding as PyTorch's ``addcdiv_``."""
    update = xp.empty_like(target)
    xp.multiply(numerator, value, out=update)
    xp.divide(update, denominator, out=update)
    xp.add(target, update, out=target)


def new_step() -> Tensor:
    """A fresh step counter: a float32 scalar tensor on the CPU, as PyTorch keeps it."""
    return tensor.tensor(0.0, dtype=tensor.float32, device="cpu")


def increment_step(step: Tensor) -> float:
    """Add one to a step counter in place and return its new value."""
    data = step._data
    data += 1
    step._version_box[0] += 1
    return float(data)


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
