"""nn.Module and nn.Parameter: registration by attribute and by register_*, traversal
(parameters/buffers/children/modules and their named forms), train/eval, to(dtype), zero_grad,
state_dict / load_state_dict (strict and not, with PyTorch's messages), apply, forward hooks,
repr (compared with torch's), and the registration errors."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from tests.helpers import assert_close


class Block(nn.Module):
    """A small model with every kind of member."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.scale = nn.Parameter(tensor.ones(2))
        self.register_buffer("steps", tensor.tensor(0))
        self.register_buffer("cache", tensor.zeros(2), persistent=False)
        self.plain = tensor.ones(1)  # a plain tensor attribute is not registered
        self.inner = nn.Sequential(nn.Linear(2, 2), nn.ReLU())

    def forward(self, x):
        return self.inner(self.fc(x)) * self.scale


def test_registration_and_named_traversal_order():
    m = Block()
    assert [n for n, _ in m.named_parameters()] == ["scale", "fc.weight", "fc.bias", "inner.0.weight", "inner.0.bias"]
    assert [n for n, _ in m.named_buffers()] == ["steps", "cache"]
    assert [n for n, _ in m.named_children()] == ["fc", "inner"]
    assert [n for n, _ in m.named_modules()] == ["", "fc", "inner", "inner.0", "inner.1"]
    assert list(m.children()) == [m.fc, m.inner]
    assert len(list(m.modules())) == 5 and next(m.modules()) is m
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in m.fc.named_parameters(prefix="head")] == ["head.weight", "head.bias"]
    assert "plain" not in dict(m.named_buffers()) and m.plain.shape == (1,)
    assert m.get_submodule("inner.0") is m.inner[0] and m.get_parameter("inner.0.bias") is m.inner[0].bias


def test_state_dict_keys_skip_non_persistent_buffers(torch):
    m = Block()
    assert list(m.state_dict()) == ["scale", "steps", "fc.weight", "fc.bias", "inner.0.weight", "inner.0.bias"]
    sd = m.state_dict()
    assert not sd["scale"].requires_grad and sd["scale"]._data is m.scale._data  # detached, shared
    assert m.state_dict(keep_vars=True)["scale"] is m.scale


def test_shared_parameters_and_modules_appear_once():
    shared = nn.Linear(2, 2)
    m = nn.Sequential(shared, nn.ReLU(), shared)
    assert len(list(m.parameters())) == 2
    assert len(list(m.named_modules())) == 3
    assert len(list(m.named_modules(remove_duplicate=False))) == 4
    assert len(list(m.children())) == 2


def test_reassignment_and_deletion():
    m = Block()
    m.scale = nn.Parameter(tensor.zeros(2))  # replaces in place, same position
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["scale"]
    m.scale = None
    assert m.scale is None and list(m.named_parameters(recurse=False)) == []
    m.fc = nn.Linear(3, 4)
    assert [n for n, _ in m.named_children()] == ["fc", "inner"]
    m.steps = tensor.tensor(5)
    assert m.state_dict()["steps"].item() == 5
    del m.inner
    assert not hasattr(m, "inner") and [n for n, _ in m.named_children()] == ["fc"]
    m.extra = nn.Buffer(tensor.ones(3), persistent=False)
    assert "extra" in dict(m.named_buffers()) and "extra" not in m.state_dict()


def test_train_eval_propagate():
    m = Block()
    assert m.training and m.inner[0].training
    assert m.eval() is m
    assert not any(mod.training for mod in m.modules())
    m.train()
    assert all(mod.training for mod in m.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")


def test_to_dtype_casts_floating_members_in_place():
    m = Block()
    weight = m.fc.weight
    m.fc.weight.grad = tensor.ones(2, 3)
    assert m.to(tensor.float64) is m
    assert m.fc.weight is weight and isinstance(weight, nn.Parameter) and weight.requires_grad
    assert weight.dtype is tensor.float64 and weight.grad.dtype is tensor.float64
    assert m.steps.dtype is tensor.int64  # integer buffers keep their dtype
    assert m.cache.dtype is tensor.float64
    assert m.float().scale.dtype is tensor.float32
    assert m.double()(tensor.ones(1, 3, dtype=tensor.float64)).dtype is tensor.float64
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes"):
        m.to(tensor.int64)


def test_to_reads_its_arguments_as_tensor_to(torch):
    m = Block()
    assert m.to("cpu", tensor.float64, True).fc.weight.dtype is tensor.float64  # True: non_blocking
    assert m.to(tensor.ones(1, dtype=tensor.float32)).fc.weight.dtype is tensor.float32
    assert m.to(device=None, dtype=tensor.float64, non_blocking=True).cache.dtype is tensor.float64
    for module in (m, torch.nn.Linear(2, 2)):
        with pytest.raises(RuntimeError, match=r"\.to\(\) does not accept copy argument"):
            module.to(copy=True)
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        m.to(memory="cpu")


def test_zero_grad():
    m = Block()
    m(tensor.randn(4, 3)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_requires_grad_and_apply_order():
    m = Block()
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    seen = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen == ["Linear", "Linear", "ReLU", "Sequential", "Block"]


def test_load_state_dict_roundtrip():
    source, target = Block(), Block()
    with tensor.no_grad():
        source.fc.weight.mul_(3)
        source.steps.fill_(7)
    result = target.load_state_dict(source.state_dict())
    assert repr(result) == "<All keys matched successfully>"
    assert_close(target.fc.weight, source.fc.weight.detach().numpy())
    assert target.steps.item() == 7
    assert target.fc.weight.is_leaf and isinstance(target.fc.weight, nn.Parameter)


def _torch_message(torch, fn):
    try:
        fn()
    except RuntimeError as exc:
        return str(exc).replace("torch.Size(", "").replace("])", "]")
    raise AssertionError("torch did not raise")


@pytest.mark.parametrize("state", [
    {"0.weight": np.ones((3, 3), np.float32), "0.bias": np.ones(3, np.float32), "extra": np.ones(1, np.float32)},
    {"0.weight": np.ones((3, 2), np.float32)},
    {"0.weight": np.ones((3, 2), np.float32), "0.bias": np.ones(3, np.float32), "a": np.ones(1, np.float32),
     "b": np.ones(1, np.float32)},
])
def test_strict_load_errors_match_torch(torch, state):
    ours, theirs = nn.Sequential(nn.Linear(2, 3)), torch.nn.Sequential(torch.nn.Linear(2, 3))
    with pytest.raises(RuntimeError) as info:
        ours.load_state_dict({k: tensor.tensor(v) for k, v in state.items()})
    expected = _torch_message(torch, lambda: theirs.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}))
    assert str(info.value) == expected


def test_non_strict_load_reports_keys_like_torch(torch):
    ours, theirs = nn.Sequential(nn.Linear(2, 3)), torch.nn.Sequential(torch.nn.Linear(2, 3))
    state = {"0.weight": np.full((3, 2), 2.0, np.float32), "x": np.ones(1, np.float32)}
    result = ours.load_state_dict({k: tensor.tensor(v) for k, v in state.items()}, strict=False)
    ref = theirs.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=False)
    assert result.missing_keys == ref.missing_keys == ["0.bias"]
    assert result.unexpected_keys == ref.unexpected_keys == ["x"]
    assert repr(result) == repr(ref)
    assert_close(ours[0].weight, state["0.weight"])
    # Size mismatches are errors even when not strict.
    msg = "size mismatch for 0.weight: copying a param with shape \\[3, 3\\] from checkpoint, the shape in " \
          "current model is \\[3, 2\\]."
    with pytest.raises(RuntimeError, match=msg):
        ours.load_state_dict({"0.weight": tensor.ones(3, 3)}, strict=False)
    with pytest.raises(RuntimeError, match='While copying the parameter named "0.weight", expected Tensor'):
        ours.load_state_dict({"0.weight": 3, "0.bias": tensor.ones(3)})
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>."):  # torch's words
        ours.load_state_dict([1])


def test_forward_hooks_modify_and_remove():
    m = nn.Linear(2, 2)
    calls = []
    pre = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    post = m.register_forward_hook(lambda mod, args, out: calls.append(args[0].sum().item()) or out + 1)
    out = m(tensor.ones(1, 2))
    assert calls == [0.0]
    assert_close(out, (m.bias.detach() + 1).numpy().reshape(1, 2))
    pre.remove()
    post.remove()
    assert_close(m(tensor.zeros(1, 2)), m.bias.detach().numpy().reshape(1, 2))
    assert calls == [0.0]


def test_repr_matches_torch(torch):
    ours = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10))
    theirs = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    assert str(ours) == str(theirs)

    class Custom(nn.Module):
        def __init__(self, with_child):
            super().__init__()
            if with_child:
                self.child = nn.Tanh()

        def extra_repr(self):
            return "first=1,\nsecond=2"

    class TorchCustom(torch.nn.Module):
        def __init__(self, with_child):
            super().__init__()
            if with_child:
                self.child = torch.nn.Tanh()

        def extra_repr(self):
            return "first=1,\nsecond=2"

    for with_child in (False, True):
        ours_text = repr(Custom(with_child)).replace("Custom", "X")
        assert ours_text == repr(TorchCustom(with_child)).replace("TorchCustom", "X")
    assert repr(nn.Module()) == "Module()"


def test_parameter_basics():
    p = nn.Parameter(tensor.ones(2, 3))
    assert p.requires_grad and p.is_leaf and isinstance(p, tensor.Tensor)
    assert not nn.Parameter(tensor.ones(2), requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    assert repr(p).startswith("Parameter containing:\ntensor(")
    source = tensor.zeros(2)
    shared = nn.Parameter(source)
    source[0] = 5.0
    assert shared[0].item() == 5.0  # shares storage with its data
    with pytest.raises(TypeError, match="Parameter expects a Tensor as data, got list"):
        nn.Parameter([1.0])


def test_forward_must_be_defined():
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        nn.Module()(tensor.ones(1))


class _Early(nn.Module):
    def __init__(self, value):
        self.value = value
        super().__init__()


@pytest.mark.parametrize("call, error, message", [
    (lambda m: m.register_buffer("a.b", tensor.ones(1)), KeyError, 'buffer name can\'t contain "."'),
    (lambda m: m.register_buffer("", tensor.ones(1)), KeyError, 'buffer name can\'t be empty string ""'),
    (lambda m: m.register_buffer("weight", tensor.ones(1)), KeyError, "attribute 'weight' already exists"),
    (lambda m: m.register_buffer("fc", tensor.ones(1)) or m.register_parameter("fc", None), KeyError,
     "attribute 'fc' already exists"),
    (lambda m: m.register_buffer("x", 3), TypeError, "cannot assign 'int' object to buffer 'x'"),
    (lambda m: m.register_buffer(1, tensor.ones(1)), TypeError, "buffer name should be a string. Got int"),
    (lambda m: m.register_parameter("a.b", None), KeyError, 'parameter name can\'t contain "."'),
    (lambda m: m.register_parameter("", None), KeyError, 'parameter name can\'t be empty string ""'),
    (lambda m: m.register_parameter("buf", None), KeyError, "attribute 'buf' already exists"),
    (lambda m: m.register_parameter("x", tensor.ones(1)), TypeError,
     "cannot assign 'Tensor' object to parameter 'x' \\(nn.Parameter or None required\\)"),
    (lambda m: m.add_module("a.b", nn.ReLU()), KeyError, 'module name can\'t contain ".", got: a.b'),
    (lambda m: m.add_module("weight", nn.ReLU()), KeyError, "attribute 'weight' already exists"),
    (lambda m: m.add_module("x", 3), TypeError, "int is not a Module subclass"),
    (lambda m: setattr(m, "weight", tensor.ones(2)), TypeError,
     "cannot assign 'Tensor' as parameter 'weight' \\(nn.Parameter or None expected\\)"),
    (lambda m: setattr(m, "buf", 3), TypeError, "cannot assign 'int' as buffer 'buf'"),
    (lambda m: m.get_submodule("a.b"), AttributeError, "Linear has no attribute `a`"),
    (lambda m: m.get_parameter("buf"), AttributeError, "`buf` is not an nn.Parameter"),
    (lambda m: m.nope, AttributeError, "'Linear' object has no attribute 'nope'"),
    (lambda m: _Early(nn.Parameter(tensor.ones(1))), AttributeError,
     r"cannot assign parameters before Module.__init__\(\) call"),
    (lambda m: _Early(nn.ReLU()), AttributeError, r"cannot assign module before Module.__init__\(\) call"),
])
def test_registration_errors_match_torch(call, error, message):
    m = nn.Linear(2, 2)
    m.register_buffer("buf", tensor.ones(1))
    if error is KeyError:  # str(KeyError) quotes and escapes its message: compare the message itself
        with pytest.raises(KeyError) as info:
            call(m)
        assert info.value.args[0] == message
        return
    with pytest.raises(error, match=message):
        call(m)


def test_plain_attributes_may_be_set_before_init():
    assert _Early(3).value == 3


def _submodule_story(lib, lib_nn):
    model = lib_nn.Sequential(lib_nn.BatchNorm1d(2), lib_nn.Linear(2, 2))
    out = [tuple(model.get_buffer("0.running_mean").shape)]
    for target in ("0.weight", "0.nope", "1"):
        try:
            model.get_buffer(target)
            out.append("ok")
        except AttributeError as exc:
            out.append(str(exc))
    model.set_submodule("1", lib_nn.ReLU())
    out.append(type(model[1]).__name__)
    for args in (("0.weight", lib_nn.ReLU()), ("", lib_nn.ReLU()), ("2", lib_nn.ReLU(), True), ("x.y", lib_nn.ReLU())):
        try:
            model.set_submodule(*args)
            out.append("ok")
        except (AttributeError, ValueError) as exc:
            out.append((type(exc).__name__, str(exc)))
    out.append(str(model.bfloat16()[0].weight.dtype).split(".")[-1])
    return out


def test_get_buffer_set_submodule_bfloat16():
    story = _submodule_story(tensor, nn)
    assert story[0] == (2,) and story[1] == "`weight` is not a buffer" and story[4] == "ReLU"
    assert story[-1] == "bfloat16"


def test_get_buffer_set_submodule_bfloat16_as_torch(torch):
    assert _submodule_story(tensor, nn) == _submodule_story(torch, torch.nn)


def test_to_empty_makes_uninitialised_tensors_of_the_same_shapes():
    model = nn.Linear(3, 2)
    weight = model.weight
    model.to_empty(device="cpu")
    assert model.weight is weight and model.weight.shape == (2, 3) and model.bias.shape == (2,)
    model.load_state_dict({"weight": tensor.ones(2, 3), "bias": tensor.zeros(2)})
    assert model(tensor.ones(1, 3)).tolist() == [[3.0, 3.0]]


def _hook_log(lib, lib_nn):
    """The calls a Linear's forward hooks with every option see, in order (for torch and ours)."""
    log = []
    m = lib_nn.Linear(2, 2)
    m.register_forward_hook(lambda mod, a, kw, out: log.append(("kwargs hook", sorted(kw))), with_kwargs=True)
    m.register_forward_hook(lambda mod, a, out: log.append("prepended hook"), prepend=True)
    m.register_forward_pre_hook(lambda mod, a, kw: log.append(("kwargs pre", sorted(kw))), with_kwargs=True)
    m.register_forward_pre_hook(lambda mod, a: log.append("prepended pre"), prepend=True)
    m(lib.ones(1, 2))
    return log


def test_forward_hook_options_match_torch(torch):
    assert _hook_log(tensor, nn) == _hook_log(torch, torch.nn)


class _Scaled(nn.Module):
    def forward(self, x, scale=1.0):
        if scale < 0:
            raise ValueError("negative scale")
        return x * scale


def test_with_kwargs_pre_hook_replaces_args_and_kwargs():
    m = _Scaled()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": 3.0}), with_kwargs=True)
    assert m(tensor.ones(1)).tolist() == [3.0]
    bad = _Scaled()
    bad.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="must return None or a tuple of"):
        bad(tensor.ones(1))


def test_always_call_hook_runs_when_forward_raises():
    log = []
    m = _Scaled()
    m.register_forward_hook(lambda mod, args, out: log.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, args, out: log.append("ordinary"))
    with pytest.raises(ValueError, match="negative scale"):
        m(tensor.ones(1), scale=-1.0)
    assert log == [("always", None)]
    handle = m.register_forward_hook(lambda *a: None, with_kwargs=True, always_call=True)
    handle.remove()
    assert len(m._forward_hooks_with_kwargs) == 0 and len(m._forward_hooks_always_called) == 1


def _global_hook_log(lib, lib_nn):
    log = []
    module_hooks = lib_nn.modules.module
    handles = [module_hooks.register_module_forward_pre_hook(lambda mod, a: log.append("pre " + type(mod).__name__)),
               module_hooks.register_module_forward_hook(lambda mod, a, out: log.append(type(mod).__name__))]
    model = lib_nn.Sequential(lib_nn.Linear(2, 2), lib_nn.ReLU())
    model(lib.ones(1, 2))
    for handle in handles:
        handle.remove()
    model(lib.ones(1, 2))  # nothing logged once removed
    return log


def test_global_forward_hooks_match_torch(torch):
    assert _global_hook_log(tensor, nn) == _global_hook_log(torch, torch.nn)


def _registration_log(lib, lib_nn):
    log = []
    module_hooks = lib_nn.modules.module
    handles = [
        module_hooks.register_module_parameter_registration_hook(lambda mod, name, p: log.append(("param", name))),
        module_hooks.register_module_buffer_registration_hook(lambda mod, name, b: log.append(("buffer", name))),
        module_hooks.register_module_module_registration_hook(lambda mod, name, m: log.append(("module", name))),
    ]
    lib_nn.BatchNorm1d(2)
    holder = lib_nn.Module()
    holder.child = lib_nn.ReLU()
    holder.register_buffer("b", None)
    holder.b = lib.ones(1)
    for handle in handles:
        handle.remove()
    lib_nn.Linear(1, 1)
    return log


def test_global_registration_hooks_match_torch(torch):
    assert _registration_log(tensor, nn) == _registration_log(torch, torch.nn)


def test_registration_hook_may_replace_the_value():
    replacement = nn.Parameter(tensor.zeros(1))
    handle = nn.modules.module.register_module_parameter_registration_hook(lambda mod, name, p: replacement)
    try:
        m = nn.Module()
        m.p = nn.Parameter(tensor.ones(1))
    finally:
        handle.remove()
    assert m.p is replacement


def test_missing_module_methods(torch):
    m = nn.Linear(2, 2)
    assert m._get_name() == "Linear"
    assert m.type(tensor.float64) is m and m.weight.dtype == tensor.float64
    shared = nn.Linear(1, 1)
    ours = len(list(nn.Sequential(shared, shared).modules(remove_duplicate=False)))
    theirs_shared = torch.nn.Linear(1, 1)
    assert ours == len(list(torch.nn.Sequential(theirs_shared, theirs_shared).modules(remove_duplicate=False))) == 3


def test_to_complex_dtype_casts_floating_members():
    m = nn.Linear(2, 2)
    m.register_buffer("steps", tensor.tensor(3))
    m.to(tensor.complex64)
    assert m.weight.dtype == tensor.complex64 and m.steps.dtype == tensor.int64


@pytest.mark.parametrize("call, error, message", [
    (lambda: setattr(nn.Linear(1, 1), "weight", nn.ReLU()), TypeError, "cannot assign 'ReLU' as parameter 'weight'"),
    (lambda: nn.Sequential(nn.ReLU()).set_submodule("0", 5), ValueError, "is not an nn.Module"),
    (lambda: nn.Sequential(nn.ReLU()).get_submodule(0), AttributeError, "has no attribute 'split'"),
    (lambda: nn.Linear(1, 1).requires_grad_(1), TypeError, "must be bool, not int"),
])
def test_errors_match_torch_types(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_buffer_marker_is_unwrapped_and_digit_names_are_not_in_dir():
    m = nn.Module()
    m.x = nn.Buffer(tensor.ones(1))
    assert type(m.x) is tensor.Tensor and "x" in m._buffers
    assert not any(name[0].isdigit() for name in dir(nn.Sequential(nn.ReLU())))


def test_zero_grad_keeps_the_grad_tensor():
    m = nn.Linear(2, 2)
    m(tensor.ones(1, 2)).sum().backward()
    grad = m.weight.grad
    m.zero_grad(set_to_none=False)
    assert m.weight.grad is grad and float(grad.abs().sum()) == 0.0


def test_deepcopy_of_a_parameter_drops_its_grad():
    import copy

    p = nn.Parameter(tensor.ones(2))
    p.grad = tensor.ones(2)
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q.requires_grad and q.grad is None
    assert q is not p and q.tolist() == [1.0, 1.0]
