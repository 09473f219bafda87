"""``tensor.utils.dlpack`` (tensor/_dlpack.py): DLPack capsules to and from torch and numpy, as
``torch.utils.dlpack`` has them."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from tensor.utils import dlpack


def test_our_capsule_becomes_a_torch_tensor_on_the_same_memory(torch):
    x = tensor.arange(6.0).reshape(2, 3)
    shared = torch.utils.dlpack.from_dlpack(dlpack.to_dlpack(x))
    assert tuple(shared.shape) == (2, 3) and shared.data_ptr() == x.data_ptr()
    shared[0, 1] = 100.0
    assert x[0, 1].item() == 100.0


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_torchs_capsule_becomes_our_tensor(torch, dtype):
    source = torch.tensor(np.arange(6).reshape(3, 2) % 2 == 1 if dtype == "bool" else np.arange(6.0).reshape(3, 2))
    source = source.to(getattr(torch, dtype))
    ours = dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(source))
    assert str(ours.dtype).split(".")[-1] == dtype and ours.data_ptr() == source.data_ptr()
    np.testing.assert_array_equal(ours.numpy(), source.numpy())


def test_numpys_capsules_legacy_and_versioned():
    for capsule in (np.arange(3.0).__dlpack__(), np.arange(3.0).__dlpack__(max_version=(1, 0))):
        np.testing.assert_array_equal(tensor.from_dlpack(capsule).numpy(), [0.0, 1.0, 2.0])


def test_a_capsule_is_consumed_once_as_in_torch(torch):
    for lib, module in ((tensor, dlpack), (torch, torch.utils.dlpack)):
        capsule = module.to_dlpack(lib.ones(2))
        module.from_dlpack(capsule)
        with pytest.raises(RuntimeError, match="consumed only once"):
            module.from_dlpack(capsule)


def test_errors():
    with pytest.raises(RuntimeError, match="require gradient"):
        dlpack.to_dlpack(tensor.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match="DLPack capsule or an object with __dlpack__"):
        dlpack.from_dlpack([1, 2])


def test_device_types_are_torchs(torch):
    assert {d.name: int(d) for d in dlpack.DLDeviceType}.items() <= {
        d.name: int(d) for d in torch.utils.dlpack.DLDeviceType
    }.items()


def test_capsules_on_every_device(device):
    x = tensor.arange(4.0, device=device)
    back = dlpack.from_dlpack(dlpack.to_dlpack(x))
    assert back.device == x.device and back.data_ptr() == x.data_ptr()
