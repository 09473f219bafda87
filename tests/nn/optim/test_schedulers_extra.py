"""MultiplicativeLR, PolynomialLR, CosineAnnealingWarmRestarts, CyclicLR, ChainedScheduler and
ReduceLROnPlateau against torch.optim.lr_scheduler: sequences, closed forms, state_dict."""

from __future__ import annotations

import io
import warnings

import pytest

import nn
import tensor
from tests.nn.optim.test_lr_scheduler import STEPS, _assert_sequences_equal, _optimizers, _run

CASES = [
    ("multiplicative", "SGD", lambda s, o: s.MultiplicativeLR(o, lambda e: 0.9)),
    ("multiplicative-per-group", "SGD", lambda s, o: s.MultiplicativeLR(o, [lambda e: 0.9, lambda e: 1 - e / 100])),
    ("polynomial", "SGD", lambda s, o: s.PolynomialLR(o, total_iters=12, power=2.0)),
    ("polynomial-linear", "SGD", lambda s, o: s.PolynomialLR(o)),
    ("warm-restarts", "SGD", lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=5)),
    ("warm-restarts-mult", "SGD", lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01)),
    ("cyclic", "SGD", lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4)),
    (
        "cyclic-tri2",
        "SGD",
        lambda s, o: s.CyclicLR(o, 0.01, [0.1, 0.2], step_size_up=3, step_size_down=5, mode="triangular2"),
    ),
    ("cyclic-exp", "Adam", lambda s, o: s.CyclicLR(o, 0.001, 0.01, step_size_up=4, mode="exp_range", gamma=0.9)),
    ("cyclic-no-momentum", "Adagrad", lambda s, o: s.CyclicLR(o, 0.01, 0.1, step_size_up=2, cycle_momentum=False)),
    (
        "chained",
        "SGD",
        lambda s, o: s.ChainedScheduler([s.ExponentialLR(o, gamma=0.9), s.StepLR(o, step_size=4, gamma=0.5)]),
    ),
    (
        "sequential-poly",
        "SGD",
        lambda s, o: s.SequentialLR(
            o, [s.LinearLR(o, start_factor=0.1, total_iters=4), s.PolynomialLR(o, total_iters=20)], milestones=[4]
        ),
    ),
]


@pytest.mark.parametrize("name, factory", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_lr_sequence_matches_torch(name, factory, torch):
    ours_opt, torch_opt = _optimizers(nn, name), _optimizers(torch, name)
    ours, theirs = factory(nn.optim.lr_scheduler, ours_opt), factory(torch.optim.lr_scheduler, torch_opt)
    assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
    _assert_sequences_equal(_run(ours, ours_opt, STEPS), _run(theirs, torch_opt, STEPS))
    assert set(ours.state_dict()) <= set(theirs.state_dict()) | {"_step_count"}


@pytest.mark.parametrize("name, factory", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_state_dict_round_trip_resumes_the_same_sequence(name, factory):
    straight_opt = _optimizers(nn, name)
    expected = _run(factory(nn.optim.lr_scheduler, straight_opt), straight_opt, 20)
    first_opt = _optimizers(nn, name)
    first = factory(nn.optim.lr_scheduler, first_opt)
    before = _run(first, first_opt, 8)
    buffer = io.BytesIO()
    tensor.save({"optim": first_opt.state_dict(), "sched": first.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = tensor.load(buffer)
    resumed_opt = _optimizers(nn, name, lrs=(7.0, 8.0))
    resumed = factory(nn.optim.lr_scheduler, resumed_opt)
    resumed_opt.load_state_dict(checkpoint["optim"])
    resumed.load_state_dict(checkpoint["sched"])
    _assert_sequences_equal(before + _run(resumed, resumed_opt, 12), expected)


@pytest.mark.parametrize("epochs", [(0.5, 3.2, 7, 11.5, 2), (1, 4, 9, 21, 0.25)])
def test_warm_restarts_fractional_epochs_match_torch(epochs, torch):
    ours_opt, torch_opt = _optimizers(nn), _optimizers(torch)
    ours = nn.optim.lr_scheduler.CosineAnnealingWarmRestarts(ours_opt, T_0=3, T_mult=2)
    theirs = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(torch_opt, T_0=3, T_mult=2)
    for epoch in epochs:
        ours.step(epoch)
        theirs.step(epoch)
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        ours.step(-1)


def test_polynomial_closed_form_matches_torch(torch):
    ours_opt, torch_opt = _optimizers(nn), _optimizers(torch)
    ours = nn.optim.lr_scheduler.PolynomialLR(ours_opt, total_iters=8, power=1.5)
    theirs = torch.optim.lr_scheduler.PolynomialLR(torch_opt, total_iters=8, power=1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in (3, 1, 9, 5):
            ours.step(epoch)
            theirs.step(epoch)
            assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"mode": "max", "threshold_mode": "abs", "patience": 1, "cooldown": 2},
        {"factor": 0.5, "patience": 0, "min_lr": [0.02, 0.001], "threshold": 0.1},
    ],
)
def test_reduce_on_plateau_matches_torch(options, torch):
    ours_opt, torch_opt = _optimizers(nn), _optimizers(torch)
    ours = nn.optim.lr_scheduler.ReduceLROnPlateau(ours_opt, **options)
    theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(torch_opt, **options)
    metrics = [1.0, 0.9, 0.95, 0.95, 0.89, 0.96, 0.97, 0.99, 0.5, 0.6] * 3
    for metric in metrics:
        ours.step(metric)
        theirs.step(metric)
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
        assert (ours.num_bad_epochs, ours.cooldown_counter, ours.best) == (
            theirs.num_bad_epochs,
            theirs.cooldown_counter,
            theirs.best,
        )
    restored = nn.optim.lr_scheduler.ReduceLROnPlateau(ours_opt)
    restored.load_state_dict(ours.state_dict())
    assert restored.is_better(-1e9, restored.best) == (ours.mode == "min")


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda s, o: s.ReduceLROnPlateau(o, factor=1.0), "Factor should be < 1.0."),
        (lambda s, o: s.ReduceLROnPlateau(o, mode="median"), "mode median is unknown!"),
        (lambda s, o: s.CyclicLR(o, 0.1, 1.0, mode="sawtooth"), "mode is invalid and scale_fn is None"),
        (lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=0), "Expected positive integer T_0, but got 0"),
        (lambda s, o: s.ChainedScheduler([]), "expects at least one scheduler"),
        (lambda s, o: s.ChainedScheduler([s.ReduceLROnPlateau(o)]), "does not support `ReduceLROnPlateau`"),
    ],
)
def test_bad_arguments_raise(make, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make(nn.optim.lr_scheduler, _optimizers(nn))


def test_cyclic_momentum_needs_an_optimizer_with_momentum():
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        nn.optim.lr_scheduler.CyclicLR(_optimizers(nn, "Adagrad"), 0.01, 0.1)
