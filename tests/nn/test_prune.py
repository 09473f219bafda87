"""nn.utils.prune against torch.nn.utils.prune: the reparametrization (``<name>_orig``,
``<name>_mask``, the pre-hook), masks of the deterministic methods, counts of the random ones,
iterative pruning, global pruning, removal, pickling and loading torch's checkpoints."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import nn
import tensor
from nn.utils import prune

RNG = np.random.default_rng(0)


def _pair(torch, ours_cls, torch_cls, *args):
    """Our module and torch's, with the same parameters."""
    import torch.nn.utils.prune  # noqa: F401, PLC0415 - a submodule torch does not import by itself
    theirs = torch_cls(*args)
    ours = ours_cls(*args)
    ours.load_state_dict({k: tensor.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _same_mask(ours, theirs, name="weight"):
    np.testing.assert_array_equal(getattr(ours, name + "_mask").numpy(), getattr(theirs, name + "_mask").numpy())


def test_l1_unstructured_reparametrizes_like_torch(torch):
    ours, theirs = _pair(torch, nn.Linear, torch.nn.Linear, 6, 5)
    prune.l1_unstructured(ours, "weight", amount=0.4)
    torch.nn.utils.prune.l1_unstructured(theirs, "weight", amount=0.4)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert [n for n, _ in ours.named_parameters()] == ["bias", "weight_orig"]
    _same_mask(ours, theirs)
    assert prune.is_pruned(ours) and not prune.is_pruned(nn.Linear(2, 2))
    x = RNG.standard_normal((3, 6)).astype("float32")
    np.testing.assert_allclose(ours(tensor.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-6, atol=1e-6)


def test_iterative_pruning_combines_masks_like_torch(torch):
    ours, theirs = _pair(torch, nn.Conv2d, torch.nn.Conv2d, 3, 6, 3)
    steps = [("ln_structured", dict(amount=2, n=2, dim=0)), ("ln_structured", dict(amount=0.5, n=float("inf"), dim=1)),
             ("l1_unstructured", dict(amount=7)), ("ln_structured", dict(amount=1, n=1, dim=-1))]
    for fn, kwargs in steps:
        getattr(prune, fn)(ours, "weight", **kwargs)
        getattr(torch.nn.utils.prune, fn)(theirs, "weight", **kwargs)
        _same_mask(ours, theirs)
    hooks = list(ours._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == 4


def test_importance_scores_and_custom_mask_like_torch(torch):
    ours, theirs = _pair(torch, nn.Linear, torch.nn.Linear, 4, 3)
    scores = RNG.standard_normal((3, 4)).astype("float32")
    prune.l1_unstructured(ours, "weight", 5, importance_scores=tensor.tensor(scores))
    torch.nn.utils.prune.l1_unstructured(theirs, "weight", 5, importance_scores=torch.tensor(scores))
    _same_mask(ours, theirs)
    prune.ln_structured(ours, "weight", 1, "fro", dim=0)
    torch.nn.utils.prune.ln_structured(theirs, "weight", 1, "fro", dim=0)
    _same_mask(ours, theirs)
    mask = RNG.random(3) > 0.5
    prune.custom_from_mask(ours, "bias", tensor.tensor(mask))
    torch.nn.utils.prune.custom_from_mask(theirs, "bias", torch.tensor(mask))
    _same_mask(ours, theirs, "bias")
    assert ours.bias_mask.dtype == tensor.float32


def test_global_unstructured_matches_torch(torch):
    a, at = _pair(torch, nn.Linear, torch.nn.Linear, 4, 3)
    b, bt = _pair(torch, nn.Conv2d, torch.nn.Conv2d, 2, 3, 2)
    prune.l1_unstructured(a, "weight", 2)
    torch.nn.utils.prune.l1_unstructured(at, "weight", 2)
    prune.global_unstructured([(a, "weight"), (b, "weight")], prune.L1Unstructured, amount=0.3)
    torch.nn.utils.prune.global_unstructured([(at, "weight"), (bt, "weight")], torch.nn.utils.prune.L1Unstructured,
                                             amount=0.3)
    _same_mask(a, at)
    _same_mask(b, bt)
    with pytest.raises(TypeError):
        prune.global_unstructured([(a, "weight")], prune.LnStructured, amount=1, n=2, dim=0)


def test_random_methods_prune_the_requested_number():
    m = nn.Conv2d(4, 6, 3)
    prune.random_unstructured(m, "weight", amount=0.3)
    assert int((m.weight_mask == 0).sum()) == round(0.3 * m.weight.numel())
    prune.random_structured(m, "weight", amount=2, dim=0)
    assert int((m.weight_mask.sum((1, 2, 3)) == 0).sum()) == 2
    assert bool((m.weight == m.weight_orig * m.weight_mask).all())


def test_remove_makes_the_pruned_value_a_parameter_like_torch(torch):
    ours, theirs = _pair(torch, nn.Linear, torch.nn.Linear, 4, 3)
    prune.l1_unstructured(ours, "weight", 0.5)
    torch.nn.utils.prune.l1_unstructured(theirs, "weight", 0.5)
    prune.remove(ours, "weight")
    torch.nn.utils.prune.remove(theirs, "weight")
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert not ours._forward_pre_hooks and not prune.is_pruned(ours)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
    with pytest.raises(ValueError):
        prune.remove(ours, "weight")


def test_gradient_flows_to_orig_through_the_mask():
    m = nn.Linear(3, 2)
    prune.l1_unstructured(m, "weight", 0.5)
    m(tensor.ones(1, 3)).sum().backward()
    np.testing.assert_array_equal(m.weight_orig.grad.numpy(), m.weight_mask.numpy())


def test_pruned_module_pickles_and_loads_torch_checkpoint(torch):
    theirs = _pair(torch, nn.Linear, torch.nn.Linear, 4, 3)[1]
    torch.nn.utils.prune.l1_unstructured(theirs, "weight", 0.5)
    ours = prune.identity(nn.Linear(4, 3), "weight")
    ours.load_state_dict({k: tensor.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = RNG.standard_normal((2, 4)).astype("float32")
    np.testing.assert_allclose(ours(tensor.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-6, atol=1e-6)
    copy = pickle.loads(pickle.dumps(ours))
    assert prune.is_pruned(copy) and copy.weight.is_leaf
    np.testing.assert_allclose(copy(tensor.tensor(x)).detach().numpy(), ours(tensor.tensor(x)).detach().numpy())


@pytest.mark.parametrize("call, error", [
    (lambda m: prune.l1_unstructured(m, "weight", 1.5), ValueError),
    (lambda m: prune.l1_unstructured(m, "weight", 5), ValueError),
    (lambda m: prune.l1_unstructured(m, "weight", "a"), TypeError),
    (lambda m: prune.ln_structured(m, "bias", 1, 2, 0), ValueError),
    (lambda m: prune.ln_structured(m, "weight", 1, 2, 3), IndexError),
])
def test_errors_like_torch(call, error):
    m = nn.Linear(2, 2)
    with pytest.raises(error):
        call(m)
    assert sorted(n for n, _ in m.named_parameters()) == ["bias", "weight"]  # a failed pruning is undone
    assert not m._forward_pre_hooks and not list(m.buffers())
