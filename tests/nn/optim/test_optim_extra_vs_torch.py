"""Adamax, Adadelta, NAdam, RAdam, ASGD and Rprop against torch.optim, step for step, with their
options; the state after the run must match (and a torch state_dict must load into ours)."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from tests.nn.optim.quadratic import (
    assert_params_close,
    initial_arrays,
    ours_params,
    set_ours_grads,
    set_torch_grads,
    to_numpy,
    torch_params,
)
from tests.nn.optim.test_optim_vs_torch import _case_id, _compare_state, step_alongside_torch

STEPS = 10

CASES = [
    ("Adamax", {"lr": 0.05}),
    ("Adamax", {"lr": 0.05, "weight_decay": 0.1, "maximize": True, "betas": (0.3, 0.9)}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.5, "weight_decay": 0.1, "maximize": True, "eps": 1e-3}),
    ("NAdam", {"lr": 0.05}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {"lr": 0.05}),
    ("RAdam", {"lr": 0.05, "betas": (0.9, 0.5)}),  # rho_t > 5 from step 6: the rectified branch
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.05}),
    ("ASGD", {"lr": 0.05, "t0": 3, "lambd": 0.01, "weight_decay": 0.1, "maximize": True}),
    ("Rprop", {"lr": 0.05}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True}),
    ("Adafactor", {"lr": 0.05}),
    (
        "Adafactor",
        {"lr": 0.05, "beta2_decay": -0.5, "eps": (1e-6, 1e-2), "d": 1.5, "weight_decay": 0.1, "maximize": True},
    ),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_matches_torch_step_for_step(case, dtype, device, torch):
    ours_opt, torch_opt, ours, arrays, rtol, atol = step_alongside_torch(case, dtype, device, torch)
    np.testing.assert_array_equal(to_numpy(ours[-1]), arrays[-1])
    _compare_state(ours_opt, torch_opt, rtol, atol)


@pytest.mark.parametrize("name", ["Adamax", "Adadelta", "NAdam", "RAdam", "ASGD", "Rprop", "Adafactor"])
def test_state_dict_round_trip_continues_like_torch(name, torch):
    arrays = initial_arrays("float32")
    theirs = torch_params(torch, arrays)
    torch_opt = getattr(torch.optim, name)(theirs, lr=0.05)
    for _ in range(3):
        set_torch_grads(torch, theirs)
        torch_opt.step()
    saved = torch_opt.state_dict()
    converted = {
        "state": {i: {k: tensor.tensor(v.numpy()) for k, v in s.items()} for i, s in saved["state"].items()},
        "param_groups": saved["param_groups"],
    }
    ours = ours_params([p.detach().numpy() for p in theirs], "cpu")
    ours_opt = getattr(nn.optim, name)(ours, lr=0.05)
    ours_opt.load_state_dict(converted)
    again = getattr(nn.optim, name)(ours, lr=0.05)
    again.load_state_dict(ours_opt.state_dict())
    for step in range(3):
        set_ours_grads(ours)
        set_torch_grads(torch, theirs)
        again.step()
        torch_opt.step()
        assert_params_close(ours, theirs, 1e-5, 1e-6, f"after resumed step {step + 1}")


@pytest.mark.parametrize(
    "name, options, message",
    [
        ("Adamax", {"lr": -1.0}, "Invalid learning rate: -1.0"),
        ("Adamax", {"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0: 1.0"),
        ("Adadelta", {"rho": 1.5}, "Invalid rho value: 1.5"),
        ("NAdam", {"momentum_decay": -1}, "Invalid momentum_decay value: -1"),
        ("RAdam", {"eps": -1}, "Invalid epsilon value: -1"),
        ("ASGD", {"weight_decay": -1}, "Invalid weight_decay value: -1"),
        ("Rprop", {"etas": (1.2, 0.5)}, "Invalid eta values: 1.2, 0.5"),
        ("SparseAdam", {"lr": 0.0}, "Invalid learning rate: 0.0"),
    ],
)
def test_bad_options_raise_like_torch(name, options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        getattr(nn.optim, name)([nn.Parameter(tensor.zeros(2))], **options)


def test_sparse_adam_refuses_dense_gradients():
    p = nn.Parameter(tensor.zeros(3))
    p.grad = tensor.ones(3)
    opt = nn.optim.SparseAdam([p])
    with pytest.raises(RuntimeError, match="does not support dense gradients"):
        opt.step()


def _rosenbrock(x):
    return ((1 - x[:-1]) ** 2).sum() + 100 * ((x[1:] - x[:-1] ** 2) ** 2).sum()


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"line_search_fn": "strong_wolfe"},
        {"history_size": 3, "max_iter": 7, "lr": 0.5},
        {"line_search_fn": "strong_wolfe", "history_size": 2},
    ],
)
def test_lbfgs_matches_torch(options, torch):
    start = np.array([-1.2, 1.0, 0.5, -0.3])
    ours = nn.Parameter(tensor.tensor(start))
    theirs = torch.tensor(start, requires_grad=True)
    ours_opt, torch_opt = nn.optim.LBFGS([ours], **options), torch.optim.LBFGS([theirs], **options)

    def closure_for(opt, x):
        def closure():
            opt.zero_grad()
            loss = _rosenbrock(x)
            loss.backward()
            return loss

        return closure

    for _ in range(4):
        ours_loss = ours_opt.step(closure_for(ours_opt, ours))
        torch_loss = torch_opt.step(closure_for(torch_opt, theirs))
        np.testing.assert_allclose(float(ours_loss), float(torch_loss.detach()), rtol=1e-9)
        np.testing.assert_allclose(to_numpy(ours), theirs.detach().numpy(), rtol=1e-8, atol=1e-10)
    ours_state, torch_state = ours_opt.state[ours], torch_opt.state[theirs]
    assert ours_state["func_evals"] == torch_state["func_evals"]
    assert ours_state["n_iter"] == torch_state["n_iter"]


def test_lbfgs_refuses_parameter_groups_and_unknown_line_searches():
    a, b = nn.Parameter(tensor.zeros(2)), nn.Parameter(tensor.zeros(2))
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        nn.optim.LBFGS([{"params": [a]}, {"params": [b]}])
    opt = nn.optim.LBFGS([a], line_search_fn="armijo")

    def closure():
        opt.zero_grad()
        loss = ((a - 1) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)


@pytest.mark.parametrize(
    "shape, options",
    [
        ((6, 4), {}),
        ((3, 5), {"nesterov": False, "adjust_lr_fn": "match_rms_adamw", "weight_decay": 0.0, "momentum": 0.9}),
    ],
)
def test_muon_matches_torch(shape, options, device, torch):
    rng = np.random.default_rng(0)
    start = rng.standard_normal(shape).astype("float32")
    ours, theirs = nn.Parameter(tensor.tensor(start, device=device)), torch.nn.Parameter(torch.tensor(start))
    ours_opt, torch_opt = nn.optim.Muon([ours], lr=0.02, **options), torch.optim.Muon([theirs], lr=0.02, **options)
    for _ in range(5):
        grad = rng.standard_normal(shape).astype("float32")
        ours.grad, theirs.grad = tensor.tensor(grad, device=device), torch.tensor(grad)
        ours_opt.step()
        torch_opt.step()
        np.testing.assert_allclose(to_numpy(ours), theirs.detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        nn.optim.Muon([nn.Parameter(tensor.zeros(3))])


def test_swap_in_params_and_state_steps_the_copies_only():
    live = [nn.Parameter(tensor.ones(3)), nn.Parameter(tensor.ones(2))]
    opt = nn.optim.Adam(live, lr=0.1)
    for p in live:
        p.grad = tensor.ones_like(p)
    opt.step()
    before = [p.detach().clone() for p in live]
    saved = opt.state_dict()
    copies = {f"p{i}": nn.Parameter(p.detach().clone()) for i, p in enumerate(live)}
    swapped = {
        "state": {i: {k: v.clone() for k, v in s.items()} for i, s in saved["state"].items()},
        "param_groups": [dict(g, lr=0.5) for g in saved["param_groups"]],
    }
    for p in copies.values():
        p.grad = tensor.ones_like(p)
    with nn.optim.swap_in_optimizer_params_and_state(opt, copies, swapped):
        assert opt.param_groups[0]["lr"] == 0.5
        opt.step()
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["params"] == live
    for p, b in zip(live, before):
        np.testing.assert_array_equal(to_numpy(p), to_numpy(b))
    assert all((to_numpy(c) < to_numpy(b)).all() for c, b in zip(copies.values(), before))
    assert float(swapped["state"][0]["step"]) == 2.0
    with pytest.raises(RuntimeError, match="match optimizer.param_groups ordering"):
        with nn.optim.swap_in_optimizer_params_and_state(opt, {"p0": copies["p0"]}, swapped):
            pass
