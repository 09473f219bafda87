"""TransformerDecoderLayer, TransformerDecoder and Transformer against torch: outputs and every
gradient, with masks, norm_first, batch_first and unbatched inputs."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from tests.helpers import assert_close


def _randn(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def _load(ours, theirs):
    state = {k: tensor.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    assert list(state) == list(ours.state_dict())
    ours.load_state_dict(state)


CAUSAL = np.triu(np.full((4, 4), -np.inf, np.float32), 1)
PAD_T = np.array([[False] * 4, [False, False, True, True]])
PAD_S = np.array([[False] * 5, [False, False, False, False, True]])

# (module, constructor kwargs, inputs, masks)
CASES = [
    ("layer", {}, ((4, 2, 8), (5, 2, 8)), {}),
    (
        "layer",
        {"norm_first": True, "batch_first": True, "activation": "gelu"},
        ((2, 4, 8), (2, 5, 8)),
        {"tgt_mask": CAUSAL, "memory_key_padding_mask": PAD_S},
    ),
    ("layer", {}, ((4, 8), (5, 8)), {"tgt_mask": CAUSAL}),
    ("decoder", {}, ((4, 2, 8), (5, 2, 8)), {"tgt_mask": CAUSAL, "tgt_key_padding_mask": PAD_T}),
    (
        "transformer",
        {},
        ((5, 2, 8), (4, 2, 8)),
        {"tgt_mask": CAUSAL, "src_key_padding_mask": PAD_S, "memory_key_padding_mask": PAD_S},
    ),
    ("transformer", {"batch_first": True, "norm_first": True}, ((2, 5, 8), (2, 4, 8)), {"tgt_mask": CAUSAL != 0}),
]


def _build(lib, kind, kwargs):
    common = {"dim_feedforward": 16, "dropout": 0.0, **kwargs}
    if kind == "layer":
        return lib.TransformerDecoderLayer(8, 2, **common)
    if kind == "decoder":
        return lib.TransformerDecoder(lib.TransformerDecoderLayer(8, 2, **common), 2, norm=lib.LayerNorm(8))
    return lib.Transformer(8, 2, num_encoder_layers=2, num_decoder_layers=2, **common)


@pytest.mark.parametrize("kind, kwargs, shapes, masks", CASES)
def test_matches_torch(kind, kwargs, shapes, masks, torch):
    theirs, ours = _build(torch.nn, kind, kwargs), _build(nn, kind, kwargs)
    _load(ours, theirs)
    arrays = [_randn(*s, seed=i) for i, s in enumerate(shapes)]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    o_in = [tensor.tensor(a, requires_grad=True) for a in arrays]
    t_out = theirs(*t_in, **{k: torch.tensor(v) for k, v in masks.items()})
    o_out = ours(*o_in, **{k: tensor.tensor(v) for k, v in masks.items()})
    assert_close(o_out, t_out.detach().numpy(), rtol=1e-4, atol=1e-5)
    w = _randn(*t_out.shape, seed=9)
    (t_out * torch.tensor(w)).sum().backward()
    (o_out * tensor.tensor(w)).sum().backward()
    for a, b in zip(o_in, t_in):
        assert_close(a.grad, b.grad.numpy(), rtol=1e-3, atol=1e-4)
    ours_params = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        assert_close(ours_params[name].grad, p.grad.numpy(), rtol=1e-3, atol=1e-4)


def test_transformer_initialises_matrices_with_xavier_uniform():
    model = nn.Transformer(16, 2, 1, 1, dim_feedforward=32)
    weight = model.encoder.layers[0].linear1.weight.detach().numpy()
    bound = (6 / (16 + 32)) ** 0.5
    assert np.abs(weight).max() <= bound and np.abs(weight).max() > 0.8 * bound
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    assert mask.tolist() == [[0.0, -np.inf, -np.inf], [0.0, 0.0, -np.inf], [0.0, 0.0, 0.0]]


def test_transformer_checks_batch_and_width():
    model = nn.Transformer(8, 2, 1, 1, dim_feedforward=8)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(tensor.zeros(3, 2, 8), tensor.zeros(3, 1, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(tensor.zeros(3, 2, 8), tensor.zeros(3, 2, 4))
    with pytest.raises(TypeError, match="decoder_layer must be a Module"):
        nn.TransformerDecoder("layer", 2)
