"""Sorting and selection (tensor/ops/sorting.py): NaN handling of mode, and NaN ordering of
bfloat16 inputs, against torch."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from tests.helpers import assert_close

pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tests/tensor/conftest.py

NAN = float("nan")

# Where torch's mode is well defined: torch sorts with std::sort, whose order of NaN against
# numbers is unspecified, so ties involving NaN are left out.
MODE_CASES = [
    ("nan_most_frequent", [NAN, 1.0, NAN, 0.0]),
    ("number_most_frequent", [NAN, 1.0, 1.0, 0.0]),
    ("single_nan", [NAN]),
    ("all_nan", [NAN, NAN, NAN]),
    ("number_tie_with_one_nan", [3.0, NAN, 3.0, 1.0, 1.0]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,values", MODE_CASES, ids=[c[0] for c in MODE_CASES])
def test_mode_counts_nans_as_one_value(device, torch, dtype, name, values):
    x = tensor.tensor(values, dtype=getattr(tensor, dtype), device=device)
    ours = tensor.mode(x)
    assert_close(ours.values, torch.mode(torch.tensor(values, dtype=getattr(torch, dtype))).values.numpy())
    assert_close(x[ours.indices], ours.values)


def test_mode_along_a_dim_with_nans(device):
    x = tensor.tensor([[NAN, 1.0, NAN], [2.0, 2.0, NAN]], device=device)
    values, indices = tensor.mode(x, 1)
    assert_close(values, np.array([NAN, 2.0], np.float32))
    assert_close(x.gather(1, indices.unsqueeze(1)).squeeze(1), values)


def test_bfloat16_sort_and_mode_put_nan_last_like_torch(torch):
    # CPU only: CuPy has no bfloat16. ml_dtypes' own argsort leaves NaN where it is.
    x = [NAN, 0.0, -1.0, NAN, 2.0]
    ours = tensor.sort(tensor.tensor(x, dtype=tensor.bfloat16))
    theirs = torch.sort(torch.tensor(x, dtype=torch.bfloat16))
    assert_close(ours.values.float(), theirs.values.float().numpy())
    assert_close(ours.indices, theirs.indices.numpy())
    for _, values in MODE_CASES:
        ours = tensor.mode(tensor.tensor(values, dtype=tensor.bfloat16)).values
        assert_close(ours.float(), torch.mode(torch.tensor(values, dtype=torch.bfloat16)).values.float().numpy())


# Ordering ops on complex tensors: torch refuses every one (complex numbers have no order), with
# RuntimeError or NotImplementedError depending on the op; numpy would order them lexicographically.
COMPLEX_ORDERING = {
    "sort": lambda L, z: z.sort(), "argsort": lambda L, z: z.argsort(), "msort": lambda L, z: L.msort(z),
    "topk": lambda L, z: z.topk(1), "kthvalue": lambda L, z: z.kthvalue(1), "median": lambda L, z: z.median(),
    "median_dim": lambda L, z: z.median(0), "nanmedian": lambda L, z: z.nanmedian(), "mode": lambda L, z: z.mode(),
    "searchsorted": lambda L, z: L.searchsorted(L.ones(2), z), "lt": lambda L, z: z < z,
    "le": lambda L, z: z <= 1, "gt_mixed": lambda L, z: L.ones(2) > z, "ge": lambda L, z: L.ge(z, z),
    "eq_allowed": lambda L, z: z == z, "max": lambda L, z: z.max(), "max_dim": lambda L, z: z.max(0),
    "min_dim": lambda L, z: z.min(dim=0), "max_other": lambda L, z: L.max(z, z), "amax": lambda L, z: z.amax(),
    "amin": lambda L, z: z.amin(), "argmax": lambda L, z: z.argmax(), "argmin": lambda L, z: z.argmin(0),
    "maximum": lambda L, z: L.maximum(L.ones(2), z), "minimum": lambda L, z: L.minimum(z, z),
    "fmax": lambda L, z: L.fmax(z, z), "fmin": lambda L, z: L.fmin(z, z), "aminmax": lambda L, z: z.aminmax(),
    "clamp": lambda L, z: z.clamp(0, 1), "clamp_min_": lambda L, z: z.clone().clamp_min_(0),
    "relu": lambda L, z: z.relu(), "sign": lambda L, z: z.sign(), "sgn_allowed": lambda L, z: z.sgn(),
    "isposinf": lambda L, z: z.isposinf(), "isneginf": lambda L, z: z.isneginf(),
    "heaviside": lambda L, z: z.heaviside(z), "nansum": lambda L, z: z.nansum(), "unique": lambda L, z: z.unique(),
    "unique_consecutive": lambda L, z: z.unique_consecutive(), "isin": lambda L, z: L.isin(L.ones(2), z),
    "quantile": lambda L, z: L.quantile(z, 0.5),
}


def _raised(lib, call):
    try:
        call(lib, lib.tensor([1 + 1j, 1 - 1j]))
    except Exception as exc:  # noqa: BLE001 - the class is the result
        return type(exc)
    return None


@pytest.mark.parametrize("name", list(COMPLEX_ORDERING))
def test_ordering_ops_on_complex_raise_as_torch(torch, name):
    assert _raised(tensor, COMPLEX_ORDERING[name]) is _raised(torch, COMPLEX_ORDERING[name])


def test_kthvalue_of_an_empty_dim_is_an_index_error():
    with pytest.raises(IndexError, match="non-zero size"):
        tensor.ones(0).kthvalue(1)
