"""scaled_dot_product_attention and MultiheadAttention against torch, gradcheck, init and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nn
import tensor
from autograd import gradcheck, gradgradcheck
from nn import functional as F
from tests.helpers import assert_close, to_numpy


def _randn(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def _bool_mask(shape, seed=0):
    mask = np.random.default_rng(seed).random(shape) > 0.3
    return mask


def _backward_and_compare_input_grads(torch, device, t_out, o_out, t_in, o_in, seed):
    """Backpropagate the same random weighting of both outputs; the inputs' gradients must agree."""
    w = _randn(*t_out.shape, seed=seed)
    (t_out * torch.tensor(w)).sum().backward()
    (o_out * tensor.tensor(w, device=device)).sum().backward()
    for t, o in zip(t_in, o_in):
        assert_close(o.grad, t.grad.numpy(), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- scaled_dot_product_attention

# (query, key, value shapes, keyword arguments with numpy masks)
SDPA_CASES = [
    ((2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5), {}),
    ((4, 8), (6, 8), (6, 8), {}),  # no batch dims
    ((2, 1, 4, 8), (3, 6, 8), (3, 6, 8), {}),  # broadcast batch dims
    ((2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 8), {"attn_mask": _bool_mask((4, 6))}),
    ((2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 8), {"attn_mask": _randn(2, 1, 4, 6)}),
    ((2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 8), {"is_causal": True}),
    ((2, 4, 8), (2, 6, 8), (2, 6, 8), {"is_causal": True}),  # L != S: top-left aligned
    ((2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 8), {"scale": 0.3}),
    ((2, 4, 3, 8), (2, 2, 5, 8), (2, 2, 5, 8), {"enable_gqa": True}),
]


@pytest.mark.parametrize("q_shape, k_shape, v_shape, kwargs", SDPA_CASES)
def test_sdpa_matches_torch(torch, device, q_shape, k_shape, v_shape, kwargs):
    arrays = [_randn(*q_shape, seed=1), _randn(*k_shape, seed=2), _randn(*v_shape, seed=3)]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    o_in = [tensor.tensor(a, device=device, requires_grad=True) for a in arrays]
    t_kwargs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    o_kwargs = {k: tensor.tensor(v, device=device) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    expected = torch.nn.functional.scaled_dot_product_attention(*t_in, **t_kwargs)
    actual = F.scaled_dot_product_attention(*o_in, **o_kwargs)
    assert_close(actual, expected.detach().numpy(), atol=1e-5)
    _backward_and_compare_input_grads(torch, device, expected, actual, t_in, o_in, seed=4)


def test_sdpa_fully_masked_rows_give_zeros_like_torch(torch, device):
    mask = np.ones((3, 5), bool)
    mask[0] = False
    arrays = [_randn(2, 3, 4), _randn(2, 5, 4), _randn(2, 5, 4)]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    o_in = [tensor.tensor(a, device=device, requires_grad=True) for a in arrays]
    expected = torch.nn.functional.scaled_dot_product_attention(*t_in, attn_mask=torch.tensor(mask))
    actual = F.scaled_dot_product_attention(*o_in, attn_mask=tensor.tensor(mask, device=device))
    assert_close(actual, expected.detach().numpy(), atol=1e-6)
    assert not np.isnan(to_numpy(actual)).any()
    expected.sum().backward()
    actual.sum().backward()
    for t, o in zip(t_in, o_in):
        assert_close(o.grad, t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_sdpa_non_contiguous_inputs(device):
    q = tensor.randn(4, 2, 8, device=device).transpose(0, 1)
    k = tensor.randn(6, 2, 8, device=device).transpose(0, 1)
    assert not q.is_contiguous()
    expected = (q.contiguous() @ k.contiguous().mT / math.sqrt(8)).softmax(-1) @ k.contiguous()
    assert_close(F.scaled_dot_product_attention(q, k, k), expected, atol=1e-6)


def test_sdpa_dropout_one_zeroes_the_output(device):
    q = tensor.randn(2, 3, 4, device=device, requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q, dropout_p=1.0)
    assert_close(out, np.zeros((2, 3, 4), np.float32))
    out.sum().backward()
    assert_close(q.grad, np.zeros((2, 3, 4), np.float32))  # every path to q goes through a dropped weight


def test_sdpa_dropout_keeps_the_expectation(device):
    q = tensor.randn(1, 4, 8, device=device)
    v = tensor.randn(1, 6, 8, device=device)
    plain = F.scaled_dot_product_attention(q, v, v)
    mean = sum(F.scaled_dot_product_attention(q, v, v, dropout_p=0.5) for _ in range(400)) / 400
    assert_close(mean, plain, atol=0.15, rtol=0)


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"attn_mask": "float"}])
def test_sdpa_gradcheck_and_gradgradcheck_float64(kwargs):
    q, k, v = (tensor.randn(2, 3, 4, dtype=tensor.float64, requires_grad=True) for _ in range(3))
    if kwargs.get("attn_mask") == "float":
        kwargs = {"attn_mask": tensor.randn(3, 3, dtype=tensor.float64)}
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kwargs)  # noqa: E731
    assert gradcheck(fn, (q, k, v))
    assert gradgradcheck(fn, (q, k, v))


@pytest.mark.parametrize("args, kwargs, error, message", [
    (((2, 3, 4), (2, 5, 6), (2, 5, 4)), {}, RuntimeError, "query and key must have the same embedding size"),
    (((2, 3, 4), (2, 5, 4), (2, 6, 4)), {}, RuntimeError, "key and value must have the same sequence length"),
    (((4,), (5, 4), (5, 4)), {}, RuntimeError, "expected query, key and value to be at least 2-D"),
    (((2, 3, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4)), {"enable_gqa": True}, RuntimeError,
     r"number of query heads \(3\) must be a multiple of the key/value heads"),
    (((2, 3, 4), (2, 5, 4), (2, 5, 4)), {"attn_mask": "int"}, RuntimeError,
     "Expected attn_mask dtype to be bool or float"),
    (((2, 3, 4), (2, 5, 4), (2, 5, 4)), {"attn_mask": "double"}, RuntimeError,
     "Expected attn_mask dtype to be bool or float"),
    (((2, 3, 4), (2, 5, 4), (2, 5, 4)), {"dropout_p": 1.5}, ValueError,
     "dropout probability has to be between 0 and 1, but got 1.5"),
])
def test_sdpa_errors(args, kwargs, error, message):
    q, k, v = (tensor.randn(*shape) for shape in args)
    masks = {"int": tensor.ones(3, 5, dtype=tensor.int64), "double": tensor.zeros(3, 5, dtype=tensor.float64)}
    if "attn_mask" in kwargs:
        kwargs = {**kwargs, "attn_mask": masks[kwargs["attn_mask"]]}
    with pytest.raises(error, match=message):
        F.scaled_dot_product_attention(q, k, v, **kwargs)


def test_sdpa_refuses_mixed_query_key_value_dtypes():
    q = tensor.randn(2, 3, 4)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, q.double(), q)


@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_sdpa_combines_attn_mask_with_is_causal_as_torch(mask_kind, torch):
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 1, 3, 4)).astype("float32")
    mask = rng.random((3, 3)) > 0.3 if mask_kind == "bool" else rng.standard_normal((3, 3)).astype("float32")
    ours = F.scaled_dot_product_attention(*[tensor.tensor(q)] * 3, attn_mask=tensor.tensor(mask), is_causal=True)
    theirs = torch.nn.functional.scaled_dot_product_attention(
        *[torch.from_numpy(q)] * 3, attn_mask=torch.from_numpy(mask), is_causal=True
    )
    assert_close(ours, theirs.numpy(), atol=1e-6)


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"attn_mask": "float32"}])
def test_sdpa_float16_accumulates_in_float32_as_torch(kwargs, torch):
    rng = np.random.default_rng(4)
    q = (rng.standard_normal((2, 2, 5, 8)) * 40).astype("float16")
    q[0, 0, 0] = 200.0  # q . q = 320000 overflows float16
    ours_kwargs, their_kwargs = dict(kwargs), dict(kwargs)
    if "attn_mask" in kwargs:
        mask = rng.standard_normal((5, 5)).astype("float32")
        ours_kwargs["attn_mask"], their_kwargs["attn_mask"] = tensor.tensor(mask), torch.from_numpy(mask)
    ours = F.scaled_dot_product_attention(*[tensor.tensor(q)] * 3, **ours_kwargs)
    theirs = torch.nn.functional.scaled_dot_product_attention(*[torch.from_numpy(q)] * 3, **their_kwargs)
    assert_close(ours, theirs.numpy(), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("add_zero_attn", [False, True])
def test_multi_head_attention_forward_with_static_k_and_v(need_weights, add_zero_attn, torch):
    rng = np.random.default_rng(5)
    arrays = {
        "query": rng.standard_normal((3, 2, 4)), "in_proj_weight": rng.standard_normal((12, 4)),
        "in_proj_bias": rng.standard_normal(12), "out_proj_weight": rng.standard_normal((4, 4)),
        "out_proj_bias": rng.standard_normal(4), "static_k": rng.standard_normal((4, 5, 2)),
        "static_v": rng.standard_normal((4, 5, 2)),
    }

    def run(module, convert):
        a = {name: convert(value.astype("float32")) for name, value in arrays.items()}
        q = a.pop("query")
        return module.multi_head_attention_forward(
            q, q, q, 4, 2, a["in_proj_weight"], a["in_proj_bias"], None, None, add_zero_attn, 0.0,
            a["out_proj_weight"], a["out_proj_bias"], static_k=a["static_k"], static_v=a["static_v"],
            need_weights=need_weights,
        )

    ours, theirs = run(F, tensor.tensor), run(torch.nn.functional, torch.from_numpy)
    assert_close(ours[0], theirs[0].numpy(), atol=1e-5)
    if need_weights:
        assert_close(ours[1], theirs[1].numpy(), atol=1e-6)


def test_static_k_of_the_wrong_size_is_refused():
    q = tensor.randn(3, 2, 4)
    with pytest.raises(AssertionError, match="expecting static_k.size"):
        F.multi_head_attention_forward(q, q, q, 4, 2, tensor.randn(12, 4), None, None, None, False, 0.0,
                                       tensor.randn(4, 4), None, static_k=tensor.randn(3, 5, 2),
                                       static_v=tensor.randn(4, 5, 2))


# ---------------------------------------------------------------- MultiheadAttention

def _compare_mha(torch, device, kwargs, call_kwargs, shapes, masks=None, self_attention=False):
    theirs = torch.nn.MultiheadAttention(8, 2, **kwargs)
    ours = nn.MultiheadAttention(8, 2, **kwargs)
    state = {k: tensor.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    assert list(state) == list(ours.state_dict())
    ours.load_state_dict(state)
    ours.to(device)
    if kwargs.get("dropout"):  # compare with dropout switched off by eval mode
        theirs.eval()
        ours.eval()
    arrays = [_randn(*s, seed=i) for i, s in enumerate(shapes)]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    o_in = [tensor.tensor(a, device=device, requires_grad=True) for a in arrays]
    if self_attention:
        t_in, o_in = t_in[:1] * 3, o_in[:1] * 3
    masks = masks or {}
    t_masks = {k: torch.tensor(v) for k, v in masks.items()}
    o_masks = {k: tensor.tensor(v, device=device) for k, v in masks.items()}
    t_out, t_w = theirs(*t_in, **t_masks, **call_kwargs)
    o_out, o_w = ours(*o_in, **o_masks, **call_kwargs)
    assert_close(o_out, t_out.detach().numpy(), atol=1e-5)
    if t_w is None:
        assert o_w is None
    else:
        assert_close(o_w, t_w.detach().numpy(), atol=1e-6)
    _backward_and_compare_input_grads(torch, device, t_out, o_out, t_in, o_in, seed=9)
    for p, q in zip(theirs.parameters(), ours.parameters()):
        assert_close(q.grad, p.grad.numpy(), rtol=1e-4, atol=1e-5)


SEQ = ((3, 2, 8), (5, 2, 8), (5, 2, 8))  # (L, N, E), (S, N, E), (S, N, E)
PADDING = np.array([[False] * 5, [False, False, False, True, True]])
CAUSAL_BOOL = np.triu(np.ones((3, 3), bool), 1)

# (constructor kwargs, forward kwargs, shapes, masks, self attention)
MHA_CASES = [
    ({}, {}, SEQ, None, False),
    ({}, {}, SEQ[:1] * 3, None, True),
    ({}, {"need_weights": False}, SEQ, None, False),
    ({}, {"average_attn_weights": False}, SEQ, None, False),
    ({"batch_first": True}, {}, ((2, 3, 8), (2, 5, 8), (2, 5, 8)), None, False),
    ({"kdim": 6, "vdim": 5}, {}, ((3, 2, 8), (5, 2, 6), (5, 2, 5)), None, False),
    ({"bias": False}, {}, SEQ, None, False),
    ({"add_bias_kv": True, "add_zero_attn": True}, {}, SEQ, {"key_padding_mask": PADDING}, False),
    ({}, {}, SEQ, {"key_padding_mask": PADDING, "attn_mask": np.triu(np.ones((3, 5), bool), 1)}, False),
    ({}, {"need_weights": False}, SEQ, {"key_padding_mask": PADDING}, False),
    ({}, {}, SEQ, {"attn_mask": _randn(4, 3, 5)}, False),  # 3-D float mask (N * H, L, S)
    ({}, {"need_weights": False, "is_causal": True}, SEQ[:1] * 3, {"attn_mask": CAUSAL_BOOL}, True),
    ({}, {}, ((3, 8), (5, 8), (5, 8)), {"key_padding_mask": PADDING[1]}, False),  # unbatched
    ({"dropout": 0.5}, {}, SEQ, None, False),  # compared in eval mode: dropout is off
]


@pytest.mark.parametrize("kwargs, call_kwargs, shapes, masks, self_attention", MHA_CASES)
def test_multihead_attention_matches_torch(torch, device, kwargs, call_kwargs, shapes, masks, self_attention):
    _compare_mha(torch, device, kwargs, call_kwargs, shapes, masks, self_attention)


def test_mha_dropout_in_training_applies_to_the_weights(device):
    mha = nn.MultiheadAttention(8, 2, dropout=1.0).to(device)
    x = tensor.randn(3, 2, 8, device=device, requires_grad=True)
    out, weights = mha(x, x, x)
    assert_close(weights, np.zeros((2, 3, 3), np.float32))  # every weight dropped
    assert_close(out, np.zeros((3, 2, 8), np.float32))  # out_proj bias starts at zero
    out.sum().backward()
    assert_close(x.grad, np.zeros((3, 2, 8), np.float32))
    assert_close(mha.in_proj_weight.grad, np.zeros((24, 8), np.float32))
    mha.eval()
    out, weights = mha(x, x, x)
    assert_close(weights.sum(-1), np.ones((2, 3), np.float32), atol=1e-6)


def test_mha_parameters_and_init():
    mha = nn.MultiheadAttention(16, 4)
    assert [n for n, _ in mha.named_parameters()] == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                      "out_proj.bias"]
    bound = math.sqrt(6 / (16 + 48))  # xavier-uniform over (3E, E)
    w = to_numpy(mha.in_proj_weight)
    assert w.shape == (48, 16) and np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert not to_numpy(mha.in_proj_bias).any() and not to_numpy(mha.out_proj.bias).any()
    separate = nn.MultiheadAttention(16, 4, kdim=8, vdim=4, add_bias_kv=True)
    assert separate.in_proj_weight is None
    assert [tuple(getattr(separate, n).shape) for n in ("q_proj_weight", "k_proj_weight", "v_proj_weight")] == [
        (16, 16), (16, 8), (16, 4)]
    assert tuple(separate.bias_k.shape) == (1, 1, 16)


def test_mha_repr_matches_torch(torch):
    assert repr(nn.MultiheadAttention(4, 2)) == repr(torch.nn.MultiheadAttention(4, 2))


def test_mha_gradcheck_float64():
    mha = nn.MultiheadAttention(4, 2).double()
    q = tensor.randn(3, 1, 4, dtype=tensor.float64, requires_grad=True)
    kv = tensor.randn(2, 1, 4, dtype=tensor.float64, requires_grad=True)
    assert gradcheck(lambda q, kv, w: mha(q, kv, kv)[0], (q, kv, mha.in_proj_weight))


@pytest.mark.parametrize("make, error, message", [
    (lambda: nn.MultiheadAttention(10, 3), AssertionError, "embed_dim must be divisible by num_heads"),
    (lambda: nn.MultiheadAttention(0, 2), ValueError, "embed_dim and num_heads must be greater than 0"),
])
def test_mha_constructor_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


X3 = (3, 2, 8)


@pytest.mark.parametrize("shapes, kwargs, error, message", [
    (((3, 2, 6), X3, X3), {}, AssertionError, "was expecting embedding dimension of 8, but got 6"),
    ((X3, (5, 8), (5, 8)), {}, AssertionError,
     r"For batched \(3-D\) `query`, expected `key` and `value` to be 3-D but found 2-D and 2-D"),
    (((2, 3, 2, 8), X3, X3), {}, AssertionError, "query should be unbatched 2D or batched 3D tensor"),
    ((X3, X3, (4, 2, 8)), {}, AssertionError, "key shape .* does not match value shape"),
    ((X3, X3, X3), {"attn_mask": (3, 4)}, RuntimeError,
     r"The shape of the 2D attn_mask is \(3, 4\), but should be \(3, 3\)."),
    ((X3, X3, X3), {"attn_mask": (2, 3, 3)}, RuntimeError,
     r"The shape of the 3D attn_mask is \(2, 3, 3\), but should be \(4, 3, 3\)."),
    ((X3, X3, X3), {"key_padding_mask": (2, 4)}, AssertionError,
     "Expected key_padded_mask.shape\\[1\\] to be 3, but got 4"),
    ((X3, X3, X3), {"is_causal": True}, RuntimeError, "Need attn_mask if specifying the is_causal hint"),
])
def test_mha_forward_errors(shapes, kwargs, error, message):
    mha = nn.MultiheadAttention(8, 2)
    kwargs = {k: tensor.zeros(*v, dtype=tensor.bool) if isinstance(v, tuple) else v for k, v in kwargs.items()}
    with pytest.raises(error, match=message):
        mha(*(tensor.randn(*s) for s in shapes), **kwargs)
