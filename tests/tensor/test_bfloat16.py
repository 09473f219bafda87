"""bfloat16 math and the float8 storage types (ml_dtypes), against torch; checkpoints of them."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from tests.conftest import CUDA_SKIP_REASON

BF16_ULP = 2.0**-7  # bfloat16 has 8 significant bits: one unit in the last place, relative


def _data(seed=0, shape=(4, 5)):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _pair(torch, array):
    return (tensor.from_numpy(array).to(tensor.bfloat16), torch.from_numpy(array).to(torch.bfloat16))


def _close(ours, theirs, rtol=BF16_ULP):
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), (ours.dtype, theirs.dtype)
    expected = theirs.float().numpy()
    np.testing.assert_allclose(ours.float().numpy(), expected, rtol=rtol, atol=rtol * np.abs(expected).max())


def test_conversions_round_to_nearest_even_as_torch(torch):
    values = np.array([1.0, 1.00390625, 1.01171875, -3.3, 65504.0, 1e-40, np.inf, np.nan], np.float32)
    for name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        ours = tensor.from_numpy(values).to(getattr(tensor, name)).float().numpy()
        theirs = torch.from_numpy(values).to(getattr(torch, name)).float().numpy()
        np.testing.assert_array_equal(ours, theirs, err_msg=name)


@pytest.mark.parametrize("op", ["add", "mul", "sub", "div", "maximum"])
def test_binary_ops_match_torch(torch, op):
    (a, ta), (b, tb) = _pair(torch, _data(0)), _pair(torch, _data(1))
    _close(getattr(tensor, op)(a, b), getattr(torch, op)(ta, tb))
    _close(a * 2.5 + 1.0, ta * 2.5 + 1.0)


@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid", "relu", "neg", "abs", "sqrt"])
def test_unary_ops_match_torch(torch, op):
    a, ta = _pair(torch, np.abs(_data()) if op == "sqrt" else _data())
    _close(getattr(a, op)(), getattr(ta, op)())


def test_gemm_and_reductions_accumulate_in_float32_as_torch(torch):
    (a, ta), (b, tb) = _pair(torch, _data(0, (16, 300))), _pair(torch, _data(1, (300, 8)))
    _close(a @ b, ta @ tb)
    _close(a.sum(1), ta.sum(1))
    _close(a.mean(), ta.mean())
    _close(a.cumsum(1), ta.cumsum(1), rtol=4 * BF16_ULP)
    ones = tensor.ones(10000, dtype=tensor.bfloat16)
    assert ones.sum().item() == torch.ones(10000, dtype=torch.bfloat16).sum().item() == 9984.0


def test_softmax_and_gradients_in_bfloat16(torch):
    a, ta = _pair(torch, _data())
    a.requires_grad_(True)
    ta.requires_grad_(True)
    (a.softmax(-1) * a).sum().backward()
    (ta.softmax(-1) * ta).sum().backward()
    assert a.grad.dtype is tensor.bfloat16
    _close(a.grad, ta.grad, rtol=8 * BF16_ULP)


def test_repr_names_the_dtype():
    assert repr(tensor.tensor([1.5, 2.0], dtype=tensor.bfloat16)) == ("tensor([1.5000, 2.0000], dtype=tensor.bfloat16)")
    assert repr(tensor.ones(2, dtype=tensor.float8_e5m2)) == "tensor([1., 1.], dtype=tensor.float8_e5m2)"


def test_float8_is_storage_only_in_promotion():
    x = tensor.ones(2, dtype=tensor.float8_e4m3fn)
    with pytest.raises(RuntimeError, match="Promotion for Float8 Types is not supported"):
        x + tensor.ones(2)
    assert x.to(tensor.float32).dtype is tensor.float32
    assert x.is_floating_point()


def test_float8_gemms_and_reductions_raise_as_torch(torch):
    ours, theirs = tensor.ones(4, dtype=tensor.float8_e5m2), torch.ones(4, dtype=torch.float8_e5m2)
    for name, fn in (("sum", lambda t: t.sum()), ("matmul", lambda t: t @ t)):
        with pytest.raises(NotImplementedError):
            fn(theirs)
        with pytest.raises(NotImplementedError, match=f"{name} is not implemented for float8_e5m2"):
            fn(ours)


@pytest.mark.parametrize("fmt", ["distrib", "safetensors", "torch"])
def test_checkpoints_round_trip(tmp_path, fmt):
    obj = {"w": tensor.from_numpy(_data()).to(tensor.bfloat16)}
    if fmt != "torch":  # torch writes float8 through untyped storages; our torch writer refuses them
        obj.update(a=tensor.ones(3, dtype=tensor.float8_e4m3fn), b=tensor.ones(3, dtype=tensor.float8_e5m2))
    path = tmp_path / f"x.{fmt}"
    tensor.save(obj, path, format=fmt)
    back = tensor.load(path)
    for key, value in obj.items():
        assert back[key].dtype is value.dtype
        np.testing.assert_array_equal(back[key].float().numpy(), value.float().numpy())


def test_torch_reads_and_writes_bfloat16_checkpoints(torch, tmp_path):
    from safetensors.torch import load_file, save_file

    ours = tensor.from_numpy(_data()).to(tensor.bfloat16)
    tensor.save({"w": ours}, tmp_path / "a.pt", format="torch")
    tensor.save({"w": ours}, tmp_path / "a.safetensors")
    for theirs in (torch.load(tmp_path / "a.pt")["w"], load_file(tmp_path / "a.safetensors")["w"]):
        assert theirs.dtype is torch.bfloat16
        np.testing.assert_array_equal(theirs.float().numpy(), ours.float().numpy())
    written = {"w": torch.randn(3, 4).to(torch.bfloat16), "f": torch.randn(3).to(torch.float8_e4m3fn)}
    torch.save(written, tmp_path / "t.pt")
    save_file(written, tmp_path / "t.safetensors")
    for path in ("t.pt", "t.safetensors"):
        back = tensor.load(tmp_path / path)
        for key, value in written.items():
            assert back[key].dtype.name == str(value.dtype).removeprefix("torch.")
            np.testing.assert_array_equal(back[key].float().numpy(), value.float().numpy())
    with pytest.raises(TypeError, match="float8_e5m2"):
        tensor.save({"f": tensor.ones(2, dtype=tensor.float8_e5m2)}, tmp_path / "f.pt", format="torch")


@pytest.mark.gpu
@pytest.mark.skipif(CUDA_SKIP_REASON is not None, reason=f"no CUDA device: {CUDA_SKIP_REASON}")
def test_cuda_refuses_bfloat16_by_name():
    for make in (
        lambda: tensor.ones(2, dtype=tensor.bfloat16).to("cuda"),
        lambda: tensor.ones(2, dtype=tensor.bfloat16, device="cuda"),
        lambda: tensor.ones(2, device="cuda").to(tensor.float8_e4m3fn),
    ):
        with pytest.raises(TypeError, match="is not supported on cuda devices"):
            make()


def test_max_pool_values_and_gradients_match_torch(torch):
    import nn.functional as F  # noqa: PLC0415 - nn above tensor: only this test needs it

    a, ta = _pair(torch, _data(0, (2, 3, 8, 8)))
    a.requires_grad_(True)
    ta.requires_grad_(True)
    out, theirs = F.max_pool2d(a, 2), torch.nn.functional.max_pool2d(ta, 2)
    (out.float() ** 2).sum().backward()
    (theirs.float() ** 2).sum().backward()
    _close(out.detach(), theirs.detach(), rtol=0)
    _close(a.grad, ta.grad, rtol=0)
