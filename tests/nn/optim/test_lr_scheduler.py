"""Learning-rate schedulers against torch.optim.lr_scheduler: the lr (and cycled momentum)
sequence over 30 steps for each scheduler and several configs, the closed forms used with an
explicit epoch, ``state_dict`` round trips, warnings and argument errors."""

from __future__ import annotations

import io
import warnings

import pytest

import nn
import tensor

STEPS = 30


def _optimizers(lib, name="SGD", lrs=(0.1, 0.05)):
    """An optimizer of ``lib`` (our nn.optim or torch.optim) with two groups of different lrs."""
    make = lib.tensor if hasattr(lib, "tensor") and lib is not tensor else tensor.tensor
    param_cls = lib.nn.Parameter if hasattr(lib, "nn") else nn.Parameter
    optim = lib.optim if hasattr(lib, "optim") else nn.optim
    groups = [{"params": [param_cls(make([1.0, 2.0]))], "lr": lrs[0]},
              {"params": [param_cls(make([3.0]))], "lr": lrs[1]}]
    options = {"momentum": 0.9} if name == "SGD" else {}
    return getattr(optim, name)(groups, **options)


# (id, optimizer name, factory(sched_module, optimizer) -> scheduler), one line per case.
CASES = [
    ("step", "SGD", lambda s, o: s.StepLR(o, step_size=3, gamma=0.5)),
    ("step-every", "SGD", lambda s, o: s.StepLR(o, step_size=1, gamma=0.9)),
    ("multistep", "SGD", lambda s, o: s.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3)),
    ("exponential", "SGD", lambda s, o: s.ExponentialLR(o, gamma=0.9)),
    ("cosine", "SGD", lambda s, o: s.CosineAnnealingLR(o, T_max=10)),
    ("cosine-eta-min", "SGD", lambda s, o: s.CosineAnnealingLR(o, T_max=7, eta_min=0.01)),
    ("lambda", "SGD", lambda s, o: s.LambdaLR(o, lambda epoch: 0.95 ** epoch)),
    ("lambda-per-group", "SGD", lambda s, o: s.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: 0.5 + e % 3])),
    ("linear-warmup", "SGD", lambda s, o: s.LinearLR(o, start_factor=0.25, total_iters=8)),
    ("linear-decay", "SGD", lambda s, o: s.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=10)),
    ("constant", "SGD", lambda s, o: s.ConstantLR(o, factor=0.5, total_iters=4)),
    ("onecycle", "SGD", lambda s, o: s.OneCycleLR(o, max_lr=1.0, total_steps=31)),
    ("onecycle-linear", "SGD", lambda s, o: s.OneCycleLR(o, max_lr=[1.0, 0.3], total_steps=40, pct_start=0.25,
                                                         anneal_strategy="linear")),
    ("onecycle-3phase", "SGD", lambda s, o: s.OneCycleLR(o, max_lr=0.5, epochs=4, steps_per_epoch=8,
                                                         three_phase=True, div_factor=10.0)),
    ("onecycle-adam", "Adam", lambda s, o: s.OneCycleLR(o, max_lr=0.01, total_steps=35, base_momentum=0.8,
                                                        max_momentum=0.9)),
    ("onecycle-no-momentum", "Adagrad", lambda s, o: s.OneCycleLR(o, max_lr=0.1, total_steps=31,
                                                                  cycle_momentum=False)),
    ("sequential", "SGD", lambda s, o: s.SequentialLR(
        o, [s.LinearLR(o, start_factor=0.1, total_iters=5), s.CosineAnnealingLR(o, T_max=20)], milestones=[5])),
    ("sequential-3", "SGD", lambda s, o: s.SequentialLR(
        o, [s.ConstantLR(o, factor=0.2, total_iters=2), s.ExponentialLR(o, gamma=0.8),
            s.StepLR(o, step_size=4, gamma=0.5)], milestones=[3, 10])),
]


def _run(sched, opt, steps):
    """Step optimizer then scheduler; record (last lrs, group lrs, group momenta) after each."""
    seen = []
    for _ in range(steps):
        opt.step()
        sched.step()
        seen.append((list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups],
                     [g.get("momentum", g.get("betas", (0.0,))[0]) for g in opt.param_groups]))
    return seen


def _assert_sequences_equal(ours, theirs):
    for epoch, (a, b) in enumerate(zip(ours, theirs)):
        for x, y in zip(a, b):
            assert x == pytest.approx(y, rel=1e-12, abs=1e-15), f"epoch {epoch + 1}: {x} vs {y}"


@pytest.mark.parametrize("name, factory", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_lr_sequence_matches_torch(name, factory, torch):
    ours_opt, torch_opt = _optimizers(nn, name), _optimizers(torch, name)
    ours, theirs = factory(nn.optim.lr_scheduler, ours_opt), factory(torch.optim.lr_scheduler, torch_opt)
    assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)  # epoch 0
    assert [g["initial_lr"] for g in ours_opt.param_groups] == [g["initial_lr"] for g in torch_opt.param_groups]
    _assert_sequences_equal(_run(ours, ours_opt, STEPS), _run(theirs, torch_opt, STEPS))
    assert ours.last_epoch == theirs.last_epoch
    assert set(ours.state_dict()) == set(theirs.state_dict())


CLOSED_FORM = [
    ("step", lambda s, o: s.StepLR(o, step_size=3, gamma=0.5)),
    ("multistep", lambda s, o: s.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.3)),
    ("exponential", lambda s, o: s.ExponentialLR(o, gamma=0.9)),
    ("cosine", lambda s, o: s.CosineAnnealingLR(o, T_max=10, eta_min=0.001)),
    ("linear", lambda s, o: s.LinearLR(o, start_factor=0.5, total_iters=6)),
    ("constant", lambda s, o: s.ConstantLR(o, factor=0.5, total_iters=4)),
]


@pytest.mark.parametrize("factory", [c[1] for c in CLOSED_FORM], ids=[c[0] for c in CLOSED_FORM])
def test_explicit_epoch_uses_the_closed_form_like_torch(factory, torch):
    ours_opt, torch_opt = _optimizers(nn), _optimizers(torch)
    ours, theirs = factory(nn.optim.lr_scheduler, ours_opt), factory(torch.optim.lr_scheduler, torch_opt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in (4, 1, 12, 7, 0, 25):
            ours_opt.step()
            torch_opt.step()
            ours.step(epoch)
            theirs.step(epoch)
            assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12), f"epoch {epoch}"
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        ours.step(3)


@pytest.mark.parametrize("name, factory", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_state_dict_round_trip_resumes_the_same_sequence(name, factory):
    straight_opt = _optimizers(nn, name)
    straight = factory(nn.optim.lr_scheduler, straight_opt)
    expected = _run(straight, straight_opt, 25)

    first_opt = _optimizers(nn, name)
    first = factory(nn.optim.lr_scheduler, first_opt)
    before = _run(first, first_opt, 10)
    buffer = io.BytesIO()
    tensor.save({"optim": first_opt.state_dict(), "sched": first.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = tensor.load(buffer)  # weights_only: the scheduler state is plain data

    resumed_opt = _optimizers(nn, name, lrs=(7.0, 8.0))
    resumed = factory(nn.optim.lr_scheduler, resumed_opt)
    resumed_opt.load_state_dict(checkpoint["optim"])
    resumed.load_state_dict(checkpoint["sched"])
    _assert_sequences_equal(before + _run(resumed, resumed_opt, 15), expected)


def test_lambda_state_dict_keeps_callable_object_state():
    class Decay:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, epoch):
            return self.rate ** epoch

    sched = nn.optim.lr_scheduler.LambdaLR(_optimizers(nn), [Decay(0.5), lambda e: 1.0])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"rate": 0.5}, None]
    other = nn.optim.lr_scheduler.LambdaLR(_optimizers(nn), [Decay(0.9), lambda e: 1.0])
    other.load_state_dict(state)
    assert other.lr_lambdas[0].rate == 0.5


def test_scheduler_warnings():
    opt = _optimizers(nn)
    sched = nn.optim.lr_scheduler.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
        sched.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()
    opt = _optimizers(nn)
    sched = nn.optim.lr_scheduler.StepLR(opt, step_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()


def test_onecycle_raises_when_stepped_past_total_steps():
    opt = _optimizers(nn)
    sched = nn.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    opt.step()
    for _ in range(3):
        sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total steps is 3"):
        sched.step()


def _sgd():
    return _optimizers(nn)


BAD_ARGS = [
    (ValueError, "Starting multiplicative factor expected to be greater than 0",
     lambda s: s.LinearLR(_sgd(), start_factor=0.0)),
    (ValueError, "Ending multiplicative factor expected to be between 0 and 1",
     lambda s: s.LinearLR(_sgd(), end_factor=1.5)),
    (ValueError, "Constant multiplicative factor expected to be between 0 and 1",
     lambda s: s.ConstantLR(_sgd(), factor=2.0)),
    (ValueError, "Expected 2 lr_lambdas, but got 1", lambda s: s.LambdaLR(_sgd(), [lambda e: 1.0])),
    (ValueError, "You must define either total_steps OR \\(epochs AND steps_per_epoch\\)",
     lambda s: s.OneCycleLR(_sgd(), max_lr=1.0)),
    (ValueError, "Expected positive integer total_steps, but got 0", lambda s: s.OneCycleLR(_sgd(), 1.0, 0)),
    (ValueError, "Expected positive integer epochs, but got -1",
     lambda s: s.OneCycleLR(_sgd(), 1.0, epochs=-1, steps_per_epoch=3)),
    (ValueError, "Expected float between 0 and 1 pct_start, but got 1.5",
     lambda s: s.OneCycleLR(_sgd(), 1.0, 10, pct_start=1.5)),
    (ValueError, "anneal_strategy must be one of 'cos' or 'linear', instead got exp",
     lambda s: s.OneCycleLR(_sgd(), 1.0, 10, anneal_strategy="exp")),
    (ValueError, "max_lr must have the same length as optimizer.param_groups. max_lr has 3 values",
     lambda s: s.OneCycleLR(_sgd(), [1.0, 2.0, 3.0], 10)),
    (ValueError, "optimizer must support momentum or beta1 with `cycle_momentum` option enabled",
     lambda s: s.OneCycleLR(_optimizers(nn, "Adagrad"), 1.0, 10)),
    (TypeError, "list is not an Optimizer", lambda s: s.StepLR([], step_size=1)),
    (KeyError, "param 'initial_lr' is not specified in param_groups\\[0\\] when resuming",
     lambda s: s.StepLR(_sgd(), step_size=1, last_epoch=5)),
    (ValueError, "SequentialLR expects at least one scheduler", lambda s: s.SequentialLR(_sgd(), [], [])),
    (ValueError, "expects number of schedulers provided to be one more than the number of milestone points",
     lambda s: (lambda o: s.SequentialLR(o, [s.StepLR(o, 2), s.StepLR(o, 3)], milestones=[2, 4]))(_sgd())),
    (ValueError, "SequentialLR expects all schedulers to belong to the same optimizer",
     lambda s: s.SequentialLR(_sgd(), [s.StepLR(_sgd(), 2)], milestones=[])),
]


@pytest.mark.parametrize("error, message, build", BAD_ARGS, ids=[m[:40] for _, m, _ in BAD_ARGS])
def test_bad_arguments_raise(error, message, build):
    with pytest.raises(error, match=message):
        build(nn.optim.lr_scheduler)


# ---------------------------------------------------------------- tensor lr, added groups, step order, _LRScheduler
@pytest.mark.parametrize("make", [
    lambda o: nn.optim.lr_scheduler.StepLR(o, 1, gamma=0.5),
    lambda o: nn.optim.lr_scheduler.OneCycleLR(o, 0.1, total_steps=10),
    lambda o: nn.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, cycle_momentum=False),
    lambda o: nn.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 2),
])
def test_tensor_lr_is_filled_in_place(make):
    lr = tensor.tensor(0.01)
    p = nn.Parameter(tensor.ones(2))
    opt = nn.optim.Adam([p], lr=lr)
    sched = make(opt)
    assert opt.param_groups[0]["initial_lr"] is not lr
    p.grad = tensor.ones(2)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr
    assert float(lr) == pytest.approx(sched.get_last_lr()[0])


def test_plateau_fills_tensor_lr():
    lr = tensor.tensor(0.1)
    opt = nn.optim.SGD([nn.Parameter(tensor.ones(1))], lr=lr)
    sched = nn.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
    for _ in range(3):
        sched.step(1.0)
    assert opt.param_groups[0]["lr"] is lr and float(lr) < 0.1


def test_group_added_after_scheduler_raises():
    opt = nn.optim.SGD([nn.Parameter(tensor.ones(1))], lr=0.1)
    sched = nn.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.5**e)
    opt.add_param_group({"params": [nn.Parameter(tensor.ones(1))], "lr": 0.3})
    opt.step()
    with pytest.raises(ValueError, match="shorter"):
        sched.step()


def test_sequential_rejects_plateau():
    opt = nn.optim.SGD([nn.Parameter(tensor.ones(1))], lr=0.1)
    schedulers = [nn.optim.lr_scheduler.StepLR(opt, 2), nn.optim.lr_scheduler.ReduceLROnPlateau(opt)]
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        nn.optim.lr_scheduler.SequentialLR(opt, schedulers, milestones=[2])


def _step_warnings(act) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        act()
    return [str(w.message) for w in caught]


def test_step_order_warnings_as_torch():
    opt = nn.optim.SGD([nn.Parameter(tensor.ones(1))], lr=0.1)
    sched = nn.optim.lr_scheduler.StepLR(opt, 2)
    opt.step = (lambda f: lambda *a, **k: f(*a, **k))(opt.step)

    def overridden():
        opt.step()
        sched.step()

    assert any("has been overridden" in m for m in _step_warnings(overridden))
    early = nn.optim.SGD([nn.Parameter(tensor.ones(1))], lr=0.1)
    early.step()  # before the scheduler: does not count
    later = nn.optim.lr_scheduler.StepLR(early, 2)
    assert any("before `optimizer.step()`" in m for m in _step_warnings(later.step))


def test_old_lrscheduler_name_is_subclassable():
    class Halving(nn.optim.lr_scheduler._LRScheduler):
        def get_lr(self):
            return [base * 0.5**self.last_epoch for base in self.base_lrs]

    opt = nn.optim.SGD([nn.Parameter(tensor.ones(1))], lr=0.2)
    sched = Halving(opt)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1)
