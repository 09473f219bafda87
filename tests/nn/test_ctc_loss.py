"""CTC loss against torch: padded and concatenated targets, every reduction, impossible
alignments and zero_infinity, unbatched input; gradients of the logits through log_softmax."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close

RNG = np.random.default_rng(0)
T, N, C = 12, 3, 5
LOGITS = RNG.standard_normal((T, N, C))
PADDED = np.array([[1, 2, 2, 0], [3, 1, 4, 4], [2, 0, 0, 0]])
TARGET_LENGTHS, INPUT_LENGTHS = [3, 4, 1], [12, 10, 6]
CONCATENATED = np.concatenate([row[:n] for row, n in zip(PADDED, TARGET_LENGTHS)])


def _both(torch, targets, reduction, input_lengths=INPUT_LENGTHS, logits=LOGITS, **kwargs):
    ours_x = tensor.tensor(logits, requires_grad=True)
    theirs_x = torch.tensor(logits, requires_grad=True)
    ours = F.ctc_loss(
        F.log_softmax(ours_x, -1),
        tensor.tensor(targets),
        input_lengths,
        TARGET_LENGTHS[: len(input_lengths)],
        reduction=reduction,
        **kwargs,
    )
    theirs = torch.nn.functional.ctc_loss(
        torch.log_softmax(theirs_x, -1),
        torch.tensor(targets),
        torch.tensor(input_lengths),
        torch.tensor(TARGET_LENGTHS[: len(input_lengths)]),
        reduction=reduction,
        **kwargs,
    )
    assert_close(ours, theirs.detach().numpy(), rtol=1e-9, atol=1e-12)
    ours.sum().backward()
    theirs.sum().backward()
    assert_close(ours_x.grad, theirs_x.grad.numpy(), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("targets", [PADDED, CONCATENATED], ids=["padded", "concatenated"])
def test_matches_torch(targets, reduction, torch):
    _both(torch, targets, reduction)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_impossible_alignments(zero_infinity, torch):
    ours = F.ctc_loss(
        F.log_softmax(tensor.tensor(LOGITS), -1),
        tensor.tensor(PADDED),
        [12, 10, 2],
        TARGET_LENGTHS,
        reduction="none",
        zero_infinity=zero_infinity,
    )  # 4 labels need more than 2 steps
    theirs = torch.nn.functional.ctc_loss(
        torch.log_softmax(torch.tensor(LOGITS), -1),
        torch.tensor(PADDED),
        torch.tensor([12, 10, 2]),
        torch.tensor(TARGET_LENGTHS),
        reduction="none",
        zero_infinity=zero_infinity,
    )
    assert_close(ours, theirs.numpy(), rtol=1e-9)


def test_layer_and_unbatched_input(torch):
    loss = nn.CTCLoss(blank=0, reduction="sum")
    lp = F.log_softmax(tensor.tensor(LOGITS[:, 0]), -1)
    ours = loss(lp, tensor.tensor(PADDED[0, :3]), [12], [3])
    theirs = torch.nn.CTCLoss(reduction="sum")(
        torch.log_softmax(torch.tensor(LOGITS[:, 0]), -1),
        torch.tensor(PADDED[0, :3]),
        torch.tensor([12]),
        torch.tensor([3]),
    )
    assert_close(ours, theirs.numpy(), rtol=1e-9)
