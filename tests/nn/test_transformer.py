"""TransformerEncoderLayer and TransformerEncoder against torch, plus structure and errors."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from autograd import gradcheck
from tests.helpers import assert_close, to_numpy


def _randn(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def _build(torch, kwargs, stacked):
    theirs = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kwargs)
    ours = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kwargs)
    if stacked:
        theirs = torch.nn.TransformerEncoder(theirs, 2, norm=torch.nn.LayerNorm(8), enable_nested_tensor=False)
        ours = nn.TransformerEncoder(ours, 2, norm=nn.LayerNorm(8))
    state = {k: tensor.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    assert list(state) == list(ours.state_dict())
    ours.load_state_dict(state)
    return theirs, ours


CAUSAL = np.triu(np.full((5, 5), -np.inf, np.float32), 1)
PADDING = np.array([[False] * 5, [False, False, False, True, True]])

# (layer kwargs, stacked encoder, input shape, masks, forward kwargs)
CASES = [
    ({}, False, (5, 2, 8), {}, {}),
    ({"norm_first": True, "activation": "gelu", "batch_first": True}, False, (2, 5, 8), {}, {}),
    ({"bias": False}, False, (5, 2, 8), {}, {}),
    ({"layer_norm_eps": 1e-3}, False, (5, 2, 8), {"src_key_padding_mask": PADDING}, {}),
    ({}, False, (5, 2, 8), {"src_mask": CAUSAL}, {"is_causal": True}),
    ({}, False, (5, 2, 8), {"src_mask": CAUSAL != 0, "src_key_padding_mask": PADDING}, {}),
    ({}, False, (5, 8), {}, {}),  # unbatched
    ({}, True, (5, 2, 8), {"mask": CAUSAL}, {}),
    ({"batch_first": True}, True, (2, 5, 8), {"mask": CAUSAL, "src_key_padding_mask": PADDING.astype(np.float32)}, {}),
    ({"norm_first": True}, True, (5, 2, 8), {"src_key_padding_mask": PADDING}, {}),
]


@pytest.mark.parametrize("kwargs, stacked, shape, masks, call_kwargs", CASES)
def test_encoder_matches_torch(torch, device, kwargs, stacked, shape, masks, call_kwargs):
    theirs, ours = _build(torch, kwargs, stacked)
    ours.to(device)
    x = _randn(*shape)
    t_x = torch.tensor(x, requires_grad=True)
    o_x = tensor.tensor(x, device=device, requires_grad=True)
    t_out = theirs(t_x, **{k: torch.tensor(v) for k, v in masks.items()}, **call_kwargs)
    o_out = ours(o_x, **{k: tensor.tensor(v, device=device) for k, v in masks.items()}, **call_kwargs)
    assert_close(o_out, t_out.detach().numpy(), rtol=1e-4, atol=1e-5)
    w = _randn(*t_out.shape, seed=3)
    (t_out * torch.tensor(w)).sum().backward()
    (o_out * tensor.tensor(w, device=device)).sum().backward()
    assert_close(o_x.grad, t_x.grad.numpy(), rtol=1e-4, atol=1e-5)
    for p, q in zip(theirs.parameters(), ours.parameters()):
        assert_close(q.grad, p.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_eval_mode_matches_torch_with_dropout(torch, device):
    theirs = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.3).eval()
    ours = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.3).eval()
    ours.load_state_dict({k: tensor.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    ours.to(device)
    x = _randn(5, 2, 8)
    with torch.no_grad():
        expected = theirs(torch.tensor(x)).numpy()
    assert_close(ours(tensor.tensor(x, device=device)), expected, rtol=1e-4, atol=1e-5)


def test_dropout_changes_training_output_only(device):
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.5).to(device)
    x = tensor.randn(5, 2, 8, device=device)
    assert not np.allclose(to_numpy(layer(x)), to_numpy(layer(x)))
    layer.eval()
    assert_close(layer(x), layer(x))


def test_structure_and_repr_match_torch(torch):
    theirs = torch.nn.TransformerEncoderLayer(4, 2, 8)
    ours = nn.TransformerEncoderLayer(4, 2, 8)
    # LayerNorm's own repr is tested with LayerNorm; here the layer's structure and children.

    def lines(module):
        return [line.split("LayerNorm(")[0] for line in repr(module).splitlines()]
    assert lines(ours) == lines(theirs)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in theirs.named_parameters()]


def test_encoder_layers_are_independent_copies():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    encoder = nn.TransformerEncoder(layer, 3)
    assert len(encoder.layers) == 3
    weights = [m.linear1.weight for m in encoder.layers]
    assert len({id(w) for w in weights}) == 3 and all(w is not layer.linear1.weight for w in weights)
    assert_close(weights[0], weights[2])  # deep copies of the same initial layer
    assert isinstance(weights[1], nn.Parameter)


def test_custom_activation_callable(device):
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, activation=lambda t: t * 2).to(device)
    x = tensor.randn(3, 1, 8, device=device)
    reference = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, activation=lambda t: t).to(device)
    reference.load_state_dict(layer.state_dict())
    reference.linear2.weight.data = layer.linear2.weight.detach() * 2
    assert_close(layer(x), reference(x), atol=1e-5)


def test_gradcheck_float64():
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, dropout=0.0).double()
    x = tensor.randn(3, 1, 4, dtype=tensor.float64, requires_grad=True)
    assert gradcheck(lambda x, w: layer(x), (x, layer.linear1.weight))


@pytest.mark.parametrize("make, error, message", [
    (lambda: nn.TransformerEncoderLayer(8, 2, activation="tanh"), RuntimeError,
     "activation should be relu/gelu, not tanh"),
    (lambda: nn.TransformerEncoderLayer(8, 3), AssertionError, "embed_dim must be divisible by num_heads"),
    (lambda: nn.TransformerEncoder("layer", 2), TypeError, "encoder_layer must be a Module, got str"),
])
def test_constructor_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_forward_errors():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 8, but got 6"):
        layer(tensor.randn(5, 2, 6))
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is \(4, 4\), but should be \(5, 5\)."):
        layer(tensor.randn(5, 2, 8), src_mask=tensor.zeros(4, 4))
