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
