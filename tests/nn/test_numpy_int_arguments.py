"""numpy integers as layer sizes, kernel sizes and strides (computed sizes are numpy ints in real
scripts), accepted wherever PyTorch accepts them (``tensor._factory.is_int``/``as_int``)."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor

N = np.int64

CASES = [
    (lambda lib: lib.nn.Conv1d(N(3), 2, N(3)), (1, 3, 5)),
    (lambda lib: lib.nn.Conv2d(3, 2, N(3), stride=N(2)), (1, 3, 5, 5)),
    (lambda lib: lib.nn.ConvTranspose1d(3, 2, N(3)), (1, 3, 5)),
    (lambda lib: lib.nn.MaxPool2d(N(2)), (1, 1, 4, 4)),
    (lambda lib: lib.nn.AvgPool2d(N(2), stride=N(1)), (1, 1, 4, 4)),
    (lambda lib: lib.nn.ZeroPad2d(N(1)), (1, 1, 2, 2)),
    (lambda lib: lib.nn.LayerNorm(N(4)), (2, 4)),
    (lambda lib: lib.nn.RMSNorm(N(4)), (2, 4)),
    (lambda lib: lib.nn.Linear(N(4), N(2)), (2, 4)),
]


@pytest.mark.parametrize("make, shape", CASES)
def test_layers_take_numpy_ints_as_torch(make, shape, torch):
    ours, theirs = make(_Lib(tensor, nn)), make(torch)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ours.load_state_dict({k: tensor.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    got = ours(tensor.tensor(x)).detach().numpy()
    np.testing.assert_allclose(got, theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


class _Lib:
    """``lib.nn`` for our packages, as ``torch.nn`` is reached from ``torch``."""

    def __init__(self, tensor_module, nn_module) -> None:
        self.tensor, self.nn = tensor_module, nn_module
