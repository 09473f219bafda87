"""The ``Optimizer`` base: parameter groups, validation errors, ``zero_grad``, ``step(closure)``,
in-place updates, step hooks, and ``state_dict`` round trips (bit-identical resumption)."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import nn
import tensor
from nn.optim.optimizer import Optimizer, required
from tests.nn.optim.quadratic import initial_arrays, ours_params, set_ours_grads, to_numpy

ALL_OPTIMIZERS = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.05, "amsgrad": True}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01}),
]


def _param(values=(1.0, 2.0), device="cpu") -> nn.Parameter:
    return nn.Parameter(tensor.tensor(list(values), device=device))


# ---------------------------------------------------------------- validation errors
BAD_OPTIONS = [
    ("SGD", {"lr": -1}, "Invalid learning rate: -1"),
    ("SGD", {"momentum": -0.5}, "Invalid momentum value: -0.5"),
    ("SGD", {"weight_decay": -1e-3}, "Invalid weight_decay value: -0.001"),
    ("SGD", {"nesterov": True}, "Nesterov momentum requires a momentum and zero dampening"),
    ("SGD", {"nesterov": True, "momentum": 0.9, "dampening": 0.1}, "Nesterov momentum requires a momentum"),
    ("Adam", {"lr": -0.1}, "Invalid learning rate: -0.1"),
    ("Adam", {"eps": -1.0}, "Invalid epsilon value: -1.0"),
    ("Adam", {"betas": (1.0, 0.999)}, "Invalid beta parameter at index 0: 1.0"),
    ("Adam", {"betas": (0.9, -0.1)}, "Invalid beta parameter at index 1: -0.1"),
    ("Adam", {"weight_decay": -1}, "Invalid weight_decay value: -1"),
    ("AdamW", {"lr": -2}, "Invalid learning rate: -2"),
    ("AdamW", {"betas": (0.9, 1.5)}, "Invalid beta parameter at index 1: 1.5"),
    ("RMSprop", {"alpha": -0.1}, "Invalid alpha value: -0.1"),
    ("RMSprop", {"momentum": -1}, "Invalid momentum value: -1"),
    ("RMSprop", {"eps": -1e-8}, "Invalid epsilon value: -1e-08"),
    ("Adagrad", {"lr_decay": -1}, "Invalid lr_decay value: -1"),
    ("Adagrad", {"initial_accumulator_value": -0.5}, "Invalid initial_accumulator_value value: -0.5"),
    ("Adagrad", {"eps": -1}, "Invalid epsilon value: -1"),
]


@pytest.mark.parametrize("name, options, message", BAD_OPTIONS)
def test_bad_options_raise_value_error(name, options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        getattr(nn.optim, name)([_param()], **options)


def test_bad_params_raise():
    p = _param()
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable of Tensors"):
        nn.optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        nn.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        nn.optim.SGD([p, 3], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        nn.optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match="organized in ordered collections"):
        nn.optim.SGD([{"params": {p}}], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        nn.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    opt = nn.optim.SGD([p], lr=0.1)
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([_param()])
    with pytest.warns(UserWarning, match="duplicate parameters"):
        nn.optim.SGD([p, p], lr=0.1)


def test_required_option_missing_from_a_group_raises():
    class Plain(Optimizer):
        def __init__(self, params, lr=required):
            super().__init__(params, {"lr": lr})

    with pytest.raises(ValueError, match="parameter group didn't specify a value of required optimization "
                                         "parameter lr"):
        Plain([_param()])
    assert Plain([{"params": [_param()], "lr": 0.5}]).param_groups[0]["lr"] == 0.5


def test_param_groups_defaults_and_add_param_group():
    a, b, c = _param(), _param(), _param()
    opt = nn.optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert [g["momentum"] for g in opt.param_groups] == [0, 0.9]
    assert opt.param_groups[1]["params"] == [b] or opt.param_groups[1]["params"][0] is b
    opt.add_param_group({"params": [c], "weight_decay": 0.1})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["weight_decay"] == 0.1
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    expected = ("Parameter Group 1\n    dampening: 0\n    differentiable: False\n    foreach: None\n    fused: None\n"
                "    lr: 0.5\n"
                "    maximize: False\n"
                "    momentum: 0.9")
    assert expected in repr(opt)


def test_named_parameters_are_accepted_and_names_kept():
    model = nn.Module()
    model.w = _param()
    model.b = _param((0.5,))
    opt = nn.optim.Adam(model.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]


# ---------------------------------------------------------------- zero_grad, closure, in place
def test_zero_grad_to_none_or_to_zeros_in_place(device):
    p = _param(device=device)
    (p * p).sum().backward()
    opt = nn.optim.SGD([p], lr=0.1)
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad
    np.testing.assert_array_equal(to_numpy(p.grad), [0.0, 0.0])
    opt.zero_grad()
    assert p.grad is None


def test_step_skips_params_without_grad_and_updates_in_place(device):
    p, untouched = _param(device=device), _param((3.0, 4.0), device=device)
    view = p[1:]
    alias = p.detach()
    version = p._version
    opt = nn.optim.SGD([p, untouched], lr=0.5, momentum=0.9)
    (p * p).sum().backward()  # grad 2p = (2, 4)
    opt.step()
    np.testing.assert_allclose(to_numpy(p), [0.0, 0.0])
    np.testing.assert_allclose(to_numpy(view), [0.0])  # a view sees the update
    np.testing.assert_allclose(to_numpy(alias), [0.0, 0.0])  # so does a detached alias
    assert p._version > version
    np.testing.assert_array_equal(to_numpy(untouched), [3.0, 4.0])
    assert untouched not in opt.state and len(opt.state) == 1
    assert p.is_leaf and p.grad_fn is None


def test_closure_runs_with_grad_enabled_and_its_loss_is_returned(device):
    p = _param(device=device)
    opt = nn.optim.SGD([p], lr=0.25)
    seen = []

    def closure():
        seen.append(tensor.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with tensor.no_grad():
        loss = opt.step(closure)
    assert seen == [True]
    assert loss.item() == pytest.approx(5.0)
    np.testing.assert_allclose(to_numpy(p), [0.5, 1.0])  # p - 0.25 * 2p
    assert opt.step() is None


@pytest.mark.parametrize("name, options", ALL_OPTIMIZERS)
def test_closure_matches_torch(name, options, torch):
    ours, theirs = _param((1.0, -2.0, 0.5)), torch.nn.Parameter(torch.tensor([1.0, -2.0, 0.5]))
    options = {**options, "lr": 0.01}
    ours_opt, torch_opt = getattr(nn.optim, name)([ours], **options), getattr(torch.optim, name)([theirs], **options)

    def closure(opt, p):
        def run():
            opt.zero_grad()
            loss = (p * p * p * p).sum() + (p * 3).sum()
            loss.backward()
            return loss
        return run

    for _ in range(5):
        ours_loss = ours_opt.step(closure(ours_opt, ours))
        torch_loss = torch_opt.step(closure(torch_opt, theirs))
        assert ours_loss.item() == pytest.approx(torch_loss.item(), rel=1e-5)
        np.testing.assert_allclose(to_numpy(ours), theirs.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_step_hooks_run_around_step_and_can_be_removed():
    p = _param()
    opt = nn.optim.SGD([p], lr=0.1)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o is opt)))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", o is opt)))
    opt.step()
    assert calls == [("pre", True), ("post", True)]
    pre.remove()
    opt.step()
    assert calls[2:] == [("post", True)]


# ---------------------------------------------------------------- state_dict
def _train(opt, params, steps):
    for _ in range(steps):
        set_ours_grads(params)
        opt.step()


@pytest.mark.parametrize("name, options", ALL_OPTIMIZERS)
def test_state_dict_round_trip_mid_training_is_bit_identical(name, options, device):
    arrays = initial_arrays("float32")
    straight = ours_params(arrays, device)
    straight_opt = getattr(nn.optim, name)(straight, **options)
    _train(straight_opt, straight, 10)

    first = ours_params(arrays, device)
    first_opt = getattr(nn.optim, name)(first, **options)
    _train(first_opt, first, 4)
    buffer = io.BytesIO()
    tensor.save({"params": [p.detach() for p in first], "optim": first_opt.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = tensor.load(buffer)

    resumed = ours_params([p.cpu().numpy() for p in checkpoint["params"]], device)
    resumed_opt = getattr(nn.optim, name)(resumed, lr=123.0)  # options come from the checkpoint
    resumed_opt.load_state_dict(checkpoint["optim"])
    assert resumed_opt.param_groups[0]["lr"] == options["lr"]
    _train(resumed_opt, resumed, 6)
    for a, b in zip(resumed, straight):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


def test_state_dict_format_is_pytorchs():
    a, b, c = _param(), _param(), _param()
    opt = nn.optim.Adam([{"params": [a, b]}, {"params": [c], "lr": 0.5}], lr=0.1)
    for p in (a, c):
        p.grad = tensor.ones(2)
    opt.step()
    state = opt.state_dict()
    assert sorted(state) == ["param_groups", "state"]
    assert sorted(state["state"]) == [0, 2]  # b had no grad: no state
    assert sorted(state["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert state["state"][0]["step"].dtype == tensor.float32 and state["state"][0]["step"].item() == 1.0
    assert [g["params"] for g in state["param_groups"]] == [[0, 1], [2]]
    assert state["param_groups"][1]["lr"] == 0.5


@pytest.mark.parametrize("dtype", [tensor.float32, tensor.float64])
def test_load_state_dict_copies_and_casts_state(dtype, device):
    p = _param(device=device)
    opt = nn.optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = tensor.ones(2, device=device)
    opt.step()
    saved = opt.state_dict()
    q = nn.Parameter(tensor.tensor([1.0, 2.0], dtype=dtype, device=device))
    other = nn.optim.SGD([q], lr=0.1, momentum=0.9)
    other.load_state_dict(saved)
    buf = other.state[q]["momentum_buffer"]
    assert buf.dtype == dtype
    q.grad = tensor.ones(2, dtype=dtype, device=device)
    other.step()  # updates its own buffer in place
    np.testing.assert_allclose(to_numpy(buf), [1.9, 1.9], rtol=1e-6)
    np.testing.assert_array_equal(to_numpy(opt.state[p]["momentum_buffer"]), [1.0, 1.0])  # not aliased


def test_load_state_dict_mismatch_errors():
    a, b = _param(), _param()
    two_groups = nn.optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).state_dict()
    one_group = nn.optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        nn.optim.SGD([a, b], lr=0.1).load_state_dict(two_groups)
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that doesn't match "
                                         "the size of optimizer's group"):
        nn.optim.SGD([a], lr=0.1).load_state_dict(one_group)


def test_adagrad_creates_state_for_every_param_up_front(torch):
    ours = nn.optim.Adagrad([_param(), _param()], initial_accumulator_value=0.25)
    theirs = torch.optim.Adagrad([torch.nn.Parameter(torch.ones(2)) for _ in range(2)], initial_accumulator_value=0.25)
    ours_state, torch_state = ours.state_dict()["state"], theirs.state_dict()["state"]
    assert sorted(ours_state) == sorted(torch_state) == [0, 1]
    np.testing.assert_array_equal(to_numpy(ours_state[1]["sum"]), torch_state[1]["sum"].numpy())
    assert ours_state[1]["step"].item() == 0.0


def test_warning_free_plain_training_loop():
    p = _param()
    opt = nn.optim.AdamW([p])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
    assert opt.state[p]["step"].item() == 3.0


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
                                  "RMSprop", "Rprop", "ASGD"])
def test_param_groups_have_torchs_keys_and_values(torch, name):
    """torch's ``capturable``/``differentiable``/``fused`` options are accepted and kept in the
    groups, so state dicts have torch's structure; ``differentiable=True`` is refused."""
    ours = getattr(nn.optim, name)([tensor.ones(2, requires_grad=True)], lr=0.1, differentiable=False)
    theirs = getattr(torch.optim, name)([torch.ones(2, requires_grad=True)], lr=0.1)
    strip = lambda group: {k: v for k, v in group.items() if k != "params"}  # noqa: E731
    assert strip(ours.param_groups[0]) == strip(theirs.param_groups[0])
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        getattr(nn.optim, name)([tensor.ones(2, requires_grad=True)], lr=0.1, differentiable=True)


# ---------------------------------------------------------------- state-dict hooks, global step hooks, LBFGS state
def test_state_dict_and_load_hooks_run_in_order_and_may_replace():
    p = nn.Parameter(tensor.ones(1))
    opt = nn.optim.SGD([p], lr=0.1)
    calls = []
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    opt.register_state_dict_pre_hook(lambda o: calls.append("first"), prepend=True)
    assert opt.state_dict()["extra"] == 1 and calls == ["first", "pre"]

    def drop_extra(o, sd):
        sd = dict(sd)
        sd.pop("extra")
        sd["param_groups"][0]["lr"] = 0.5
        return sd

    opt.register_load_state_dict_pre_hook(drop_extra)
    handle = opt.register_load_state_dict_post_hook(lambda o: calls.append("loaded"))
    opt.load_state_dict(opt.state_dict())
    assert opt.param_groups[0]["lr"] == 0.5 and calls[-1] == "loaded"
    handle.remove()
    opt.load_state_dict(opt.state_dict())
    assert calls.count("loaded") == 1


def test_global_optimizer_step_hooks():
    from nn.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    p = nn.Parameter(tensor.ones(1))
    p.grad = tensor.ones(1)
    opt = nn.optim.SGD([p], lr=0.1)
    calls = []
    opt.register_step_pre_hook(lambda o, a, k: calls.append("own pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("own post"))
    with register_optimizer_step_pre_hook(lambda o, a, k: calls.append("global pre")), \
            register_optimizer_step_post_hook(lambda o, a, k: calls.append("global post")):
        opt.step()
    opt.step()
    assert calls == ["global pre", "own pre", "own post", "global post", "own pre", "own post"]


def test_adagrad_share_memory():
    opt = nn.optim.Adagrad([nn.Parameter(tensor.ones(2))])
    opt.share_memory()
    assert opt.state[opt.param_groups[0]["params"][0]]["sum"].is_shared()


def _lbfgs_run(params, lbfgs):
    def closure():
        lbfgs.zero_grad()
        loss = (params[0] ** 4).sum()
        loss.backward()
        return loss

    return closure


@pytest.mark.parametrize("fmt", [None, "torch"])
def test_lbfgs_state_is_tensors_and_round_trips(fmt):
    x = nn.Parameter(tensor.tensor([1.0, -2.0], dtype=tensor.float64))
    opt = nn.optim.LBFGS([x], max_iter=4)
    opt.step(_lbfgs_run([x], opt))
    state = opt.state_dict()["state"][0]
    assert all(isinstance(state[k], tensor.Tensor) for k in ("d", "prev_flat_grad", "H_diag"))
    assert all(isinstance(v, tensor.Tensor) for k in ("old_dirs", "old_stps", "ro") for v in state[k])
    assert "al" in state
    buf = io.BytesIO()
    tensor.save(opt.state_dict(), buf, **({} if fmt is None else {"format": fmt}))
    buf.seek(0)
    y = nn.Parameter(x.detach().clone())
    resumed = nn.optim.LBFGS([y], max_iter=4)
    resumed.load_state_dict(tensor.load(buf))
    opt.step(_lbfgs_run([x], opt))
    resumed.step(_lbfgs_run([y], resumed))
    np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())


def test_lbfgs_resumes_torch_state(torch):
    xt = torch.nn.Parameter(torch.tensor([1.0, -2.0], dtype=torch.float64))
    ot = torch.optim.LBFGS([xt], max_iter=4)
    ot.step(_lbfgs_run([xt], ot))

    def convert(v):
        if isinstance(v, torch.Tensor):
            return tensor.tensor(v.numpy())
        return [convert(i) for i in v] if isinstance(v, list) else v

    sd = ot.state_dict()
    state = {0: {k: convert(v) for k, v in sd["state"][0].items()}}
    x = nn.Parameter(tensor.tensor(xt.detach().numpy()))
    opt = nn.optim.LBFGS([x], max_iter=4)
    opt.load_state_dict({"state": state, "param_groups": sd["param_groups"]})
    ot.step(_lbfgs_run([xt], ot))
    opt.step(_lbfgs_run([x], opt))
    np.testing.assert_allclose(x.detach().numpy(), xt.detach().numpy(), rtol=1e-10)
