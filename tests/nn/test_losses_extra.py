"""The extra losses and distances against torch: values and gradients, every reduction."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close
from tests.nn.fn_oracle import check_fn

RNG = np.random.default_rng(0)
A, B, C = (RNG.standard_normal((4, 5)) for _ in range(3))
SIGNS = np.array([1.0, -1.0, -1.0, 1.0])
CLASSES = np.array([2, 0, 4, 1])
LABELS = np.array([[3, 0, -1, 1, 2], [1, -1, 0, 0, 0], [4, 3, 2, 1, 0], [-1, 0, 0, 0, 0]])
COUNTS = RNG.poisson(2.0, (4, 5)).astype("float64")
WEIGHT = RNG.uniform(0.5, 2.0, 5)


# (id, how many leading inputs get gradients, function name in both, options, inputs)
CASES = [
    ("margin_ranking", 2, "margin_ranking_loss", {"margin": 0.3}, (A[:, 0], B[:, 0], SIGNS)),
    ("hinge_embedding", 1, "hinge_embedding_loss", {"margin": 0.7}, (A, np.tile(SIGNS[:, None], 5))),
    ("soft_margin", 1, "soft_margin_loss", {}, (A, np.tile(SIGNS[:, None], 5))),
    ("cosine_embedding", 2, "cosine_embedding_loss", {"margin": 0.1}, (A, B, SIGNS)),
    ("multi_margin", 1, "multi_margin_loss", {}, (A, CLASSES)),
    ("multi_margin_p2_weight", 1, "multi_margin_loss", {"p": 2, "margin": 0.5, "weight": "WEIGHT"}, (A, CLASSES)),
    ("multilabel_soft_margin", 1, "multilabel_soft_margin_loss", {"weight": "WEIGHT"}, (A, (B > 0) * 1.0)),
    ("multilabel_margin", 1, "multilabel_margin_loss", {}, (A, LABELS)),
    ("poisson", 1, "poisson_nll_loss", {}, (A, COUNTS)),
    ("poisson_full_rate", 1, "poisson_nll_loss", {"log_input": False, "full": True}, (np.abs(A) + 0.1, COUNTS)),
    ("gaussian", 3, "gaussian_nll_loss", {}, (A, B, np.abs(C) + 0.01)),
    ("gaussian_full_1d_var", 3, "gaussian_nll_loss", {"full": True}, (A, B, np.abs(C[:, 0]))),
    ("triplet", 3, "triplet_margin_loss", {"margin": 2.0}, (A, B, C)),
    ("triplet_p1_swap", 3, "triplet_margin_loss", {"p": 1, "swap": True}, (A, B, C)),
    ("triplet_distance", 3, "triplet_margin_with_distance_loss", {"swap": True}, (A, B, C)),
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_functional_loss_matches_torch(case, reduction, torch):
    _, n_grad, name, kwargs, arrays = case
    ours_kwargs = {k: (tensor.tensor(WEIGHT) if v == "WEIGHT" else v) for k, v in kwargs.items()}
    torch_kwargs = {k: (torch.tensor(WEIGHT) if v == "WEIGHT" else v) for k, v in kwargs.items()}
    check_fn(
        lambda *ts: getattr(F, name)(*ts, reduction=reduction, **ours_kwargs),
        lambda *ts: getattr(torch.nn.functional, name)(*ts, reduction=reduction, **torch_kwargs),
        torch,
        *arrays,
        n_grad=n_grad,
    )


@pytest.mark.parametrize(
    "name, args, arrays",
    [
        ("MarginRankingLoss", (0.2,), (A[:, 0], B[:, 0], SIGNS)),
        ("CosineEmbeddingLoss", (), (A, B, SIGNS)),
        ("HingeEmbeddingLoss", (), (A, np.tile(SIGNS[:, None], 5))),
        ("SoftMarginLoss", (), (A, np.sign(B))),
        ("MultiMarginLoss", (2,), (A, CLASSES)),
        ("MultiLabelSoftMarginLoss", (), (A, (B > 0) * 1.0)),
        ("MultiLabelMarginLoss", (), (A, LABELS)),
        ("PoissonNLLLoss", (), (A, COUNTS)),
        ("GaussianNLLLoss", (), (A, B, np.abs(C) + 0.1)),
        ("TripletMarginLoss", (0.5, 3.0), (A, B, C)),
        ("TripletMarginWithDistanceLoss", (), (A, B, C)),
        ("PairwiseDistance", (1.5,), (A, B)),
        ("CosineSimilarity", (0,), (A, B)),
    ],
)
def test_layers_match_torch(name, args, arrays, torch):
    n_grad = 1 if len(arrays) == 2 and "Distance" not in name and "Similarity" not in name else None
    n_grad = 2 if name in ("MarginRankingLoss", "CosineEmbeddingLoss") else n_grad
    check_fn(getattr(nn, name)(*args), getattr(torch.nn, name)(*args), torch, *arrays, n_grad=n_grad)


@pytest.mark.parametrize("p", [1, 2, 3.5])
def test_pdist_matches_torch(p, torch):
    check_fn(lambda t: F.pdist(t, p), lambda t: torch.nn.functional.pdist(t, p), torch, A)


def test_distance_gradients_at_zero_norms_match_torch(torch):
    # Identical rows (a zero distance) and a zero vector: finite gradients, as PyTorch's.
    rows = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 3.0]])
    for p in (1, 2, 3.5):
        check_fn(lambda t: F.pdist(t, p), lambda t: torch.nn.functional.pdist(t, p), torch, rows)
    pair = (np.array([[0.0, 0.0, 0.0], [1.0, -1.0, 2.0]]), np.array([[1.0, 2.0, 3.0], [1.0, -1.0, 2.0]]))
    check_fn(F.cosine_similarity, torch.nn.functional.cosine_similarity, torch, *pair, rtol=1e-6, atol=1e-2)
    check_fn(lambda a, b: F.pairwise_distance(a, b, eps=0.0),
             lambda a, b: torch.nn.functional.pairwise_distance(a, b, eps=0.0), torch, *pair)


def test_p0_distances_count_nonzeros_and_stay_in_the_graph(torch):
    rows = np.array([[0.0, 1.0], [2.0, 1.0], [0.0, 3.0]])
    out = check_fn(lambda t: F.pdist(t, 0), lambda t: torch.nn.functional.pdist(t, 0), torch, rows)
    assert out.requires_grad
    rows[2, 1] = float("nan")  # counted as non-zero, as torch's pairwise_distance and vector_norm
    out = check_fn(lambda a, b: F.pairwise_distance(a, b, 0),
                   lambda a, b: torch.nn.functional.pairwise_distance(a, b, 0), torch, rows, rows[::-1].copy())
    assert out.requires_grad


def test_one_sample_forms_match_torch(torch):
    check_fn(
        lambda x, y: F.multi_margin_loss(x, y),
        lambda x, y: torch.nn.functional.multi_margin_loss(x, y),
        torch,
        A[0],
        CLASSES[0],
        n_grad=1,
    )
    check_fn(
        lambda x, y: F.multilabel_margin_loss(x, y),
        lambda x, y: torch.nn.functional.multilabel_margin_loss(x, y),
        torch,
        A[0],
        LABELS[0],
        n_grad=1,
    )


def test_errors():
    x = tensor.zeros(4, 5)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(x, tensor.tensor(CLASSES), p=3)
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(x, x, -tensor.ones(4, 5))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, x, tensor.ones(3))
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginLoss(margin=0)
    with pytest.raises(ValueError, match="mode is not a valid value for reduction"):
        F.soft_margin_loss(x, x, reduction="mode")


@pytest.mark.parametrize("x", [[[300.0, -200.0, 100.0, 250.0]], [[1e-3, -2e-3, 3e-3, 5e-4]]])
def test_cosine_similarity_float16_does_not_overflow_or_underflow(x, torch):
    x = np.array(x, dtype="float16")
    ours = F.cosine_similarity(tensor.tensor(x), tensor.tensor(x))
    theirs = torch.nn.functional.cosine_similarity(torch.from_numpy(x), torch.from_numpy(x))
    assert_close(ours, theirs.numpy(), rtol=1e-3, atol=1e-3)
