"""torch.* utilities (issue 16, coverage): runtime flags, Stream/Event, set_printoptions,
frombuffer/from_file, cond and vmap, compared with torch where it applies."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import autograd
import nn
import tensor


@pytest.fixture
def restore_flags():
    """Put back every process-wide setting these tests change."""
    yield
    tensor.use_deterministic_algorithms(False)
    tensor.set_anomaly_enabled(False)
    tensor.set_warn_always(False)
    tensor.set_printoptions(profile="default")
    tensor.set_default_dtype(tensor.float32)
    tensor.set_default_device(None)


def _outcome(call):
    """(result or None, error type name or None, message) of ``call()``."""
    try:
        return call(), None, ""
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return None, type(exc).__name__, str(exc)


def test_deterministic_flags_as_torch(restore_flags):
    # the values torch 2.13 gives (calling torch.use_deterministic_algorithms costs it ~10 s)
    steps = [
        (lambda: tensor.use_deterministic_algorithms(True), (True, False, 2)),
        (lambda: tensor.use_deterministic_algorithms(True, warn_only=True), (True, True, 1)),
        (lambda: tensor.set_deterministic_debug_mode("error"), (True, False, 2)),
        (lambda: tensor.set_deterministic_debug_mode("warn"), (True, True, 1)),
        (lambda: tensor.set_deterministic_debug_mode(0), (False, False, 0)),
    ]
    for call, expected in steps:
        call()
        assert (
            tensor.are_deterministic_algorithms_enabled(),
            tensor.is_deterministic_algorithms_warn_only_enabled(),
            tensor.get_deterministic_debug_mode(),
        ) == expected
    refusals = [
        (lambda: tensor.set_deterministic_debug_mode("foo"), RuntimeError, "expected one of `default`, `warn`"),
        (lambda: tensor.set_deterministic_debug_mode(3), RuntimeError, "expected 0, 1, or 2, but got 3"),
        (lambda: tensor.set_deterministic_debug_mode(1.0), TypeError, "must be str or int"),
        (lambda: tensor.use_deterministic_algorithms(1), TypeError, "expects a bool, but got int"),
    ]
    for call, error, message in refusals:
        with pytest.raises(error, match=message):
            call()


def test_flags_read_back_and_refuse_as_torch(torch, restore_flags):
    # (setter call, reader names) run on both libraries: same results, same error types
    calls = [
        (lambda m: m.set_anomaly_enabled(True, False), ["is_anomaly_enabled", "is_anomaly_check_nan_enabled"]),
        (lambda m: m.set_anomaly_enabled(False), ["is_anomaly_enabled", "is_anomaly_check_nan_enabled"]),
        (lambda m: m.set_anomaly_enabled("x"), []),
        (lambda m: m.set_warn_always(True), ["is_warn_always_enabled"]),
        (lambda m: m.set_warn_always(False), ["is_warn_always_enabled"]),
        (lambda m: m.set_warn_always("x"), []),
        (lambda m: m.set_num_interop_threads(0), []),
        (lambda m: m.set_flush_denormal(1), []),
        (lambda m: m.init_num_threads(), []),
        (lambda m: m.is_distributed(m.ones(2)), []),
        (lambda m: m.is_distributed(3), []),
        (lambda m: m.thread_safe_generator(), []),
        (lambda m: m.get_device_module(3), []),
    ]
    try:
        for setter, readers in calls:
            ours, theirs = _outcome(lambda: setter(tensor)), _outcome(lambda: setter(torch))
            assert (ours[0], ours[1]) == (theirs[0], theirs[1]), (ours, theirs)
            for name in readers:
                assert getattr(tensor, name)() == getattr(torch, name)(), name
    finally:
        torch.set_anomaly_enabled(False)
        torch.set_warn_always(False)
    assert tensor.set_flush_denormal(True) is False  # numpy has no flush-to-zero mode (documented)
    assert tensor.get_num_interop_threads() >= 1
    tensor.set_num_interop_threads(3)
    assert tensor.get_num_interop_threads() == 3


def test_default_tensor_type_device_modules_and_memory_formats(restore_flags):
    with pytest.warns(UserWarning, match="deprecated"):
        tensor.set_default_tensor_type(tensor.DoubleTensor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert tensor.get_default_dtype() is tensor.float64 and tensor.ones(1).dtype is tensor.float64
        tensor.set_default_tensor_type("torch.FloatTensor")
        assert tensor.get_default_dtype() is tensor.float32
        for bad in ("torch.IntTensor", tensor.LongTensor, 3, tensor.float64, "numpy.FloatTensor"):
            with pytest.raises(TypeError):
                tensor.set_default_tensor_type(bad)
    assert tensor.get_device_module("cpu") is tensor.cpu and tensor.get_device_module("cuda:0") is tensor.cuda
    assert tensor.get_device_module() is (tensor.cuda if tensor.accelerator.is_available() else tensor.cpu)
    assert tensor.cpu.is_available() and tensor.cpu.device_count() == 1 and tensor.cpu.current_stream().query()
    assert tensor.GradScaler is tensor.amp.GradScaler
    formats = (tensor.contiguous_format, tensor.channels_last, tensor.channels_last_3d, tensor.preserve_format)
    assert all(isinstance(f, tensor.memory_format) for f in formats) and len(set(formats)) == 4
    assert repr(tensor.channels_last) == "tensor.channels_last"
    assert pickle.loads(pickle.dumps(tensor.channels_last)) is tensor.channels_last
    with pytest.raises(TypeError):
        tensor.memory_format()


def test_cpu_stream_and_event_behave_as_torch(torch):
    s, ts = tensor.Stream("cpu"), torch.Stream("cpu")
    assert (s.query(), s.synchronize(), s.device_type, s.device_index, s.stream_id) == (
        ts.query(),
        ts.synchronize(),
        ts.device_type,
        ts.device_index,
        ts.stream_id,
    )
    assert s == tensor.Stream("cpu") and hash(s) == hash(tensor.Stream("cpu"))
    e, te = tensor.Event("cpu"), torch.Event("cpu")
    assert (e.query(), e.synchronize(), e.wait(s), s.wait_event(e)) == (
        te.query(),
        te.synchronize(),
        te.wait(ts),
        ts.wait_event(te),
    )
    for ours, theirs in (
        (lambda: e.record(s), lambda: te.record(ts)),
        (s.record_event, ts.record_event),
        (lambda: s.wait_stream(s), lambda: ts.wait_stream(ts)),
        (lambda: e.elapsed_time(e), lambda: te.elapsed_time(te)),
        (e.ipc_handle, te.ipc_handle),
    ):
        assert _outcome(ours)[1:] == (_outcome(theirs)[1], _outcome(theirs)[2].replace("torch", "tensor"))
    with s:
        assert tensor.ones(2).sum().item() == 2.0


@pytest.mark.gpu
def test_cuda_stream_and_event_order_work():
    if not tensor.cuda.is_available():
        pytest.skip("no CUDA device")
    s = tensor.Stream("cuda")
    assert s.device == tensor.device("cuda", tensor.cuda.current_device()) and s.stream_id != 0
    start, end = tensor.Event("cuda", enable_timing=True), tensor.Event("cuda", enable_timing=True)
    with s:
        start.record()
        x = tensor.ones(64, 64, device="cuda") @ tensor.ones(64, 64, device="cuda")
        end.record(s)
    other = tensor.Stream("cuda")
    other.wait_event(end)
    other.wait_stream(s)
    end.synchronize()
    assert end.query() and s.query() and start.elapsed_time(end) >= 0.0
    assert x[0, 0].item() == 64.0
    with pytest.raises(ValueError, match="enable_timing"):
        tensor.Event("cuda").elapsed_time(end)
    with pytest.raises(RuntimeError, match="does not match"):
        tensor.Event("cuda").record(tensor.Stream("cpu"))


def test_set_printoptions_changes_repr_as_torch(torch, restore_flags):
    data = np.array([[0.123456, 2.5, 3.0], [1.0, 0.001234, 7.75]])
    long = np.arange(40.0) / 7
    settings = [
        {"precision": 2},
        {"precision": 6},
        {"threshold": 5, "edgeitems": 1},
        {"linewidth": 40},
        {"profile": "short"},
        {"profile": "default", "sci_mode": False},
        {"profile": "full"},
    ]
    try:
        for options in settings:
            tensor.set_printoptions(**options)
            torch.set_printoptions(**options)
            for values in (data, long):
                assert repr(tensor.tensor(values, dtype=tensor.float32)) == repr(
                    torch.tensor(values, dtype=torch.float32)
                ), options
        tensor.set_printoptions(profile="default", sci_mode=True)
        assert repr(tensor.tensor([1.5, 200.0])) == "tensor([1.5000e+00, 2.0000e+02])"
        tensor.set_printoptions(profile="default", threshold=3)
        assert "..." in repr(tensor.arange(10)) and "..." not in repr(tensor.arange(3))
    finally:
        torch.set_printoptions(profile="default")
    with pytest.raises(ValueError, match="unknown profile"):
        tensor.set_printoptions(profile="long")


def test_frombuffer_and_from_file(torch, tmp_path):
    raw = bytearray(np.arange(4, dtype=np.float32).tobytes())
    for kwargs in ({}, {"count": 2, "offset": 4}, {"offset": 20}, {"count": 10}, {"offset": 1}, {"count": 0}):
        ours = _outcome(lambda: tensor.frombuffer(raw, dtype=tensor.float32, **kwargs))
        theirs = _outcome(lambda: torch.frombuffer(raw, dtype=torch.float32, **kwargs))
        assert ours[1:] == theirs[1:], kwargs
        if ours[0] is not None:
            np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
    shared = tensor.frombuffer(raw, dtype=tensor.float32)
    shared[0] = 9.0  # the tensor is a view of the buffer
    assert np.frombuffer(raw, np.float32)[0] == 9.0
    with pytest.warns(UserWarning, match="not writable"):
        assert tensor.frombuffer(b"\x01\x02", dtype=tensor.uint8).tolist() == [1, 2]

    path = str(tmp_path / "data.bin")
    np.arange(4, dtype=np.float32).tofile(path)
    assert tensor.from_file(path, size=4).tolist() == [0.0, 1.0, 2.0, 3.0] and tensor.from_file(path).numel() == 0
    private = tensor.from_file(path, shared=False, size=2)
    private[0] = 5.0
    mapped = tensor.from_file(path, shared=True, size=6)  # grows the file with zeros
    mapped[1] = 7.0
    del private, mapped
    np.testing.assert_array_equal(np.fromfile(path, np.float32), [0.0, 7.0, 2.0, 3.0, 0.0, 0.0])
    assert (
        tensor.from_file(path, size=2, dtype=tensor.int32).tolist()
        == torch.from_file(path, size=2, dtype=torch.int32).tolist()
    )
    for call in (lambda: tensor.from_file(path, size=10), lambda: tensor.from_file(str(tmp_path / "none"), size=1)):
        with pytest.raises(RuntimeError, match="smaller than|unable to open"):
            call()


def test_cond_runs_one_branch_with_gradients():
    x = tensor.tensor([1.0, 2.0], requires_grad=True)
    for pred, expected in ((True, [3.0, 6.0]), (0, [0.0, 1.0]), (tensor.tensor(True), [3.0, 6.0]),
                           (tensor.tensor([0.0]), [0.0, 1.0])):  # fmt: skip
        assert tensor.cond(pred, lambda t: t * 3, lambda t: t - 1, (x,)).tolist() == expected
    tensor.cond(x.sum() > 2, lambda t: (t * 3).sum(), lambda t: t.sum(), [x]).backward()
    assert x.grad.tolist() == [3.0, 3.0]
    for args, error in (((tensor.tensor([True, False]),), RuntimeError), (("a",), RuntimeError)):
        with pytest.raises(error):
            tensor.cond(*args, lambda t: t, lambda t: t, (x,))
    with pytest.raises(TypeError):
        tensor.cond(True, 3, lambda t: t, (x,))


def test_while_loop_matches_torch_with_gradients(torch):
    cases = [  # (cond_fn, body_fn, carried inputs) over a library m
        (lambda i, x: i < 3, lambda i, x: (i + 1, x * 2), lambda m: (0, m.ones(2))),
        (lambda i, x: i.sum() < 10, lambda i, x: (i + 1, x.sin()), lambda m: (m.zeros(1), m.ones(2))),
        (lambda x: x.sum() > 100, lambda x: (x - 1,), lambda m: (m.ones(3),)),  # no iteration
    ]
    for cond_fn, body_fn, inputs in cases:
        ours = tensor.while_loop(cond_fn, body_fn, inputs(tensor))
        theirs = torch.while_loop(cond_fn, body_fn, inputs(torch))
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            as_list = [v.tolist() if hasattr(v, "tolist") else v for v in (a, b)]
            np.testing.assert_allclose(*map(np.asarray, as_list), rtol=1e-6)
    x = tensor.tensor([0.5, 1.0], requires_grad=True)
    _, y = tensor.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, v * v), (0, x))
    y.sum().backward()  # y = x ** 4
    np.testing.assert_allclose(x.grad.numpy(), 4 * np.array([0.5, 1.0]) ** 3)


def test_while_loop_errors():
    with pytest.raises(RuntimeError, match="output 0 is tensor.float32\\[2\\], but the carried input is"):
        tensor.while_loop(lambda x: x.sum() < 3, lambda x: (tensor.cat([x, x]),), (tensor.ones(1),))
    with pytest.raises(RuntimeError, match="returned 1 values for 2 carried inputs"):
        tensor.while_loop(lambda i, x: i < 1, lambda i, x: (i + 1,), (0, tensor.ones(1)))
    with pytest.raises(RuntimeError, match="carried_inputs must be a tuple or list"):
        tensor.while_loop(lambda x: x < 3, lambda x: x + 1, 0)
    with pytest.raises(RuntimeError, match="single-element tensor"):
        tensor.while_loop(lambda x: x > 0, lambda x: (x - 1,), (tensor.ones(2),))
    with pytest.raises(TypeError, match="must be callable"):
        tensor.while_loop(lambda x: x < 3, 5, (0,))


def test_vmap_matches_torch_with_dims_nesting_and_gradients(torch):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 3))
    cases = [  # (function body over a library m, in_dims, out_dims, inputs as numpy)
        (lambda m: m.dot, 0, 0, (a, a)),
        (lambda m: lambda u, v: u * v.sum(), (0, 1), 0, (a, b)),
        (lambda m: lambda u, k: u * k, (1, None), 1, (a, 2.0)),
        (lambda m: lambda u: (u.sum(), u * 2), 0, (0, 1), (a,)),
        (lambda m: lambda d: d["x"].exp() + d["y"], ({"x": 0, "y": None},), 0, ({"x": a, "y": b[:, 0]},)),
        (lambda m: m.vmap(m.dot), 0, -1, (np.stack([a, a]), np.stack([a, a]))),  # nested
        (lambda m: lambda u: u.sum(), -1, 0, (np.zeros((0, 4)).T,)),  # an empty batch
    ]

    def convert(m, value):
        if isinstance(value, dict):
            return {k: convert(m, v) for k, v in value.items()}
        return m.tensor(value) if isinstance(value, np.ndarray) else value

    for body, in_dims, out_dims, inputs in cases:
        ours = tensor.vmap(body(tensor), in_dims, out_dims)(*[convert(tensor, v) for v in inputs])
        theirs = torch.vmap(body(torch), in_dims, out_dims)(*[convert(torch, v) for v in inputs])
        for o, t in zip(
            ours if isinstance(ours, tuple) else (ours,), theirs if isinstance(theirs, tuple) else (theirs,)
        ):
            assert o.shape == tuple(t.shape)
            np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-12)

    x = tensor.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    tensor.func.vmap(lambda r: (r.tanh() * r).sum())(x).sum().backward()
    torch.func.vmap(lambda r: (r.tanh() * r).sum())(tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_vmap_errors_and_randomness(torch):
    calls = [
        (lambda m: m.vmap(lambda u: u, chunk_size=0)(m.ones(2)), "ValueError"),
        (lambda m: m.vmap(lambda u: u, randomness="x")(m.ones(2)), "RuntimeError"),
        (lambda m: m.vmap(lambda u: u + m.rand(()))(m.ones(2)), "RuntimeError"),
        (lambda m: m.vmap(lambda u, v: u + v)(m.ones(2), m.ones(3)), "ValueError"),
        (lambda m: m.vmap(lambda u: u, in_dims=None)(m.ones(2)), "ValueError"),
        (lambda m: m.vmap(lambda u: u, in_dims=1)(m.ones(2)), "ValueError"),
        (lambda m: m.vmap(lambda u, v: u, in_dims=(0,))(m.ones(2), m.ones(2)), "ValueError"),
        (lambda m: m.vmap(lambda u: 3)(m.ones(2)), "ValueError"),
        (lambda m: m.vmap(lambda u, k: u, in_dims=(0, 0))(m.ones(2), 3.0), "ValueError"),
        (lambda m: m.vmap(lambda u: u, in_dims=(None,))(m.ones(2)), "ValueError"),
    ]
    for call, error in calls:
        assert _outcome(lambda: call(tensor))[1] == _outcome(lambda: call(torch))[1] == error
    same = tensor.vmap(lambda u: u + tensor.rand(()), randomness="same")(tensor.zeros(3))
    different = tensor.vmap(lambda u: u + tensor.rand(()), randomness="different")(tensor.zeros(3))
    assert len(set(same.tolist())) == 1 and len(set(different.tolist())) == 3
    assert tensor.vmap(lambda u: (u, 3.0), out_dims=(0, None))(tensor.ones(2))[1] == 3.0


def test_memory_format_layouts_match_torch(torch, device):
    data = np.arange(120.0).reshape(2, 3, 4, 5)
    ours, theirs = tensor.tensor(data, device=device), torch.tensor(data)
    calls = [  # (what, call on a library's tensor/module)
        ("contiguous", lambda m, x: x.contiguous(memory_format=m.channels_last)),
        ("contiguous back", lambda m, x: x.contiguous(memory_format=m.channels_last).contiguous()),
        ("to", lambda m, x: x.to(memory_format=m.channels_last)),
        ("clone preserves", lambda m, x: x.contiguous(memory_format=m.channels_last).clone()),
        ("clone contiguous", lambda m, x: x.to(memory_format=m.channels_last).clone(memory_format=m.contiguous_format)),
        ("empty_like", lambda m, x: m.empty_like(x.contiguous(memory_format=m.channels_last)).zero_()),
        ("zeros_like", lambda m, x: m.zeros_like(x, memory_format=m.channels_last)),
        ("rand_like", lambda m, x: m.rand_like(x.contiguous(memory_format=m.channels_last)).zero_()),
        ("3d", lambda m, x: x.unsqueeze(2).contiguous(memory_format=m.channels_last_3d)),
        ("elementwise", lambda m, x: x.contiguous(memory_format=m.channels_last) * 2 + 1),
    ]
    for what, call in calls:
        out, ref = call(tensor, ours), call(torch, theirs)
        np.testing.assert_array_equal(out.cpu().numpy(), ref.numpy())
        if what == "elementwise" and device != "cpu":
            continue  # an op's result layout: numpy keeps the inputs', CuPy's may not
        assert out.stride() == ref.stride(), what
        for fmt in ("contiguous_format", "channels_last"):
            if out.ndim == 4:
                assert out.is_contiguous(memory_format=getattr(tensor, fmt)) == ref.is_contiguous(
                    memory_format=getattr(torch, fmt)
                ), (what, fmt)
    empty = tensor.empty(2, 3, 4, 5, memory_format=tensor.channels_last, device=device)
    assert empty.stride() == (60, 1, 15, 3)
    x = tensor.tensor(data, device=device, requires_grad=True)
    (x.contiguous(memory_format=tensor.channels_last) * 3).sum().backward()
    assert x.grad.tolist() == np.full(data.shape, 3.0).tolist()
    conv = nn.Conv2d(3, 4, 3).to(device)
    weight = conv.weight
    conv.to(memory_format=tensor.channels_last)
    assert conv.weight is weight and conv.weight.stride() == (27, 1, 9, 3) and conv.bias.stride() == (1,)
    for call, error in ((lambda: tensor.ones(2, 3).contiguous(memory_format=tensor.channels_last), RuntimeError),
                        (lambda: tensor.ones(2).contiguous(memory_format=3), TypeError),
                        (lambda: tensor.empty(2, memory_format=tensor.preserve_format), RuntimeError)):  # fmt: skip
        with pytest.raises(error):
            call()


def test_autograd_anomaly_mode_sets_the_flags(restore_flags):
    enabled = "Anomaly Detection has been enabled"
    with pytest.warns(UserWarning, match=enabled), autograd.detect_anomaly(check_nan=False):
        assert tensor.is_anomaly_enabled() and not tensor.is_anomaly_check_nan_enabled()
    assert not tensor.is_anomaly_enabled() and tensor.is_anomaly_check_nan_enabled()
    with pytest.warns(UserWarning, match=enabled):
        autograd.set_detect_anomaly(True)
    assert tensor.is_anomaly_enabled()
    with autograd.set_detect_anomaly(False):
        assert not tensor.is_anomaly_enabled()
    assert tensor.is_anomaly_enabled()


@pytest.mark.filterwarnings("ignore:Anomaly Detection")
def test_anomaly_mode_raises_on_a_nan_gradient_naming_the_backward(restore_flags):
    def backward_of_sqrt_at_minus_one():
        x = tensor.tensor([-1.0, 4.0], requires_grad=True)
        x.sqrt().sum().backward()
        return x.grad

    assert backward_of_sqrt_at_minus_one().isnan().tolist() == [True, False]  # off: NaN flows on
    with autograd.detect_anomaly(check_nan=False):
        backward_of_sqrt_at_minus_one()
    with autograd.detect_anomaly(), pytest.raises(RuntimeError) as error:
        backward_of_sqrt_at_minus_one()
    assert str(error.value) == "Function 'SqrtBackward0' returned nan values in its 0th output."


@pytest.mark.filterwarnings("ignore:torch.range is deprecated")
@pytest.mark.parametrize("args,kwargs", [
    ((0.0, 2.0, 1.0), {"dtype": "int64"}),
    ((0.5, 2.5, 1.0), {"dtype": "int64"}),
    ((0, 4, 2), {"dtype": "int32"}),
    ((0, 2, 0.7), {}),
    ((1, 1), {}),
])
def test_range_dtype_and_values_match_torch(torch, args, kwargs):
    ours = tensor.range(*args, **{k: getattr(tensor, v) for k, v in kwargs.items()})
    theirs = torch.range(*args, **{k: getattr(torch, v) for k, v in kwargs.items()})
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())


@pytest.mark.filterwarnings("ignore:torch.range is deprecated")
def test_range_bad_steps_raise_like_torch(torch):
    for lib in (tensor, torch):
        with pytest.raises(RuntimeError, match="inconsistent with step sign"):
            lib.range(1, 0)
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            lib.range(0, 1, 0)
    assert tensor.range(tensor.tensor(0), 3).tolist() == [0.0, 1.0, 2.0, 3.0]


PRESERVING_CALLS = {
    "clone": lambda m, x: x.clone(),
    "rand_like": lambda m, x: m.rand_like(x),
    "randn_like": lambda m, x: m.randn_like(x),
    "randint_like": lambda m, x: m.randint_like(x, 5),
}


@pytest.mark.parametrize("call", PRESERVING_CALLS.values(), ids=PRESERVING_CALLS.keys())
@pytest.mark.parametrize("make", [
    lambda m: m.arange(12.0).reshape(3, 4).t(),
    lambda m: m.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1),
    lambda m: m.arange(120.0).reshape(2, 3, 4, 5).permute(3, 2, 1, 0),
    lambda m: m.arange(24.0).reshape(4, 6).t()[::2],
    lambda m: m.arange(240.0).reshape(2, 3, 4, 10).permute(0, 3, 1, 2)[:, ::2],
    lambda m: m.arange(3.0).expand(3, 3),
    lambda m: m.arange(4.0).reshape(1, 4).expand(2, 4)[:, ::2],
], ids=["transposed", "permuted_3d", "permuted_4d", "sliced_transposed", "sliced_channels_last", "expanded",
        "expanded_sliced"])
def test_preserve_format_keeps_the_dim_order_as_torch(torch, make, call):
    """``preserve_format`` keeps a permuted input's dim order (a sliced one's densely)."""
    out, ref = call(tensor, make(tensor)), call(torch, make(torch))
    assert out.stride() == ref.stride()
    assert out.is_contiguous() == ref.is_contiguous()
    if call is PRESERVING_CALLS["clone"]:
        np.testing.assert_array_equal(out.numpy(), ref.numpy())


@pytest.mark.parametrize("call", ["rand_like", "randn_like", "randint_like"])
def test_random_like_factories_lay_out_as_empty_like_as_torch(torch, call):
    """The random ``*_like`` factories take ``empty_like``'s strides, size-1 dims' strides too."""
    for make in (lambda m: m.arange(3.0).reshape(1, 3).t(), lambda m: m.zeros(2, 1, 3).permute(2, 1, 0)):
        out, ref = PRESERVING_CALLS[call](tensor, make(tensor)), PRESERVING_CALLS[call](torch, make(torch))
        assert out.stride() == ref.stride() == tensor.empty_like(make(tensor)).stride()
