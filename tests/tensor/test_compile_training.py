"""tensor.compile and training: the backward derived ahead of time from a joint graph, fused and
compiled, checked against eager with gradcheck; Module.compile, tensor.compile(model), and a
compiled model trained under DistributedDataParallel (a world of one)."""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import distrib as dist
import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close

pytest.importorskip("numba", reason="numba is not installed (pip install 'distrib[compile]')")

RNG = np.random.default_rng(5)


def _f64(*shape, grad=True):
    return tensor.tensor(RNG.standard_normal(shape), dtype=tensor.float64, requires_grad=grad)


W = _f64(4, 3)


def gelu_block(x):
    """matmul, a fused GELU-tanh chain, and a reduction: forward and backward both fused."""
    return (F.gelu(x @ W, approximate="tanh") * 2 + x[:, :3].exp()).sum()


def norm_block(x):
    """LayerNorm then softmax: reductions broadcast back, in the forward and the backward."""
    y = F.layer_norm(x, (x.shape[-1],)) * 1.5
    return (F.softmax(y, -1) * y).sum(-1)


@pytest.fixture(scope="module")
def compiled_blocks():
    return {"gelu": tensor.compile(gelu_block), "norm": tensor.compile(norm_block)}


def _segment(compiled):
    return next(iter(compiled.cache.values())).paths[0]._runners[(0, True)]


def test_backward_is_a_fused_joint_graph_and_matches_eager(compiled_blocks):
    compiled = compiled_blocks["gelu"]
    for _ in range(3):
        x = _f64(5, 4)
        out = compiled(x)
        out.backward()
        gx, gw = x.grad, W.grad
        x.grad = W.grad = None
        gelu_block(x).backward()
        assert_close(gx, x.grad, rtol=1e-10, atol=1e-12)
        assert_close(gw, W.grad, rtol=1e-10, atol=1e-12)
        W.grad = None
    assert out.grad_fn.name() == "CompiledGraphBackward0"
    segment = _segment(compiled)
    assert segment.fallback is None
    ops = [n.op.name for n in segment.joint.nodes if n.kind == "call"]
    assert ops.count("matmul") == 3  # forward, and the two input gradients: library calls


@pytest.mark.parametrize("name", ["gelu", "norm"])
def test_gradcheck_through_the_compiled_backward(compiled_blocks, name):
    compiled = compiled_blocks[name]
    x = _f64(5, 4)
    compiled(x)  # capture
    assert autograd.gradcheck(compiled, (x,))
    assert _segment(compiled).fallback is None


def test_double_backward_runs_the_backward_through_the_dispatcher(compiled_blocks):
    compiled = compiled_blocks["gelu"]
    x = _f64(5, 4)
    compiled(x)
    assert autograd.gradgradcheck(compiled, (x,))


def _mlp():
    tensor.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))


def _train(model, steps=4):
    opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = tensor.tensor(np.linspace(-1, 1, 30).reshape(5, 6), dtype=tensor.float32)
    y = tensor.tensor([0, 1, 2, 1, 0])
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_module_compile_and_tensor_compile_of_a_model_train_like_eager():
    eager = _train(_mlp())
    in_place = _mlp()
    in_place.compile()
    assert_close(tensor.tensor(_train(in_place)), tensor.tensor(eager), rtol=1e-5, atol=1e-6)
    wrapped = tensor.compile(_mlp())
    assert_close(tensor.tensor(_train(wrapped)), tensor.tensor(eager), rtol=1e-5, atol=1e-6)
    assert wrapped.training and len(list(wrapped.parameters())) == 4  # the module's own attributes
    assert len(in_place._compiled_call.cache) == 1 and _segment(in_place._compiled_call).fallback is None


def test_eval_recompiles():
    model = _mlp()
    model.compile()
    x = tensor.ones(2, 6)
    model(x)
    model.eval()
    model(x)
    assert model._compiled_call.captures == 2


@pytest.fixture
def world1():
    dist.init_process_group("zmq", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_compiled_model_trains_under_ddp(world1):
    eager = _train(_mlp())
    model = _mlp()
    model.compile()
    ddp = dist.DistributedDataParallel(model)
    assert_close(tensor.tensor(_train(ddp)), tensor.tensor(eager), rtol=1e-5, atol=1e-6)
    assert _segment(model._compiled_call).fallback is None  # trained through the compiled backward


def pointwise_and_reductions(a, b):
    """A sample of pointwise, broadcast, view and reduction families for gradient conformance."""
    c = tensor.where(a > b, a.exp(), b.relu()) + a.tanh() * b.sigmoid() - (a.abs() + 1).log()
    return (c.T.sum(0) + a.amax(1) + (a * b).mean(1)).sum()


@pytest.mark.parametrize("layout", ["broadcast", "strided"])
def test_fused_gradients_match_eager(layout):
    compiled = tensor.compile(pointwise_and_reductions)
    for _ in range(3):
        if layout == "broadcast":
            a, b = _f64(4, 6), _f64(6)
        else:
            a, b = _f64(6, 4).detach().T.requires_grad_(), _f64(4, 12).detach()[:, ::2].requires_grad_()
        compiled(a, b).backward()
        got = (a.grad, b.grad)
        a.grad = b.grad = None
        pointwise_and_reductions(a, b).backward()
        assert_close(got[0], a.grad, rtol=1e-10, atol=1e-12)
        assert_close(got[1], b.grad, rtol=1e-10, atol=1e-12)
    assert _segment(compiled).fallback is None


def test_an_output_without_gradient_replays_plainly():
    def predict(x):
        return (x @ W).argmax(1)

    compiled = tensor.compile(predict)
    for _ in range(2):
        x = _f64(5, 4, grad=False)
        out = compiled(x)
        assert not out.requires_grad
        assert_close(out, predict(x))


def test_library_calls_skip_the_dispatcher_unless_a_hook_is_on(monkeypatch):
    # Note [Library calls] (tensor/_compile/lowering.py): inside a compiled segment a matmul or
    # a view runs its kernel on the arrays; a profiler still sees every op; a returned view
    # keeps eager's view bookkeeping.
    from tensor import _dispatch
    from tensor.profiler import profile

    def step(x):
        return ((x @ W).relu().reshape(-1) * 2).sum()

    def predict(x):
        return x.T, (x @ W).sum()

    compiled, inference = tensor.compile(step), tensor.compile(predict)
    x = _f64(5, 4)
    for _ in range(2):  # the capture, then the joint graph's build
        compiled(x).backward()
        with tensor.no_grad():  # W requires grad: only without grad mode is this segment not differentiable
            inference(x.detach())
    calls = []
    real = _dispatch.apply
    monkeypatch.setattr(_dispatch, "apply", lambda op, *rest: calls.append(op.name) or real(op, *rest))
    x.grad = None
    compiled(x).backward()
    got = x.grad
    plain = x.detach()
    with tensor.no_grad():
        view, _ = inference(plain)
    assert "matmul" not in calls and view._base is plain
    x.grad = None
    step(x).backward()
    assert_close(got, x.grad, rtol=1e-12, atol=1e-12)
    with profile() as prof:
        compiled(x).backward()
    assert "matmul" in prof.key_averages().table()


def test_independent_products_run_as_pairs(monkeypatch):
    # Note [Paired products] (tensor/_compile/lowering.py): the backward's input and weight
    # gradients of the middle layer are independent products, computed side by side; the
    # gradients match eager's, and match the unpaired segment's where the pair does not apply.
    from tensor import _threads

    threads = tensor.get_num_threads()
    tensor.set_num_threads(2)
    try:
        w1, w2, w3 = (_f64(n, m) for n, m in ((256, 64), (256, 256), (8, 256)))

        def loss(x):
            return ((x @ w1.T).relu() @ w2.T).relu().matmul(w3.T).square().sum()

        pairs = []
        real = _threads.matmul_pair
        monkeypatch.setattr(_threads, "matmul_pair", lambda *arrays: pairs.append(real(*arrays)) or pairs[-1])
        compiled = tensor.compile(loss, options={"split_regions": False})  # else the hidden dims split
        x = _f64(128, 64, grad=False)
        grads = []
        for pair_on in (True, True, True, False):  # the capture, the joint graph's build, two replays
            if not pair_on:
                monkeypatch.setattr(_threads, "matmul_pair", lambda *arrays: None)
            for w in (w1, w2, w3):
                w.grad = None
            compiled(x).backward()
            grads.append([w.grad for w in (w1, w2, w3)])
        for w in (w1, w2, w3):
            w.grad = None
        loss(x).backward()
        for got in grads[2:]:
            for g, w in zip(got, (w1, w2, w3)):
                assert_close(g, w.grad, rtol=1e-12, atol=1e-12)
        # The middle layer's two 128x256x256 products pair on two threads (the last layer's are too small).
        assert any(p is not None for p in pairs) == _threads._splitting
    finally:
        tensor.set_num_threads(threads)
