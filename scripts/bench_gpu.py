"""Issue 13 workloads on a CUDA GPU, ours vs torch CUDA: MLP and CNN train steps, a 64 MB
all_reduce (nccl, world size 1) and a 4096x4096 float32 matmul.

Used by ``scripts/bench.py --only gpu`` and ``scripts/gpu-check``. Every timed run ends with a
device synchronisation, so the times are the GPU's. Without a GPU the group prints why and
returns no rows. Not yet measured on a GPU (BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import sys

import bench as harness
import numpy as np
from bench_nn import _cnn, _mlp

import distrib
import nn
import tensor
from distrib.store import HashStore


def _torch_cuda():
    torch = harness.torch
    return torch if torch is not None and torch.cuda.is_available() else None


def _train_step(nn_mod, optim, model, x, y, sync):
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn_mod.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        sync()
    return step


def _workloads(lib, nn_mod, optim, device, sync):
    rng = np.random.default_rng(0)
    images = rng.standard_normal((64, 1, 28, 28), dtype=np.float32)
    labels = rng.integers(0, 10, 64)
    x_flat = lib.tensor(images.reshape(64, 784), device=device)
    x_img, y = lib.tensor(images, device=device), lib.tensor(labels, device=device)
    a = lib.tensor(rng.standard_normal((4096, 4096), dtype=np.float32), device=device)

    def matmul():
        a @ a
        sync()
    return {
        "gpu: MLP train step, batch 64 (ms)": _train_step(nn_mod, optim, _mlp(lib, nn_mod).to(device), x_flat, y,
                                                          sync),
        "gpu: CNN train step, batch 64 (ms)": _train_step(nn_mod, optim, _cnn(lib, nn_mod).to(device), x_img, y,
                                                          sync),
        "gpu: matmul 4096x4096 float32 (ms)": matmul,
    }


def _all_reduce(dist, store, lib, device, sync):
    dist.init_process_group("nccl", store=store, rank=0, world_size=1)
    buf = lib.ones(16 * 2 ** 20, device=device)  # 64 MB of float32

    def run():
        dist.all_reduce(buf)
        sync()
    return run


def bench(repeat: int, paired_times, have_torch: bool) -> list:
    """Rows ``(workload, ours ms, torch ms or None, "torch", target)`` on GPU 0."""
    if not tensor.cuda.is_available():
        print("gpu: no CUDA GPU here, the gpu group is skipped", file=sys.stderr)
        return []
    torch = _torch_cuda() if have_torch else None
    ours = _workloads(tensor, nn, nn.optim, "cuda", tensor.cuda.synchronize)
    ours["gpu: all_reduce 64 MB, nccl, world size 1 (ms)"] = _all_reduce(
        distrib, HashStore(), tensor, "cuda", tensor.cuda.synchronize)
    peers = {}
    if torch is not None:
        peers = _workloads(torch, torch.nn, torch.optim, "cuda", torch.cuda.synchronize)
        peers["gpu: all_reduce 64 MB, nccl, world size 1 (ms)"] = _all_reduce(
            torch.distributed, torch.distributed.HashStore(), torch, "cuda", torch.cuda.synchronize)
    rows = []
    for name, run in ours.items():
        mine, peer = paired_times(run, peers.get(name), repeat)
        rows.append((name, mine * 1e3, None if peer is None else peer * 1e3, "torch", "<= 1.5x torch"))
    return rows


def main(argv=None) -> int:
    """Print the GPU rows as ``scripts/bench.py`` prints its table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=30, help="timed runs per workload (default 30)")
    args = parser.parse_args(argv)
    harness.print_table(bench(args.repeat, harness.paired_times, harness.torch is not None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
