"""PyTorch's factory keywords on our creation functions (tensor/_factory.py): size=, layout=,
pin_memory=; and tensor.layout / tensor.strided. Against torch where installed."""

from __future__ import annotations

import pickle

import pytest

import tensor
from tests.conftest import CUDA_SKIP_REASON

CASES = [
    "T.zeros(2, layout=T.strided)", "T.zeros(2, pin_memory=False)", "T.tensor([1.0], pin_memory=False)",
    "T.randn(2, pin_memory=False)", "T.arange(3, layout=T.strided)", "T.full((2,), 1.0, layout=T.strided)",
    "T.zeros_like(T.ones(2), layout=T.strided)", "T.eye(2, layout=T.strided)", "T.linspace(0, 1, 3, layout=T.strided)",
    "T.rand(2, layout=T.strided)", "T.empty(2, 3, layout=T.strided, requires_grad=True)", "T.zeros(size=(2, 3))",
    "T.ones(size=(2,))", "T.randn(size=(2,))", "T.empty(size=(2,))", "T.ones(2).new_zeros(size=(3,))",
    "T.randint(0, 3, (2,), layout=T.strided)", "T.randperm(3, pin_memory=False)",
    "T.rand_like(T.ones(2), layout=T.strided)",
]


def _made(lib, expression):
    try:
        out = eval(expression, {"T": lib})  # noqa: S307
    except (TypeError, RuntimeError) as exc:
        return type(exc).__name__
    return tuple(out.shape), str(out.dtype).split(".")[-1], out.requires_grad


@pytest.mark.parametrize("expression", CASES)
def test_factory_keywords(expression):
    assert not isinstance(_made(tensor, expression), str), expression


@pytest.mark.parametrize("expression", [*CASES, "T.zeros(2, size=(2,))", "T.zeros(2, layout=3)"])
def test_factory_keywords_as_torch(torch, expression):
    assert _made(tensor, expression) == _made(torch, expression)


def test_layout():
    assert repr(tensor.strided) == "tensor.strided" and isinstance(tensor.strided, tensor.layout)
    assert pickle.loads(pickle.dumps(tensor.strided)) is tensor.strided
    with pytest.raises(TypeError, match="must be tensor.layout, not int"):
        tensor.zeros(2, layout=3)


@pytest.mark.skipif(CUDA_SKIP_REASON is None, reason="a CUDA device is present: pinning works there")
def test_pin_memory_needs_a_gpu():
    with pytest.raises(RuntimeError, match="none is available"):
        tensor.ones(2, pin_memory=True)


@pytest.mark.gpu
@pytest.mark.skipif(CUDA_SKIP_REASON is not None, reason=f"no CUDA device: {CUDA_SKIP_REASON}")
def test_pin_memory_with_a_gpu():
    t = tensor.ones(3, pin_memory=True, requires_grad=True)
    assert t.is_pinned() and t.requires_grad and t.device.type == "cpu"
