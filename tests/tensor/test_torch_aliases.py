"""torch.X spellings of what exists under another form (tensor/_torch_aliases.py), against torch."""

import subprocess
import sys

import numpy as np
import pytest

import tensor


def _pair(torch, shape=(3, 4), seed=0, positive=False):
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    if positive:
        data = np.abs(data) + 0.5
    return tensor.tensor(data), torch.tensor(data)


def test_functional_aliases_are_nn_functional_objects_imported_lazily():
    code = (
        "import sys, tensor\n"
        "assert 'nn' not in sys.modules\n"
        "conv2d = tensor.conv2d\n"
        "import nn.functional as F\n"
        "assert conv2d is F.conv2d and tensor.pixel_shuffle is F.pixel_shuffle and tensor.relu_ is F.relu_\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_aten_signature_wrappers_match_torch(torch):
    x, tx = _pair(torch, (4, 3, 5))
    w, tw = _pair(torch, (3,), seed=1, positive=True)
    b, tb = _pair(torch, (3,), seed=2)
    rm, trm = tensor.zeros(3), torch.zeros(3)
    rv, trv = tensor.ones(3), torch.ones(3)
    ours = tensor.batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5, False)
    ref = torch.batch_norm(tx, tw, tb, trm, trv, False, 0.1, 1e-5, False)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(tensor.dropout(x, 0.5, False).numpy(), torch.dropout(tx, 0.5, False).numpy())
    weight, tweight = _pair(torch, (6, 2), seed=3)
    idx = [[0, 5], [2, 2]]
    np.testing.assert_array_equal(
        tensor.embedding(weight, tensor.tensor(idx)).numpy(), torch.embedding(tweight, torch.tensor(idx)).numpy()
    )
    y, ty = _pair(torch, (4, 3, 5), seed=4)
    for reduction in (0, 1, 2):
        np.testing.assert_allclose(
            tensor.binary_cross_entropy_with_logits(x, y.sigmoid(), None, None, reduction).numpy(),
            torch.binary_cross_entropy_with_logits(tx, ty.sigmoid(), None, None, reduction).numpy(),
            rtol=1e-5,
        )
    with pytest.raises(ValueError, match="got 3"):
        tensor.kl_div(x, y, 3)


@pytest.mark.parametrize("name,args", [("sigmoid_", ()), ("clamp_", (-0.5, 0.5)), ("fill_", (2.0,)),
                                       ("t", ()), ("select", (1, 2)), ("detach", ())])  # fmt: skip
def test_method_forms_give_the_methods_result(torch, name, args):
    x, tx = _pair(torch)
    ours, ref = getattr(tensor, name)(x, *args), getattr(torch, name)(tx, *args)
    np.testing.assert_allclose(ours.numpy(), ref.detach().numpy(), rtol=1e-6)
    if name.endswith("_"):
        assert ours is x


@pytest.mark.parametrize("name", ["cos_", "erf_", "ceil_", "expm1_", "reciprocal_", "arcsinh_"])
def test_inplace_forms_write_into_input_like_torch(torch, name):
    x, tx = _pair(torch, positive=True)
    view = x[0]
    out = getattr(tensor, name)(x)
    getattr(torch, name)(tx)
    assert out is x
    np.testing.assert_allclose(x.numpy(), tx.numpy(), rtol=1e-5)
    np.testing.assert_allclose(view.numpy(), tx[0].numpy(), rtol=1e-5)
    y, ty = _pair(torch, seed=1, positive=True)
    assert getattr(y, name)() is y  # the Tensor method, as torch's
    getattr(ty, name)()
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-5)


@pytest.mark.parametrize(
    "name,args",
    [("permute_copy", ((1, 0),)), ("view_copy", ((2, 6),)), ("t_copy", ()), ("slice_copy", (1, 1, 3)),
     ("select_copy", (0, 1)), ("unsqueeze_copy", (1,)), ("alias_copy", ()), ("split_copy", (2, 1))],
)  # fmt: skip
def test_copy_variants_new_storage_equal_values_and_gradients(torch, name, args):
    x, tx = _pair(torch)
    x.requires_grad_(True)
    tx.requires_grad_(True)
    ours, ref = getattr(tensor, name)(x, *args), getattr(torch, name)(tx, *args)
    ours_list, ref_list = (list(ours), list(ref)) if isinstance(ref, (tuple, list)) else ([ours], [ref])
    for o, r in zip(ours_list, ref_list, strict=True):
        np.testing.assert_array_equal(o.detach().numpy(), r.detach().numpy())
        assert o._base is None  # not a view
        assert not np.shares_memory(o.detach().numpy(), x.detach().numpy())
    sum(o.sum() for o in ours_list).backward()
    sum(r.sum() for r in ref_list).backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.filterwarnings("ignore:torch.*is deprecated:DeprecationWarning")
def test_autocast_legacy_spellings_toggle_state_like_torch(torch):
    for lib in (tensor, torch):
        assert not lib.is_autocast_cpu_enabled()
        lib.set_autocast_enabled("cpu", True)
        assert lib.is_autocast_cpu_enabled() and lib.is_autocast_enabled("cpu")
        lib.set_autocast_cpu_enabled(False)
        assert not lib.is_autocast_enabled("cpu")
        lib.set_autocast_cpu_dtype(lib.float16)
        assert lib.get_autocast_cpu_dtype() == lib.float16
        lib.set_autocast_dtype("cpu", lib.bfloat16)
        assert lib.get_autocast_dtype("cpu") == lib.bfloat16
        assert lib.get_autocast_gpu_dtype() == lib.float16
        assert lib.is_autocast_cache_enabled()
        lib.set_autocast_cache_enabled(False)
        assert not lib.is_autocast_cache_enabled()
        lib.set_autocast_cache_enabled(True)
        assert lib.autocast_increment_nesting() == 1 and lib.autocast_decrement_nesting() == 0
        lib.clear_autocast_cache()


def test_set_autocast_enabled_casts_outside_a_region():
    tensor.set_autocast_enabled("cpu", True)
    try:
        assert (tensor.ones(2, 3) @ tensor.ones(3, 2)).dtype is tensor.bfloat16
    finally:
        tensor.set_autocast_enabled("cpu", False)
    assert (tensor.ones(2, 3) @ tensor.ones(3, 2)).dtype is tensor.float32


@pytest.mark.filterwarnings("ignore:torch.range is deprecated:UserWarning")
@pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated:UserWarning")
def test_small_torch_functions_match_torch(torch):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 3, 3))
    spd = a @ a.transpose(0, 2, 1) + 3 * np.eye(3)
    b = rng.standard_normal((2, 3, 2))
    L, tL = tensor.linalg.cholesky(tensor.tensor(spd)), torch.linalg.cholesky(torch.tensor(spd))
    B, tB = tensor.tensor(b), torch.tensor(b)
    for upper in (False, True):
        f, tf = (L.transpose(-2, -1), tL.mT) if upper else (L, tL)
        np.testing.assert_allclose(tensor.cholesky_solve(B, f, upper).numpy(), torch.cholesky_solve(tB, tf, upper))
        np.testing.assert_allclose(tensor.cholesky_inverse(f[0], upper).numpy(), torch.cholesky_inverse(tf[0], upper))
        for transpose in (False, True):
            ours = tensor.triangular_solve(B, f, upper=upper, transpose=transpose)
            ref = torch.triangular_solve(tB, tf, upper=upper, transpose=transpose)
            np.testing.assert_allclose(ours.solution.numpy(), ref.solution, rtol=1e-6, atol=1e-10)
    for args in ((1, 4), (0, 1, 0.25), (5, 1, -2)):
        np.testing.assert_allclose(tensor.range(*args).numpy(), torch.range(*args).numpy())
    c = tensor.tensor(a[0] + 1j * a[1])
    np.testing.assert_array_equal(
        tensor.adjoint(c).numpy(), torch.adjoint(torch.tensor(a[0] + 1j * a[1])).resolve_conj().numpy()
    )
    dtypes = ("bool", "uint8", "int32", "int64", "float16", "float32", "complex64")
    for src in dtypes:
        for dst in dtypes:
            assert tensor.can_cast(getattr(tensor, src), getattr(tensor, dst)) == torch.can_cast(
                getattr(torch, src), getattr(torch, dst)
            ), (src, dst)
    v = tensor.tensor(2.0, requires_grad=True)
    tensor.fill(tensor.zeros(3), v).sum().backward()
    assert v.grad.item() == 3.0
    assert tensor.scalar_tensor(3).dtype is tensor.float32 and tensor.scalar_tensor(3).ndim == 0
    x = tensor.ones(2, 3)
    assert tensor.asarray(x) is x and tensor.asarray(x, copy=True) is not x
    with pytest.raises(ValueError, match="copy=False"):
        tensor.asarray(x, dtype=tensor.float64, copy=False)
    assert tensor.Size(x.shape) == x.shape and tensor.Size((2, 3)).numel() == torch.Size((2, 3)).numel()
    assert tensor.get_device(x) == torch.get_device(torch.ones(1)) == -1
    assert [p.shape for p in tensor.split_with_sizes(tensor.ones(5), [2, 3])] == [(2,), (3,)]
    with pytest.raises(RuntimeError, match="dimensionality of sizes"):
        tensor.empty_strided((2, 3), (1,))
    tensor.set_float32_matmul_precision("high")
    assert tensor.get_float32_matmul_precision() == "high"
    tensor.set_float32_matmul_precision("highest")
    with pytest.raises(RuntimeError, match="'fast'"):
        tensor.set_float32_matmul_precision("fast")


@pytest.mark.parametrize("name", ["FloatTensor", "LongTensor", "BoolTensor", "ByteTensor", "DoubleTensor"])
def test_legacy_typed_constructors_match_torch(torch, name):
    ours_cls, ref_cls = getattr(tensor, name), getattr(torch, name)
    assert ours_cls(2, 3).shape == tuple(ref_cls(2, 3).shape)
    assert ours_cls(tensor.Size((4,))).shape == (4,) and ours_cls().shape == (0,)
    data = [[1, 0], [3, 4]]
    ours, ref = ours_cls(data), ref_cls(data)
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    assert ours.type() == ref.type() and isinstance(ours, ours_cls) and ours_cls(ours) is ours
    assert isinstance(ref, ref_cls) and not isinstance(tensor.ones(2, dtype=tensor.int32), ours_cls)
    with pytest.raises(TypeError, match=f"expected {name}"):
        ours_cls(tensor.ones(2, dtype=tensor.int32))


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "float64", "complex64", "int8", "uint8", "int64"])
def test_finfo_iinfo_match_torch(torch, name):
    ours_dtype, ref_dtype = getattr(tensor, name), getattr(torch, name)
    if ref_dtype.is_floating_point or ref_dtype.is_complex:
        ours, ref, fields = (
            tensor.finfo(ours_dtype),
            torch.finfo(ref_dtype),
            ("eps", "tiny", "smallest_normal", "resolution"),
        )
        with pytest.raises(TypeError, match="integer"):
            tensor.iinfo(ours_dtype)
    else:
        ours, ref, fields = tensor.iinfo(ours_dtype), torch.iinfo(ref_dtype), ()
        with pytest.raises(TypeError, match="floating"):
            tensor.finfo(ours_dtype)
    for field in ("bits", "min", "max", "dtype", *fields):
        assert getattr(ours, field) == getattr(ref, field), field


def test_forms_run_on_each_device(device):
    x = tensor.tensor([[0.5, -1.0], [2.0, 0.25]], device=device, requires_grad=True)
    copy = tensor.t_copy(x)
    assert copy.device == x.device and copy._base is None
    np.testing.assert_array_equal(copy.detach().cpu().numpy(), [[0.5, 2.0], [-1.0, 0.25]])
    y = x.detach().clone()
    assert tensor.cos_(y) is y
    np.testing.assert_allclose(y.cpu().numpy(), np.cos(x.detach().cpu().numpy()), rtol=1e-6)
    np.testing.assert_allclose(tensor.cholesky_inverse(tensor.eye(2, device=device) * 2).cpu().numpy(), np.eye(2) / 4)


@pytest.mark.parametrize("length,periodic,beta", [(0, True, 12.0), (1, True, 12.0), (7, True, 12.0), (8, False, 5.0)])
def test_kaiser_window_and_constant_pad_nd_match_torch(torch, length, periodic, beta):
    ours, ref = tensor.kaiser_window(length, periodic, beta), torch.kaiser_window(length, periodic, beta)
    assert ours.dtype is tensor.float32
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-5, atol=1e-7)
    x, tx = _pair(torch, (2, 3), seed=length)
    pad = (1, length % 3, 0, 1)
    np.testing.assert_array_equal(
        tensor.constant_pad_nd(x, pad, beta).numpy(), torch.constant_pad_nd(tx, pad, beta).numpy()
    )


# (size, stride) for empty_strided, (size, physical_layout) for empty_permuted
STRIDED = [((2, 3), (1, 2)), ((2, 3, 4), (12, 1, 3)), ((0, 3), (3, 1)), ((4,), (2,)), ((2, 2), (0, 1)), ((), ())]
PERMUTED = [((2, 3, 4, 5), (0, 2, 3, 1)), ((3, 4), (1, 0)), ((2, 0, 3), (2, 0, 1)), ((5,), (0,))]


@pytest.mark.parametrize(("size", "stride"), STRIDED, ids=str)
def test_empty_strided_has_torchs_strides(torch, size, stride):
    ours, theirs = tensor.empty_strided(size, stride), torch.empty_strided(size, stride)
    assert (ours.shape, ours.stride()) == (tuple(theirs.shape), theirs.stride())
    assert ours.is_contiguous() == theirs.is_contiguous()
    if 0 not in stride:  # no element shares memory with another: writable, and each keeps its value
        ours.copy_(tensor.arange(ours.numel(), dtype=tensor.float32).reshape(size))
        assert ours.reshape(-1).tolist() == list(range(ours.numel()))


@pytest.mark.parametrize(("size", "layout"), PERMUTED, ids=str)
def test_empty_permuted_lays_out_dims_as_torch_does(torch, size, layout):
    ours, theirs = tensor.empty_permuted(size, layout), torch.empty_permuted(size, layout)
    assert (ours.shape, ours.stride()) == (tuple(theirs.shape), theirs.stride())


def test_empty_strided_errors_and_requires_grad(torch):
    for lib in (tensor, torch):
        with pytest.raises(RuntimeError):
            lib.empty_strided((2,), (-1,))
        t = lib.empty_strided((2, 2), (1, 2), requires_grad=True, dtype=lib.float64)
        assert t.requires_grad and t.is_leaf and t.dtype == lib.float64


def test_typename_is_torchs(torch):
    import nn

    assert tensor.typename(tensor.ones(2)) == torch.typename(torch.ones(2)) == "torch.FloatTensor"
    assert tensor.typename(tensor.ones(2, dtype=tensor.int64)) == torch.typename(torch.ones(2, dtype=torch.int64))
    assert tensor.typename(3) == torch.typename(3) == "int"
    assert tensor.typename(nn.Linear(2, 2)) == "nn.modules.linear.Linear"
    assert torch.typename(torch.nn.Linear(2, 2)) == "torch.nn.modules.linear.Linear"


@pytest.mark.parametrize("name", ["eig", "lstsq", "matrix_rank", "solve", "symeig"])
def test_functions_removed_from_torch_say_what_replaced_them(torch, name):
    replacement = "tensor.linalg." + {"symeig": "eigh"}.get(name, name)
    for target in (tensor, tensor.ones(2, 2)):
        with pytest.raises(RuntimeError, match=f"since version 1.9 and is now removed. Use {replacement}"):
            getattr(target, name)(tensor.ones(2, 2))
    with pytest.raises((RuntimeError, TypeError)):  # torch: RuntimeError, or TypeError from its stub's signature
        getattr(torch, name)(torch.ones(2, 2))


def test_flags_and_to_dense_of_dense_tensors(torch):
    for lib in (tensor, torch):
        x = lib.ones(2)
        assert not (x.is_xla or x.is_vulkan or x.is_mkldnn or x.is_sparse_csr or x.is_ipu or x.is_mtia)
        assert x.to_dense() is x and x.to_dense(lib.float64).dtype == lib.float64
    assert tensor.is_vulkan_available() is torch.is_vulkan_available() is False


def test_as_subclass_aliases_on_the_graph_as_torch_does(torch):
    results = []
    for lib in (tensor, torch):
        class Marked(lib.Tensor):
            pass

        x = lib.ones(2, requires_grad=True)
        y = x.as_subclass(Marked)
        assert type(y) is Marked and y.data_ptr() == x.data_ptr() and not y.is_leaf
        (y * 2).sum().backward()
        plain = lib.zeros(2).as_subclass(Marked)
        plain.add_(1)  # the alias writes through
        results.append((x.grad.tolist(), plain.tolist()))
        with pytest.raises(TypeError, match="does not inherit from Tensor"):
            lib.ones(2).as_subclass(int)
    assert results[0] == results[1] == ([2.0, 2.0], [1.0, 1.0])
