"""swa_utils against torch.optim.swa_utils: AveragedModel (mean, EMA, buffers), update_bn, SWALR."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from nn.optim import swa_utils as swa
from tests.helpers import assert_close
from tests.nn.optim.test_lr_scheduler import _assert_sequences_equal, _optimizers, _run
from tests.nn.oracle import copy_state, to_torch


def _models(torch):
    ours = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    copy_state(ours, theirs, torch)
    return ours, theirs


def _perturb(ours, theirs, torch, seed):
    rng = np.random.default_rng(seed)
    with tensor.no_grad(), torch.no_grad():
        for (_, mine), (_, their) in zip(ours.named_parameters(), theirs.named_parameters()):
            delta = rng.standard_normal(mine.shape).astype("float32")
            mine.add_(tensor.tensor(delta))
            their.add_(torch.from_numpy(delta))


@pytest.mark.parametrize("kind", ["mean", "ema", "ema-multi", "buffers"])
def test_averaged_model_matches_torch(kind, torch):
    ours, theirs = _models(torch)
    swa = nn.optim.swa_utils
    options = {
        "mean": ({}, {}),
        "buffers": ({"use_buffers": True}, {"use_buffers": True}),
        "ema": ({"avg_fn": swa.get_ema_avg_fn(0.9)}, {"avg_fn": torch.optim.swa_utils.get_ema_avg_fn(0.9)}),
        "ema-multi": (
            {"multi_avg_fn": swa.get_ema_multi_avg_fn(0.8)},
            {"multi_avg_fn": torch.optim.swa_utils.get_ema_multi_avg_fn(0.8)},
        ),
    }[kind]
    ours_avg = swa.AveragedModel(ours, **options[0])
    theirs_avg = torch.optim.swa_utils.AveragedModel(theirs, **options[1])
    x = np.random.default_rng(0).standard_normal((5, 3)).astype("float32")
    for seed in range(4):
        _perturb(ours, theirs, torch, seed)
        ours(tensor.tensor(x))  # moves the BatchNorm buffers
        theirs(torch.from_numpy(x))
        ours_avg.update_parameters(ours)
        theirs_avg.update_parameters(theirs)
    for name, value in theirs_avg.state_dict().items():
        assert_close(ours_avg.state_dict()[name], value.numpy(), rtol=1e-5, atol=1e-6)


def test_update_bn_matches_torch(torch):
    ours, theirs = _models(torch)
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal((6, 3)).astype("float32") for _ in range(3)]
    nn.optim.swa_utils.update_bn([(tensor.tensor(b), 0) for b in batches], ours)
    torch.optim.swa_utils.update_bn([(to_torch(torch, b), 0) for b in batches], theirs)
    for name, value in theirs.state_dict().items():
        assert_close(ours.state_dict()[name], value.numpy(), rtol=1e-5, atol=1e-6)
    assert ours[1].momentum == 0.1 and ours.training


@pytest.mark.parametrize(
    "options",
    [
        {"swa_lr": 0.05},
        {"swa_lr": [0.01, 0.2], "anneal_epochs": 4, "anneal_strategy": "linear"},
        {"swa_lr": 0.02, "anneal_epochs": 0},
    ],
)
def test_swalr_sequence_matches_torch(options, torch):
    ours_opt, torch_opt = _optimizers(nn), _optimizers(torch)
    ours = nn.optim.swa_utils.SWALR(ours_opt, **options)
    theirs = torch.optim.swa_utils.SWALR(torch_opt, **options)
    _assert_sequences_equal(_run(ours, ours_opt, 15), _run(theirs, torch_opt, 15))


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="Invalid decay value 1.5"):
        nn.optim.swa_utils.get_ema_avg_fn(1.5)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        nn.optim.swa_utils.SWALR(_optimizers(nn), 0.1, anneal_strategy="step")
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        nn.optim.swa_utils.AveragedModel(nn.Linear(2, 2), avg_fn=lambda *a: a[0], multi_avg_fn=lambda *a: None)


@pytest.mark.parametrize("kind", ["ema", "swa"])
def test_multi_avg_fn_with_integer_buffers(kind):
    """The EMA recipe with BatchNorm: ``num_batches_tracked`` (int64) is averaged as torch's EMA does."""
    fn = swa.get_ema_multi_avg_fn(0.9) if kind == "ema" else swa.get_swa_multi_avg_fn()
    net = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    averaged = swa.AveragedModel(net, multi_avg_fn=fn, use_buffers=True)
    net(tensor.ones(4, 2))
    averaged.update_parameters(net)
    for _ in range(3):
        net(tensor.ones(4, 2))
    averaged.update_parameters(net)
    tracked = averaged.module[1].num_batches_tracked
    assert tracked.dtype == tensor.int64
    assert int(tracked) == (1 if kind == "ema" else 2)  # trunc(0.9 * 1 + 0.1 * 4), trunc((1 + 4) / 2)
