"""nn.parallel (torch.nn.parallel's names, distrib's DDP loaded on first access) and
nn.utils.stateless.functional_call."""

from __future__ import annotations

import subprocess
import sys

import pytest

import nn
import tensor


def test_ddp_is_reached_through_nn_parallel_without_importing_distrib_early():
    code = (
        "import sys, nn\n"
        "assert 'distrib' not in sys.modules\n"
        "from nn.parallel import DataParallel, DistributedDataParallel\n"
        "import distrib\n"
        "assert DistributedDataParallel is distrib.DistributedDataParallel and DataParallel is nn.DataParallel\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        nn.parallel.Nope  # noqa: B018


def test_stateless_functional_call_is_tensor_funcs():
    assert nn.utils.stateless.functional_call is tensor.func.functional_call
    model = nn.Linear(2, 1, bias=False)
    out = nn.utils.stateless.functional_call(model, {"weight": tensor.ones(1, 2)}, (tensor.ones(1, 2),))
    assert out.tolist() == [[2.0]]
