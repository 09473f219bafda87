"""Random numbers: reproducible streams (pinned to hard-coded values), Generator
independence, get/set_rng_state, and the dtypes and ranges of each sampler."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from tests.helpers import assert_close

# The first values drawn on the CPU after manual_seed(0). Pinned so that any change to the
# stream (which would silently change every seeded experiment) is caught. A GPU makes its own
# numbers (Note [Random numbers per device]), so only the CPU's are pinned.
PINNED_STREAMS = [
    ("rand", lambda d: tensor.rand(4, device=d),
     [0.6369616985321045, 0.2697867155075073, 0.04097352549433708, 0.016527635976672173]),
    ("randn", lambda d: tensor.randn(4, device=d),
     [0.1257302165031433, -0.13210485875606537, 0.6404226422309875, 0.10490011423826218]),
    ("randint", lambda d: tensor.randint(0, 100, (5,), device=d), [85, 63, 51, 26, 30]),
    ("randperm", lambda d: tensor.randperm(6, device=d), [3, 2, 5, 4, 0, 1]),
]


@pytest.mark.parametrize(("name", "draw", "expected"), PINNED_STREAMS, ids=[c[0] for c in PINNED_STREAMS])
def test_seeded_stream_is_pinned(name, draw, expected):
    tensor.manual_seed(0)
    assert draw("cpu").tolist() == pytest.approx(expected, rel=1e-7)


@pytest.mark.parametrize(("name", "draw", "expected"), PINNED_STREAMS, ids=[c[0] for c in PINNED_STREAMS])
def test_same_seed_gives_same_numbers(device, name, draw, expected):
    tensor.manual_seed(1234)
    first = draw(device).tolist()
    tensor.manual_seed(1234)
    assert draw(device).tolist() == first


def test_different_seeds_give_different_numbers():
    tensor.manual_seed(1)
    a = tensor.rand(8).tolist()
    tensor.manual_seed(2)
    assert tensor.rand(8).tolist() != a


def test_successive_draws_differ():
    tensor.manual_seed(0)
    assert tensor.rand(4).tolist() != tensor.rand(4).tolist()


def test_generator_is_independent_of_the_global_one(device):
    g = tensor.Generator().manual_seed(42)
    pinned = [0.7739560604095459, 0.43887844681739807, 0.8585979342460632]
    tensor.manual_seed(0)
    global_first = tensor.rand(2, device=device).tolist()
    assert tensor.rand(3, generator=g, device=device).tolist() == pytest.approx(pinned, rel=1e-7)
    # Drawing from g did not advance the global stream, and vice versa.
    tensor.manual_seed(0)
    tensor.rand(2, device=device)
    tensor.manual_seed(0)
    assert tensor.rand(2, device=device).tolist() == global_first
    g2 = tensor.Generator().manual_seed(42)
    tensor.rand(100)
    assert tensor.rand(3, generator=g2).tolist() == pytest.approx(pinned, rel=1e-7)


def test_manual_seed_returns_generator_and_initial_seed():
    g = tensor.manual_seed(7)
    assert g is tensor.default_generator
    assert tensor.initial_seed() == 7
    assert tensor.Generator().manual_seed(5).initial_seed() == 5


def test_manual_seed_rejects_bad_seeds_as_torch(torch):
    for lib in (tensor, torch):
        for bad in (1.5, True, "3"):
            with pytest.raises(RuntimeError, match="manual_seed expected a long"):
                lib.Generator().manual_seed(bad)
        for out_of_range in (2**64, -(2**63) - 1):
            with pytest.raises(ValueError, match="Overflow when unpacking long long"):
                lib.Generator().manual_seed(out_of_range)
            with pytest.raises(ValueError, match="Overflow when unpacking long long"):
                lib.manual_seed(out_of_range)
        assert lib.manual_seed(1.5).initial_seed() == 1 and lib.manual_seed("3").initial_seed() == 3


def test_negative_seed_is_accepted_like_torch():
    a = tensor.manual_seed(-1).initial_seed()
    assert a == 2 ** 64 - 1


def test_get_set_rng_state_replays_the_stream():
    tensor.manual_seed(3)
    tensor.rand(5)
    state = tensor.get_rng_state()
    assert state.dtype is tensor.uint8
    expected = tensor.randn(6).tolist()
    tensor.rand(10)
    tensor.set_rng_state(state)
    assert tensor.randn(6).tolist() == expected


def test_generator_get_set_state_and_bad_state():
    g = tensor.Generator().manual_seed(9)
    state = g.get_state()
    first = tensor.rand(3, generator=g).tolist()
    g.set_state(state)
    assert tensor.rand(3, generator=g).tolist() == first
    with pytest.raises(RuntimeError, match="not a generator state"):
        g.set_state(tensor.zeros(4, dtype=tensor.uint8))


def test_rng_state_survives_save_and_load(tmp_path):
    tensor.manual_seed(11)
    state = tensor.get_rng_state()
    expected = tensor.rand(3).tolist()
    tensor.save({"rng": state}, tmp_path / "rng.pt")
    tensor.set_rng_state(tensor.load(tmp_path / "rng.pt")["rng"])
    assert tensor.rand(3).tolist() == expected


# ------------------------------------------------------------ dtypes and ranges
# (name, draw, expected dtype, check on the values as a numpy array)
SAMPLERS = [
    ("rand", lambda d: tensor.rand(1000, device=d), tensor.float32,
     lambda a: (a >= 0).all() and (a < 1).all()),
    ("rand-f64", lambda d: tensor.rand(10, dtype=tensor.float64, device=d), tensor.float64,
     lambda a: (a >= 0).all() and (a < 1).all()),
    ("randn", lambda d: tensor.randn(2000, device=d), tensor.float32, lambda a: abs(a.mean()) < 0.1),
    ("randint", lambda d: tensor.randint(-3, 4, (1000,), device=d), tensor.int64,
     lambda a: a.min() == -3 and a.max() == 3),
    ("randint-high-only", lambda d: tensor.randint(5, (500,), device=d), tensor.int64,
     lambda a: set(a.tolist()) == {0, 1, 2, 3, 4}),
    ("randint-dtype", lambda d: tensor.randint(0, 10, (5,), dtype=tensor.int32, device=d), tensor.int32,
     lambda a: ((a >= 0) & (a < 10)).all()),
    ("randperm", lambda d: tensor.randperm(50, device=d), tensor.int64,
     lambda a: sorted(a.tolist()) == list(range(50))),
    ("randperm-0", lambda d: tensor.randperm(0, device=d), tensor.int64, lambda a: a.shape == (0,)),
    ("normal-scalar", lambda d: tensor.normal(5.0, 0.01, (100,), device=d), tensor.float32,
     lambda a: abs(a.mean() - 5.0) < 0.01),
    ("normal-tensors", lambda d: tensor.normal(tensor.full((3,), 10.0, device=d), tensor.zeros(3, device=d)),
     tensor.float32, lambda a: (a == 10.0).all()),
    ("rand-empty", lambda d: tensor.rand(0, 3, device=d), tensor.float32, lambda a: a.shape == (0, 3)),
    ("rand-0d", lambda d: tensor.rand((), device=d), tensor.float32, lambda a: a.shape == ()),
]


@pytest.mark.parametrize(("name", "draw", "dtype", "check"), SAMPLERS, ids=[c[0] for c in SAMPLERS])
def test_sampler_dtype_and_range(device, name, draw, dtype, check):
    t = draw(device)
    assert t.dtype is dtype
    assert t.device.type == device
    assert check(t.cpu().numpy())


def test_like_samplers_follow_input(device):
    x = tensor.ones(2, 3, dtype=tensor.float64, device=device)
    for t in (tensor.rand_like(x), tensor.randn_like(x), tensor.randint_like(x, 3)):
        assert t.shape == (2, 3) and t.dtype is tensor.float64 and t.device == x.device


def test_rand_requires_grad(device):
    t = tensor.randn(3, device=device, requires_grad=True)
    assert t.requires_grad and t.is_leaf


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: tensor.randint(5, 5, (2,)), RuntimeError, "random_ expects 'from' to be less than 'to'"),
    (lambda: tensor.randperm(-1), RuntimeError, "n must be non-negative"),
    (lambda: tensor.normal(0.0, -1.0, (2,)), RuntimeError, "normal expects std >= 0.0"),
    (lambda: tensor.normal(tensor.zeros(2), -tensor.ones(2)), RuntimeError,
     "normal expects all elements of std"),
    (lambda: tensor.rand(-1), RuntimeError, "negative dimension"),
])
def test_sampler_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_in_place_samplers(device):
    t = tensor.zeros(100, device=device)
    assert t.uniform_(2.0, 3.0) is t
    values = t.cpu().numpy()
    assert (values >= 2.0).all() and (values < 3.0).all()
    tensor.manual_seed(0)
    a = tensor.empty(4, dtype=tensor.float64, device=device).normal_()
    tensor.manual_seed(0)
    b = tensor.empty(4, dtype=tensor.float64, device=device).normal_()
    assert_close(a, b)


def test_bernoulli_and_multinomial(device):
    p = tensor.tensor([0.0, 1.0, 0.0, 1.0], device=device)
    assert_close(tensor.bernoulli(p), np.array([0.0, 1.0, 0.0, 1.0], np.float32))
    samples = tensor.multinomial(tensor.tensor([0.0, 1.0, 0.0], device=device), 3, replacement=True)
    assert samples.dtype is tensor.int64 and samples.tolist() == [1, 1, 1]
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        tensor.multinomial(tensor.ones(2, device=device), 3)


@pytest.mark.parametrize("fill, args", [
    ("uniform_", ()), ("normal_", ()), ("exponential_", ()), ("cauchy_", ()), ("log_normal_", ()),
    ("geometric_", (0.5,)),
])
def test_in_place_fills_of_a_0d_tensor(fill, args):
    t = tensor.full((), -7.0)
    assert getattr(t, fill)(*args) is t and t.shape == () and float(t) != -7.0


def test_uniform_and_normal_fills_check_their_arguments(torch):
    for ours, theirs in ((lambda: tensor.empty(2).uniform_(1.0, 0.0), lambda: torch.empty(2).uniform_(1.0, 0.0)),
                         (lambda: tensor.empty(2).normal_(0.0, -2.0), lambda: torch.empty(2).normal_(0.0, -2.0))):
        with pytest.raises(RuntimeError) as mine:
            ours()
        with pytest.raises(RuntimeError) as reference:
            theirs()
        assert str(mine.value) == str(reference.value)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_uniform_stays_below_the_upper_bound(dtype):
    d = getattr(tensor, dtype)
    assert (tensor.empty(100000, dtype=d).uniform_().float().numpy() < 1).all()
    assert (tensor.rand(100000, dtype=d).float().numpy() < 1).all()


def test_complex_randn_draws_both_parts_with_variance_half():
    z = tensor.randn(100000, dtype=tensor.complex64).numpy()
    assert abs(z.real.var() - 0.5) < 0.02 and abs(z.imag.var() - 0.5) < 0.02
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 0.02
    u = tensor.rand(100000, dtype=tensor.complex128).numpy()
    assert 0 <= u.imag.min() and u.imag.max() < 1 and abs(u.imag.mean() - 0.5) < 0.01
