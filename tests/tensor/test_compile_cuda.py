"""tensor.compile on a GPU: each fused group is one CuPy RawKernel of generated CUDA C
(tensor/_compile/codegen_cupy.py). Without a GPU these run on the CuPy stand-in, which parses
and runs that C with numpy and counts launches (tests/_cupy_standin/README.md says what that
proves); the counting tests skip on a real CuPy, which counts nothing."""

from __future__ import annotations

import numpy as np
import pytest

import nn.functional as F
import tensor
from tensor._compile import lowering
from tests.conftest import CUDA_SKIP_REASON
from tests.helpers import assert_close
from tests.tensor.test_compile_codegen import kmeans, reductions, zoo

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(bool(CUDA_SKIP_REASON), reason=f"no CUDA: {CUDA_SKIP_REASON}")]

RNG = np.random.default_rng(17)


@pytest.fixture(autouse=True)
def _own_graph_cache(tmp_path, monkeypatch):
    """Graphs captured by earlier runs would be loaded from disk instead of captured."""
    monkeypatch.setattr(tensor.compile.config, "cache_dir", str(tmp_path))


def _launches():
    cupy = pytest.importorskip("cupy")
    raw = getattr(cupy, "_raw_kernel", None)
    if raw is None or not hasattr(raw, "launches"):
        pytest.skip("counting kernel launches needs the CuPy stand-in")
    return raw.launches


def _on_cuda(*arrays, requires_grad=False):
    return [tensor.tensor(a, device="cuda", requires_grad=requires_grad) for a in arrays]


def test_kmeans_numpy_program_is_one_kernel_with_inputs_copied_once(monkeypatch):
    launches = _launches()
    import cupy

    X, means = RNG.standard_normal((1000, 2)), RNG.standard_normal((3, 2))
    compiled = tensor.compile(kmeans)
    with tensor.device("cuda"):
        compiled(X, means)  # the capture (eager)
        copies = {"to_device": 0, "to_host": 0}

        def counting(name, fn):
            def run(obj, *args, **kwargs):
                copies[name] += name == "to_host" or isinstance(obj, np.ndarray)
                return fn(obj, *args, **kwargs)

            return run

        for name in ("array", "asarray"):
            monkeypatch.setattr(cupy, name, counting("to_device", getattr(cupy, name)))
        monkeypatch.setattr(cupy, "asnumpy", counting("to_host", cupy.asnumpy))
        before = launches()
        out = compiled(X, means)
    assert launches() - before == 1  # broadcast, norm and argmin: one pass over X
    assert copies == {"to_device": 2, "to_host": 1}  # X and means in, the labels out
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, kmeans(X, means))
    graph = tensor.compile.explain(kmeans)(X, means).graph
    (kernel,) = lowering.kernels_of(graph, 0, len(graph.nodes))
    assert "argmin" in kernel.source and "extern" not in kernel.source  # the CPU graph is numba's


def test_the_kmeans_graph_on_cuda_is_generated_cuda_c():
    X, means = _on_cuda(RNG.standard_normal((50, 2)), RNG.standard_normal((3, 2)))
    with tensor.device("cuda"):
        graph = tensor.compile.explain(kmeans)(X.cpu().numpy(), means.cpu().numpy()).graph
    (kernel,) = lowering.kernels_of(graph, 0, len(graph.nodes))
    assert 'extern "C" __global__ void tensor_fused(i64* out, const double* a0, const double* a1' in kernel.source
    assert "for (i64 r" in kernel.source and "sqrt(" in kernel.source


def _gelu_chain(x, w):
    h = x @ w
    return (F.gelu(h, approximate="tanh") * h.sigmoid() + F.gelu(h) - h.relu()).sum(1).mean()


@pytest.mark.parametrize("dtype", [tensor.float32, tensor.float64])
def test_fused_gelu_chain_and_its_gradients_match_eager(dtype):
    launches = _launches()
    x0, w0 = RNG.standard_normal((5, 4)), RNG.standard_normal((4, 6))
    x, w = (t.to(dtype) for t in _on_cuda(x0, w0))
    x.requires_grad_()
    w.requires_grad_()
    compiled = tensor.compile(_gelu_chain)
    for _ in range(2):
        x.grad = w.grad = None
        before = launches()
        out = compiled(x, w)
        out.backward()
    assert launches() > before  # the replay ran generated kernels, forward and backward
    grads = x.grad, w.grad
    x.grad = w.grad = None
    expected = _gelu_chain(x, w)
    expected.backward()
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == tensor.float32 else dict(rtol=1e-10, atol=1e-12)
    assert_close(out, expected, **tol)
    assert_close(grads[0], x.grad, **tol)
    assert_close(grads[1], w.grad, **tol)


@pytest.mark.parametrize("layout", ["broadcast", "strided"])
@pytest.mark.parametrize("dtype", [tensor.float32, tensor.float64])
@pytest.mark.parametrize("fn", [zoo, reductions])
def test_every_fused_family_matches_eager_on_cuda(fn, dtype, layout):
    if layout == "broadcast":
        x, y = _on_cuda(RNG.uniform(-2, 2, (4, 6)), RNG.uniform(-2, 2, (6,)))
    else:  # a transposed and a strided view, read through the kernel's index arithmetic
        x, y = _on_cuda(RNG.uniform(-2, 2, (6, 4)), RNG.uniform(-2, 2, (4, 12)))
        x, y = x.T, y[:, ::2]
    args = (x.to(dtype), y.to(dtype))[: 2 if fn is zoo else 1]
    compiled = tensor.compile(fn)
    for _ in range(2):
        out = compiled(*args)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == tensor.float32 else dict(rtol=1e-10, atol=1e-10)
    assert_close(out, fn(*args), **tol)


def test_a_group_without_a_cuda_c_type_runs_through_the_dispatcher():
    x = tensor.tensor(RNG.integers(-50, 50, (3, 4)), dtype=tensor.int16, device="cuda")
    compiled = tensor.compile(lambda t: (t * 3 + 1).sum(1))
    for _ in range(2):
        out = compiled(x)
    assert_close(out, (x * 3 + 1).sum(1))


def _sized(t):
    return F.gelu(t).sum(1) * 2 + t.mean()  # the mean divides by a count that follows the size


def test_new_sizes_reuse_the_cuda_kernels():
    compiled = tensor.compile(_sized)
    backend = tensor.device("cuda").backend
    for rows in (3, 5, 7, 64, 9):
        x = tensor.tensor(RNG.standard_normal((rows, 8)), device="cuda")
        out = compiled(x)
        assert_close(out, _sized(x), rtol=1e-10, atol=1e-12)
        if rows == 7:  # 3 and 5 were captures (eager); 7 is the first replay
            kernels = {k for k in backend._kernels if k[0] == "raw"}
    assert kernels and {k for k in backend._kernels if k[0] == "raw"} == kernels
    assert compiled.captures == 2


def test_the_stand_in_refuses_c_it_does_not_model():
    cupy = pytest.importorskip("cupy")
    if not hasattr(getattr(cupy, "_raw_kernel", None), "launches"):
        pytest.skip("the C subset is the stand-in's")
    head = (
        'typedef long long i64;\nextern "C" __global__ void k(double* out, i64 n) {\n'
        "    i64 i = i64(blockIdx.x) * i64(blockDim.x) + i64(threadIdx.x);\n    if (i >= n) return;\n"
    )
    with pytest.raises(ValueError, match="does not model"):
        cupy.RawKernel(head + "    while (i < n) { i += 1; }\n}\n", "k")
    with pytest.raises(ValueError, match="does not model"):
        cupy.RawKernel(head + "    out[i] = __expf(1.0);\n}\n", "k")
    kernel = cupy.RawKernel(head + "    out[i] = i % 2 == 0 ? double(i) / 2 : -1.0;\n}\n", "k")
    out = cupy.zeros(5)
    kernel((1,), (4,), (out, np.int64(5)))  # 4 threads: element 4 is never written
    np.testing.assert_array_equal(cupy.asnumpy(out), [0.0, -1.0, 1.0, -1.0, 0.0])
    with pytest.raises(TypeError, match="numpy int64 scalar"):
        kernel((1,), (8,), (out, 5))


def test_a_long_reduction_into_few_outputs_uses_cupys_reductions():
    launches = _launches()
    from tensor._compile import codegen_cupy

    x = _on_cuda(RNG.standard_normal((codegen_cupy.LONG_LOOP + 1, 2)))[0]
    compiled = tensor.compile(lambda t: (t * 2).exp().sum() + (t * 3).sum(1))
    compiled(x)
    before = launches()
    out = compiled(x)
    assert launches() - before == 1  # the row sums are one kernel; the full sum is CuPy's
    assert_close(out, (x * 2).exp().sum() + (x * 3).sum(1), rtol=1e-10)
