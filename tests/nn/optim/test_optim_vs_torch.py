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


# ---------------------------------------------------------------- complex parameters, as torch
COMPLEX_CASES = [
    ("Adam", {"lr": 0.1}), ("Adam", {"lr": 0.1, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.1}), ("Adamax", {"lr": 0.1}), ("NAdam", {"lr": 0.1}), ("RAdam", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.1}), ("Adadelta", {"lr": 0.5}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}), ("Rprop", {"lr": 0.1}),
    ("ASGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9}),
]


@pytest.mark.parametrize(("name", "options"), COMPLEX_CASES, ids=lambda v: str(v))
def test_complex_parameter_updates_as_real_pairs(name, options, torch):
    """A complex parameter steps as its (real, imag) pairs, as torch's view_as_real; state stays complex."""
    import tensor

    start = np.array([1 + 1j, -0.5 + 2j, 0.3 - 0.7j])
    ours = nn.Parameter(tensor.tensor(start))
    theirs = torch.nn.Parameter(torch.tensor(start))
    ours_opt = getattr(nn.optim, name)([ours], **options)
    torch_opt = getattr(torch.optim, name)([theirs], **options)
    for k in range(5):
        grad = start * (k + 1) + np.array([1 + 2j, -3j, 0.5])
        ours.grad, theirs.grad = tensor.tensor(grad), torch.tensor(grad)
        ours_opt.step()
        torch_opt.step()
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    for key, value in torch_opt.state[theirs].items():
        if isinstance(value, torch.Tensor) and value.ndim:
            np.testing.assert_allclose(ours_opt.state[ours][key].numpy(), value.numpy(), rtol=1e-10, atol=1e-12)


def test_lbfgs_complex_parameter_matches_torch(torch):
    import tensor

    start = np.array([1 + 2j, -1 + 0.5j])
    ours, theirs = nn.Parameter(tensor.tensor(start)), torch.nn.Parameter(torch.tensor(start))
    losses = []
    for lib, p, optim in ((tensor, ours, nn.optim), (torch, theirs, torch.optim)):
        opt = optim.LBFGS([p], max_iter=3)

        def closure(opt=opt, p=p, lib=lib):
            opt.zero_grad()
            loss = (lib.view_as_real(p) ** 4).sum()
            loss.backward()
            return loss

        losses.append([float(opt.step(closure)) for _ in range(3)])
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-8)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("name", ["Adafactor"])
def test_complex_refused_like_torch(name):
    import tensor

    p = nn.Parameter(tensor.tensor([1 + 1j]))
    p.grad = tensor.tensor([1 + 2j])
    with pytest.raises(RuntimeError, match="complex"):
        getattr(nn.optim, name)([p]).step()
    with pytest.raises(RuntimeError, match="complex"):
        nn.optim.Adagrad([p], fused=True).step()


def test_rprop_nan_gradient_entry_leaves_parameter(torch):
    import tensor

    ours, theirs = nn.Parameter(tensor.tensor([1.0, 2.0])), torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    for p, optim, lib in ((ours, nn.optim, tensor), (theirs, torch.optim, torch)):
        p.grad = lib.tensor([float("nan"), 1.0])
        optim.Rprop([p]).step()
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


@pytest.mark.parametrize(("name", "error"), [("SGD", RuntimeError), ("Adam", NotImplementedError),
                                             ("AdamW", RuntimeError), ("Adagrad", RuntimeError)])
def test_integer_parameter_error_type_matches_torch(name, error):
    import tensor

    p = tensor.ones(2, dtype=tensor.int64)
    p.grad = tensor.ones(2, dtype=tensor.int64)
    with pytest.raises(error) as info:
        getattr(nn.optim, name)([p], lr=0.1).step()
    assert type(info.value) is error


def test_tensor_lr_must_have_one_element_and_tensor_betas_work(torch):
    import tensor

    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        nn.optim.SGD([nn.Parameter(tensor.ones(1))], lr=tensor.tensor([0.1, 0.2]))
    with pytest.raises(ValueError, match="both floats or both Tensors"):
        nn.optim.Adam([nn.Parameter(tensor.ones(1))], betas=(0.9, tensor.tensor(0.999)))
    ours, theirs = nn.Parameter(tensor.ones(2)), torch.nn.Parameter(torch.ones(2))
    for p, optim, lib in ((ours, nn.optim, tensor), (theirs, torch.optim, torch)):
        opt = optim.Adam([p], lr=0.1, betas=(lib.tensor(0.8), lib.tensor(0.9)))
        for _ in range(3):
            p.grad = lib.tensor([1.0, -2.0])
            opt.step()
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6)
