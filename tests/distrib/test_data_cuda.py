"""DataLoader workers and CUDA (issue 13, defect 8): forked workers that leave CUDA alone are
allowed once CUDA is up, as in PyTorch; one that touches CUDA fails naming the fix. Needs a CUDA
device or the CuPy stand-in."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import distrib.multiprocessing as mp
import tensor
from distrib.data import DataLoader, Dataset, TensorDataset
from tests.conftest import CUDA_SKIP_REASON

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(CUDA_SKIP_REASON is not None, reason=f"no CUDA device: {CUDA_SKIP_REASON}")]


class _OnTheGpu(Dataset):
    def __len__(self) -> int:
        return 2

    def __getitem__(self, i):
        return tensor.ones(1, device="cuda")


def test_defect8_forked_dataloader_workers_are_allowed_once_cuda_is_up():
    tensor.zeros(1, device="cuda")  # CUDA is initialised in this process
    loader = DataLoader(TensorDataset(tensor.arange(8.0)), batch_size=4, num_workers=2,
                        multiprocessing_context="fork")
    assert [batch[0].tolist() for batch in loader] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]


def test_defect8_a_forked_worker_that_touches_cuda_names_the_fix():
    tensor.zeros(1, device="cuda")
    loader = DataLoader(_OnTheGpu(), num_workers=1, multiprocessing_context="fork")
    with pytest.raises(RuntimeError, match=r"CUDA cannot be used here: this process was forked .* 'spawn'"):
        list(loader)


def test_defect8_is_available_counts_as_initialising_cuda():
    # Counting the devices initialises the driver: a later fork is refused like after any CUDA use.
    code = textwrap.dedent("""
        import distrib.multiprocessing as mp, tensor
        from tensor import _backend
        before = _backend.cuda_initialized()
        assert tensor.cuda.is_available()
        try:
            mp.get_context("fork").Process(target=print).start()
        except RuntimeError as exc:
            print(before, _backend.cuda_initialized(), "refused" if "'spawn'" in str(exc) else exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "True", "refused"], out.stderr


def test_spawned_workers_may_use_cuda():
    loader = DataLoader(_OnTheGpu(), num_workers=1, multiprocessing_context=mp.get_context("spawn"))
    assert [str(batch.device) for batch in loader] == ["cuda:0", "cuda:0"]


@pytest.mark.parametrize("workers", [0, 2])
def test_pinned_batches_hold_the_data_and_move_to_the_gpu(workers):
    loader = DataLoader(TensorDataset(tensor.arange(6.0)), batch_size=3, pin_memory=True, num_workers=workers)
    batches = [batch[0] for batch in loader]
    assert [str(b.device) for b in batches] == ["cpu", "cpu"]
    assert all(b.is_pinned() for b in batches) and not tensor.arange(3.0).is_pinned()
    assert [b.cuda().tolist() for b in batches] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
