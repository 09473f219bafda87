"""Each optimizer, over a grid of options, against torch.optim step for step.

The same parameters and the same (deterministic, quadratic-plus-cubic) loss gradient are fed
to ours and to torch for 12 steps; the parameters must agree after every step (float32 at
rtol 1e-5; float64 tightly), and the final state (``state_dict``) must agree too.
"""

from __future__ import annotations

import numpy as np
import pytest

import nn
from tests.nn.optim.quadratic import (
    assert_arrays_close,
    assert_params_close,
    initial_arrays,
    ours_params,
    set_ours_grads,
    set_torch_grads,
    to_numpy,
    torch_params,
)

STEPS = 12

# (optimizer name, options), one line per case.
CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.1, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.01, "maximize": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "weight_decay": 0.2, "maximize": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.05}),
    ("Adam", {"lr": 0.05, "amsgrad": True}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.05, "maximize": True}),
    ("Adam", {"lr": 0.1, "betas": (0.3, 0.9)}),  # lerp weight 0.7: PyTorch's other lerp branch
    ("Adam", {"lr": 0.05, "eps": 1e-3, "betas": (0.8, 0.95)}),
    ("Adam", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.1, "maximize": True}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("AdamW", {"lr": 0.05}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.3}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.0}),
    ("AdamW", {"lr": 0.05, "amsgrad": True, "maximize": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}),
    ("RMSprop", {"lr": 0.01, "weight_decay": 0.1, "alpha": 0.3, "centered": True}),
    ("RMSprop", {"lr": 0.01, "maximize": True, "eps": 1e-4}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.5, "eps": 1e-5}),
    ("Adagrad", {"lr": 0.1, "maximize": True, "lr_decay": 0.01}),
]

TOLERANCES = {"float32": (1e-5, 1e-6), "float64": (1e-11, 1e-12)}


def _case_id(case) -> str:
    name, options = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in options.items())


def _compare_state(ours_opt, torch_opt, rtol, atol) -> None:
    ours, theirs = ours_opt.state_dict(), torch_opt.state_dict()
    assert sorted(ours["state"]) == sorted(theirs["state"])
    for index, state in theirs["state"].items():
        assert sorted(ours["state"][index]) == sorted(state), f"state keys of param {index}"
        for key, value in state.items():
            assert_arrays_close(ours["state"][index][key], value, rtol, atol, f"state[{index}][{key!r}]")
            assert str(ours["state"][index][key].dtype).split(".")[-1] == str(value.dtype).split(".")[-1]
    for our_group, their_group in zip(ours["param_groups"], theirs["param_groups"]):
        for key, value in our_group.items():
            assert their_group[key] == value, f"param group option {key!r}"


def step_alongside_torch(case, dtype, device, torch):
    """Run optimizer ``case`` = (name, options) for STEPS steps beside torch's on the same
    parameters and gradients, comparing parameters after each step; ours, torch's, our params,
    the initial arrays and the tolerances."""
    name, options = case
    rtol, atol = TOLERANCES[dtype]
    arrays = initial_arrays(dtype)
    ours, theirs = ours_params(arrays, device), torch_params(torch, arrays)
    ours_opt = getattr(nn.optim, name)(ours, **options)
    torch_opt = getattr(torch.optim, name)(theirs, **options)
    sign = -1.0 if options.get("maximize") else 1.0
    for step in range(STEPS):
        set_ours_grads(ours, sign)
        set_torch_grads(torch, theirs, sign)
        ours_opt.step()
        torch_opt.step()
        assert_params_close(ours, theirs, rtol, atol, f"after step {step + 1}")
    return ours_opt, torch_opt, ours, arrays, rtol, atol


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_matches_torch_step_for_step(case, dtype, device, torch):
    ours_opt, torch_opt, ours, arrays, rtol, atol = step_alongside_torch(case, dtype, device, torch)
    np.testing.assert_array_equal(to_numpy(ours[-1]), arrays[-1])  # no grad: never touched
    assert ours[-1].grad is None
    assert ours[3].t().is_contiguous()  # updated in place: still the same (transposed) storage
    _compare_state(ours_opt, torch_opt, rtol, atol)


@pytest.mark.parametrize("name, options", [
    ("SGD", {"momentum": 0.9, "nesterov": True}),
    ("Adam", {"amsgrad": True}),
    ("AdamW", {"weight_decay": 0.1}),
    ("RMSprop", {"momentum": 0.5, "centered": True}),
    ("Adagrad", {"lr_decay": 0.01}),
])
def test_param_groups_with_their_own_options_match_torch(name, options, device, torch):
    arrays = initial_arrays("float32")
    ours, theirs = ours_params(arrays, device), torch_params(torch, arrays)

    def groups(params):
        return [{"params": params[:2]}, {"params": params[2:], "lr": 0.003, **options}]

    ours_opt = getattr(nn.optim, name)(groups(ours), lr=0.05)
    torch_opt = getattr(torch.optim, name)(groups(theirs), lr=0.05)
    assert ours_opt.param_groups[1]["lr"] == 0.003 and ours_opt.param_groups[0]["lr"] == 0.05
    for step in range(STEPS):
        set_ours_grads(ours)
        set_torch_grads(torch, theirs)
        ours_opt.step()
        torch_opt.step()
        assert_params_close(ours, theirs, 1e-5, 1e-6, f"after step {step + 1}")
    _compare_state(ours_opt, torch_opt, 1e-5, 1e-6)


@pytest.mark.parametrize("name, options", [
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("Adam", {"lr": 0.05, "amsgrad": True}),
    ("AdamW", {"lr": 0.05}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}),
    ("Adagrad", {"lr": 0.1}),
])
def test_loads_a_torch_state_dict_and_continues_like_torch(name, options, device, torch):
    """A state_dict made by torch (tensors converted) loads into ours: the format is PyTorch's."""
    import tensor

    arrays = initial_arrays("float32")
    theirs = torch_params(torch, arrays)
    torch_opt = getattr(torch.optim, name)(theirs, **options)
    for _ in range(5):
        set_torch_grads(torch, theirs)
        torch_opt.step()
    saved = torch_opt.state_dict()
    converted = {
        "state": {i: {k: tensor.tensor(v.numpy()) for k, v in s.items()} for i, s in saved["state"].items()},
        "param_groups": saved["param_groups"],
    }
    ours = ours_params([p.detach().numpy() for p in theirs], device)
    ours_opt = getattr(nn.optim, name)(ours, **options)
    ours_opt.load_state_dict(converted)
    for step in range(5):
        set_ours_grads(ours)
        set_torch_grads(torch, theirs)
        ours_opt.step()
        torch_opt.step()
        assert_params_close(ours, theirs, 1e-5, 1e-6, f"after resumed step {step + 1}")
