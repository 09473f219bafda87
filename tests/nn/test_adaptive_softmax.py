"""AdaptiveLogSoftmaxWithLoss against torch: output, loss, gradients, log_prob and predict."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from tests.helpers import assert_close

RNG = np.random.default_rng(0)


def _pair(torch, **kwargs):
    ours, theirs = (
        nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10], **kwargs),
        torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10], **kwargs),
    )
    state = {k: tensor.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    assert list(state) == list(ours.state_dict())
    ours.load_state_dict(state)
    return ours, theirs


@pytest.mark.parametrize("head_bias", [False, True])
def test_matches_torch(head_bias, torch):
    ours, theirs = _pair(torch, head_bias=head_bias, div_value=2.0)
    x = RNG.standard_normal((6, 8)).astype("float32")
    target = np.array([0, 5, 19, 3, 11, 9])
    ours_x, theirs_x = tensor.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, ref = ours(ours_x, tensor.tensor(target)), theirs(theirs_x, torch.tensor(target))
    assert_close(out.output, ref.output.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert_close(out.loss, ref.loss.detach().numpy(), rtol=1e-5, atol=1e-6)
    out.loss.backward()
    ref.loss.backward()
    assert_close(ours_x.grad, theirs_x.grad.numpy(), rtol=1e-5, atol=1e-6)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert_close(p.grad, q.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert_close(
        ours.log_prob(tensor.tensor(x)), theirs.log_prob(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6
    )
    assert ours.predict(tensor.tensor(x)).tolist() == theirs.predict(torch.tensor(x)).tolist()
    single = ours(tensor.tensor(x[0]), tensor.tensor(target[0]))
    assert_close(single.output, ref.output[0].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 20, [10, 4])
    layer = nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 19\]"):
        layer(tensor.zeros(2, 8), tensor.tensor([0, 20]))
