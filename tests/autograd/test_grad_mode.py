"""Grad modes: no_grad, enable_grad, set_grad_enabled and inference_mode as context
managers and decorators, their nesting, and their thread-locality."""

from __future__ import annotations

import threading

import pytest

import autograd
import tensor


def _records(device) -> bool:
    """Whether an op on a tensor that requires grad is recorded right now."""
    x = tensor.ones(1, device=device, requires_grad=True)
    return (x * 2).requires_grad


@pytest.fixture(autouse=True)
def _grad_mode_restored():
    yield
    assert tensor.is_grad_enabled(), "a test leaked a disabled grad mode"
    assert not autograd.is_inference_mode_enabled()


# Each factory makes a fresh context; `expected` is whether ops record inside it.
CONTEXTS = [
    ("no_grad", lambda: tensor.no_grad(), False),
    ("autograd.no_grad", lambda: autograd.no_grad(), False),
    ("set_grad_enabled(False)", lambda: tensor.set_grad_enabled(False), False),
    ("set_grad_enabled(True)", lambda: tensor.set_grad_enabled(True), True),
    ("inference_mode()", lambda: tensor.inference_mode(), False),
    ("inference_mode(False)", lambda: tensor.inference_mode(False), True),
    ("enable_grad", lambda: tensor.enable_grad(), True),
]


@pytest.mark.parametrize(("name", "make", "expected"), CONTEXTS, ids=[c[0] for c in CONTEXTS])
def test_context_manager_sets_and_restores_mode(device, name, make, expected):
    with make():
        assert _records(device) is expected
        assert tensor.is_grad_enabled() is expected
    assert _records(device)


@pytest.mark.parametrize(("name", "make", "expected"), CONTEXTS, ids=[c[0] for c in CONTEXTS])
def test_decorator_sets_mode_inside_the_function_only(device, name, make, expected):
    @make()
    def inner(a, *, scale):
        """Docstring kept by functools.wraps."""
        return _records(device), a * scale

    recorded, value = inner(2, scale=3)
    assert recorded is expected
    assert value == 6
    assert inner.__doc__ == "Docstring kept by functools.wraps."
    assert _records(device)


@pytest.mark.parametrize("make", [tensor.no_grad, autograd.no_grad])
def test_decorator_instance_is_reusable(device, make):
    context = make()

    @context
    def f():
        return _records(device)

    assert f() is False
    assert f() is False, "the decorator must be reusable (a fresh context per call)"


def test_enable_grad_inside_no_grad(device):
    with tensor.no_grad():
        assert not _records(device)
        with tensor.enable_grad():
            assert _records(device)
        assert not _records(device)
    assert _records(device)


def test_mode_restored_when_body_raises(device):
    with pytest.raises(ValueError, match="boom"):
        with tensor.no_grad():
            raise ValueError("boom")
    assert _records(device)


def test_set_grad_enabled_as_a_function_takes_effect_immediately(device):
    try:
        tensor.set_grad_enabled(False)
        assert not _records(device)
    finally:
        tensor.set_grad_enabled(True)
    assert _records(device)


def test_inference_mode_marks_created_tensors(device):
    with tensor.inference_mode():
        assert autograd.is_inference_mode_enabled()
        t = tensor.ones(2, device=device)
        assert t.is_inference()
    assert not tensor.ones(2, device=device).is_inference()


def _inference_cases(lib, device):
    """Which tensors are inference tensors, made by ``lib`` (ours or torch) the same way."""
    a = lib.ones(3, device=device, requires_grad=True)
    b = lib.ones(3, device=device)
    with lib.inference_mode():
        made = {"op on a grad input": a * 2, "op": b + 1, "created": lib.ones(2, device=device),
                "view of a normal tensor": b[:2], "detach of a normal tensor": a.detach()}
        made["view of an inference tensor"] = made["created"][:1]
        b.add_(1)  # a normal tensor may be written in place inside the region
    made["op outside on an inference tensor"] = made["created"] + 1
    made["detach of an inference tensor"] = made["created"].detach()
    made["clone of an inference tensor"] = made["created"].clone()
    return {name: t.is_inference() for name, t in made.items()}


def test_inference_tensors_as_torch(device, torch):
    """Op results and created tensors are inference tensors; views are what their base is."""
    ours = _inference_cases(tensor, device)
    assert ours == _inference_cases(torch, "cpu")
    assert ours["op on a grad input"] and not ours["view of a normal tensor"]  # not all alike


def _outside_uses(lib, device):
    """What each use of an inference tensor outside the region raises (None: nothing)."""
    a = lib.ones(3, device=device, requires_grad=True)
    with lib.inference_mode():
        c = lib.ones(3, device=device)
    uses = {
        "add_": lambda: c.add_(1),
        "setitem": lambda: c.__setitem__(0, 5.0),
        "zero_": lambda: c.zero_(),
        "copy_": lambda: c.copy_(a.detach()),
        "in place on its view": lambda: c[:2].mul_(2),
        "requires_grad_": lambda: c.requires_grad_(),
        "saved by mul": lambda: (c * a).sum().backward(),
        "read by add, not saved": lambda: (c + a).sum().backward(),
    }
    raised = {}
    for name, use in uses.items():
        try:
            use()
            raised[name] = None
        except RuntimeError as exc:
            raised[name] = str(exc).split(" ")[0]
    return raised


def test_inference_tensor_uses_outside_the_region_as_torch(device, torch):
    """In-place writes, requires_grad_ and saving for backward raise; a read that saves nothing works."""
    ours = _outside_uses(tensor, device)
    assert ours == _outside_uses(torch, "cpu")
    assert ours["add_"] == "Inplace" and ours["saved by mul"] == "Inference" and ours["read by add, not saved"] is None


def test_inference_tensor_may_be_written_inside_the_region(device):
    with tensor.inference_mode():
        c = tensor.ones(3, device=device)
    with tensor.inference_mode():
        c.add_(1)
    assert c.tolist() == [2.0, 2.0, 2.0]


def test_no_grad_inside_inference_mode_keeps_inference(device):
    with tensor.inference_mode():
        with tensor.no_grad():
            assert autograd.is_inference_mode_enabled()
        assert autograd.is_inference_mode_enabled()


def test_grad_mode_is_thread_local(device):
    """A thread started inside no_grad runs with the default (recording) mode."""
    results = {}

    def worker():
        results["records"] = _records(device)
        with tensor.no_grad():
            results["inner"] = _records(device)

    with tensor.no_grad():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert not _records(device), "the worker's no_grad exit must not re-enable the main thread"
    assert results == {"records": True, "inner": False}


def test_inference_mode_is_thread_local(device):
    """A thread started inside inference_mode has it off, and its own inference_mode stays its own."""
    results = {}

    def worker():
        results["outer"] = (autograd.is_inference_mode_enabled(), _records(device))
        with tensor.inference_mode():
            results["inner"] = autograd.is_inference_mode_enabled()

    with tensor.inference_mode():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert autograd.is_inference_mode_enabled() and not _records(device)
    assert not autograd.is_inference_mode_enabled()
    assert results == {"outer": (False, True), "inner": True}


def test_no_grad_in_a_thread_does_not_affect_main_thread(device):
    entered, release = threading.Event(), threading.Event()
    results = {}

    def worker():
        with tensor.no_grad():
            entered.set()
            release.wait(timeout=30)

    thread = threading.Thread(target=worker)
    thread.start()
    entered.wait(timeout=30)
    results["main"] = _records(device)
    release.set()
    thread.join()
    assert results["main"] is True


def test_backward_works_after_no_grad_forward_of_constants(device):
    w = tensor.tensor([2.0], device=device, requires_grad=True)
    with tensor.no_grad():
        c = w * 10  # a constant: no history
    (w * c).sum().backward()
    assert w.grad.item() == 20.0


def test_bare_decorators_as_torch():
    """``@no_grad``, ``@enable_grad`` and ``@inference_mode`` without parentheses, as PyTorch 2 allows."""

    @tensor.no_grad
    def doubled(x):
        return x * 2

    @autograd.enable_grad
    def recorded(x):
        return x * 2

    @tensor.inference_mode
    def inferred(x):
        return x * 2

    x = tensor.ones(2, requires_grad=True)
    assert not doubled(x).requires_grad and doubled.__name__ == "doubled"
    with tensor.no_grad():
        assert recorded(x).requires_grad
    assert inferred(x).is_inference()
    assert isinstance(tensor.no_grad(), autograd.no_grad)


@pytest.mark.parametrize(
    "decorator",
    [lambda: autograd.no_grad(), lambda: autograd.set_grad_enabled(False), lambda: autograd.inference_mode()],
    ids=["no_grad", "set_grad_enabled", "inference"],
)
def test_decorated_generator_runs_every_step_in_the_mode(torch, decorator):
    """As torch's _DecoratorContextManager: each resumption runs in the mode, the caller's mode is
    back at each yield."""

    @decorator()
    def steps():
        for _ in range(2):
            yield _records("cpu")

    gen = steps()
    assert next(gen) is False
    assert _records("cpu")
    assert next(gen) is False
    with pytest.raises(StopIteration):
        next(gen)


def test_inplace_through_a_view_made_in_no_grad_raises_as_torch(torch):
    for mod in (torch, tensor):
        for make in (lambda m: m.ones(3, requires_grad=True), lambda m: m.ones(3, requires_grad=True) * 1):
            x = make(mod)
            with mod.no_grad():
                v = x[:2]
            with pytest.raises(RuntimeError, match="created in no_grad mode"):
                v.mul_(10)
            with mod.no_grad():
                v.mul_(10)  # both in no_grad: allowed
    plain = tensor.ones(3)
    with tensor.no_grad():
        v = plain[:2]
    v.mul_(2)  # a base that does not require grad: allowed
    assert plain.tolist() == [2.0, 2.0, 1.0]
