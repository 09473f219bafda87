"""F.embedding_bag and nn.EmbeddingBag against torch: modes, offsets, per-sample weights,
padding, empty bags; values and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from tests.helpers import assert_close

RNG = np.random.default_rng(0)
WEIGHT = RNG.standard_normal((10, 4)).astype("float32")
FLAT = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0], dtype=np.int64)
OFFSETS = np.array([0, 3, 3, 7], dtype=np.int64)  # the second bag is empty


# per_sample_weights is sum-only (as in torch)
@pytest.mark.parametrize(
    "mode, layout",
    [(m, lay) for m in ("sum", "mean", "max")
     for lay in ("2d", "offsets", "last_offset", "short_last_offset", "padding", "weights")
     if lay not in ("weights", "short_last_offset") or m == "sum"],
)
def test_matches_torch(mode, layout, torch):
    kwargs = {"mode": mode}
    inputs = {"input": FLAT, "offsets": OFFSETS}
    if layout == "2d":
        inputs = {"input": FLAT.reshape(2, 5)}
    elif layout == "last_offset":
        inputs["offsets"] = np.append(OFFSETS, len(FLAT))
        kwargs["include_last_offset"] = True
    elif layout == "short_last_offset":  # the last two indices are in no bag
        inputs["offsets"] = np.append(OFFSETS, len(FLAT) - 2)
        kwargs["include_last_offset"] = True
    elif layout == "padding":
        kwargs["padding_idx"] = 4
    elif layout == "weights":
        inputs["per_sample_weights"] = RNG.standard_normal(len(FLAT)).astype("float32")
    ours_w = tensor.tensor(WEIGHT, requires_grad=True)
    theirs_w = torch.tensor(WEIGHT, requires_grad=True)
    out = nn.functional.embedding_bag(weight=ours_w, **{k: tensor.tensor(v) for k, v in inputs.items()}, **kwargs)
    ref = torch.nn.functional.embedding_bag(
        weight=theirs_w, **{k: torch.tensor(v) for k, v in inputs.items()}, **kwargs
    )
    assert_close(out, ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    cot = RNG.standard_normal(ref.shape).astype("float32")
    (out * tensor.tensor(cot)).sum().backward()
    if layout == "short_last_offset":
        # torch's gradient rows for the indices in no bag are uninitialised memory: the sum's
        # gradient is each bag's cotangent on the rows of its indices, and nothing elsewhere
        expected = np.zeros_like(WEIGHT)
        bounds = list(inputs["offsets"])
        for bag, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
            np.add.at(expected, FLAT[lo:hi], cot[bag])
        assert_close(ours_w.grad, expected, rtol=1e-5, atol=1e-6)
        return
    (ref * torch.tensor(cot)).sum().backward()
    assert_close(ours_w.grad, theirs_w.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_indices_after_the_last_offset_are_in_no_bag():
    # torch's float32 'mean' divides by the count up to the end of the input; its 'max' and float64
    # kernels run the last bag to the end. The last offset ends the last bag, as documented.
    weight = np.arange(20.0).reshape(10, 2)
    out = nn.functional.embedding_bag(tensor.tensor([1, 2, 4, 5, 4, 3]), tensor.tensor(weight),
                                      tensor.tensor([0, 2, 4]), mode="mean", include_last_offset=True)
    assert_close(out, np.array([weight[[1, 2]].mean(0), weight[[4, 5]].mean(0)]))


def test_layer_and_from_pretrained(torch):
    bag = nn.EmbeddingBag.from_pretrained(tensor.tensor(WEIGHT), mode="sum")
    ref = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(WEIGHT), mode="sum")
    assert_close(
        bag(tensor.tensor(FLAT), tensor.tensor(OFFSETS)),
        ref(torch.tensor(FLAT), torch.tensor(OFFSETS)).numpy(),
        rtol=1e-5,
        atol=1e-6,
    )
    assert not bag.weight.requires_grad
    fresh = nn.EmbeddingBag(10, 3, padding_idx=2)
    assert fresh.weight[2].abs().sum().item() == 0


def test_errors():
    weight = tensor.tensor(WEIGHT)
    with pytest.raises(ValueError, match="offsets has to be None"):
        nn.functional.embedding_bag(tensor.tensor(FLAT.reshape(2, 5)), weight, tensor.tensor(OFFSETS))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        nn.functional.embedding_bag(tensor.tensor(FLAT), weight)
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        nn.functional.embedding_bag(
            tensor.tensor(FLAT), weight, tensor.tensor(OFFSETS), per_sample_weights=tensor.ones(10)
        )


@pytest.mark.parametrize("call", [
    lambda w: nn.functional.embedding_bag(tensor.tensor([[1, 1]]), w, mode="max", padding_idx=1),
    lambda w: nn.functional.embedding_bag(tensor.tensor([], dtype=tensor.int64), w, tensor.tensor([0]), mode="max"),
])
def test_max_of_only_empty_bags_stays_in_the_graph(call):
    weight = tensor.tensor(WEIGHT, requires_grad=True)
    out = call(weight)
    out.sum().backward()
    assert_close(out, np.zeros((1, 4), "float32"))
    assert_close(weight.grad, np.zeros_like(WEIGHT))


@pytest.mark.parametrize("call, message", [
    (lambda: nn.functional.embedding_bag(tensor.tensor([[1, 10]]), tensor.tensor(WEIGHT)),
     r"Index 1 of input takes value 10 which is not in the valid range \[0, 10\)"),
    (lambda: nn.functional.embedding_bag(tensor.tensor([1, 2, 3]), tensor.tensor(WEIGHT), tensor.tensor([0, 5])),
     "can not be greater than input's length 3"),
    (lambda: nn.functional.embedding_bag(tensor.tensor([1, 2, 3]), tensor.tensor(WEIGHT, dtype=tensor.float64),
                                         tensor.tensor([0, 1]), mode="sum", per_sample_weights=tensor.ones(3)),
     "per_sample_weights"),
])
def test_bad_indices_offsets_and_weights_are_runtime_errors(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


@pytest.mark.parametrize("kwargs", [
    {"max_norm": 1.0, "norm_type": 3.0, "scale_grad_by_freq": True, "padding_idx": -1},
    {"mode": "max", "padding_idx": 1},
    {"mode": "sum"},
])
def test_repr_matches_torch(kwargs, torch):
    assert repr(nn.EmbeddingBag(10, 3, **kwargs)) == repr(torch.nn.EmbeddingBag(10, 3, **kwargs))
