"""Hogwild training on the 8x8 digits: N processes update one shared model without locks.

A port of pytorch/examples' mnist_hogwild:

1. the parent builds the model and calls ``model.share_memory()``;
2. it starts N processes, each with ``seed + rank``, its own data order and its own SGD with
   momentum; they all write the shared parameters in place, without locks;
3. it joins them and evaluates the model.

Each process limits its BLAS threads to ``--threads // N`` through the environment, which the
``spawn`` start method hands to the child before it imports numpy, so that N processes do not
oversubscribe the cores.

    python examples/hogwild.py --num-processes 2 --epochs 10

It prints one line per process and ends with ``test accuracy: NN.N%``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import distrib.multiprocessing as mp
import nn
import nn.functional as F
import tensor

try:  # imported as ``examples.hogwild``
    from . import datasets
except ImportError:  # run as a script: examples/ is sys.path[0]
    import datasets

BLAS_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-processes", type=int, default=2, help="training processes (default 2)")
    parser.add_argument("--epochs", type=int, default=10, help="passes over the data per process (default 10)")
    parser.add_argument("--batch-size", type=int, default=32, help="samples per SGD step (default 32)")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate (default 0.05)")
    parser.add_argument("--momentum", type=float, default=0.5, help="SGD momentum (default 0.5)")
    parser.add_argument("--hidden", type=int, default=128, help="hidden units of the MLP (default 128)")
    parser.add_argument("--seed", type=int, default=1, help="random seed; process i uses seed + i (default 1)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="BLAS threads in total, split between the processes (default: the cores)")
    parser.add_argument("--start-method", default="spawn", choices=mp.get_all_start_methods(),
                        help="how to start the processes (default spawn)")
    args = parser.parse_args(argv)
    if min(args.num_processes, args.epochs, args.batch_size, args.hidden, args.threads) < 1 or args.lr <= 0:
        parser.error("--num-processes, --epochs, --batch-size, --hidden and --threads must be >= 1, --lr > 0")
    return args


def make_model(hidden: int) -> nn.Module:
    """The MLP 64 -> hidden -> 10."""
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def train(rank: int, args: argparse.Namespace, model: nn.Module, results) -> None:
    """One Hogwild worker: its own seed, data order and optimizer; the parameters are shared."""
    tensor.manual_seed(args.seed + rank)
    images, labels = datasets.load_digits()
    train_x, train_y, _, _ = datasets.train_test_split(images, labels, seed=args.seed)
    train_x, train_y = tensor.from_numpy(train_x), tensor.from_numpy(train_y)
    optimizer = nn.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    n = len(train_y)
    start = time.monotonic()  # CLOCK_MONOTONIC is system-wide: comparable between processes
    for _ in range(args.epochs):
        order = tensor.randperm(n)
        for first in range(0, n, args.batch_size):
            batch = order[first:first + args.batch_size]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(train_x[batch]), train_y[batch])
            loss.backward()
            optimizer.step()
    threads = os.environ.get("OPENBLAS_NUM_THREADS")  # as set before this process imported numpy
    results.put((rank, n * args.epochs, start, time.monotonic(), loss.item(), threads))


@contextlib.contextmanager
def blas_threads(count: int):
    """Set the BLAS thread variables for the children started inside, then restore them."""
    saved = {name: os.environ.get(name) for name in BLAS_THREAD_VARIABLES}
    os.environ.update({name: str(count) for name in BLAS_THREAD_VARIABLES})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run(args: argparse.Namespace, out=None) -> tuple[float, float]:
    """Train with ``args``; return ``(test accuracy, training samples per second)``."""
    out = out if out is not None else sys.stdout
    tensor.manual_seed(args.seed)
    model = make_model(args.hidden)
    model.share_memory()
    ctx = mp.get_context(args.start_method)
    results = ctx.SimpleQueue()
    with blas_threads(max(1, args.threads // args.num_processes)):
        mp.start_processes(train, args=(args, model, results), nprocs=args.num_processes,
                           start_method=args.start_method)
    reports = sorted(results.get() for _ in range(args.num_processes))
    for rank, samples, start, end, loss, threads in reports:
        print(f"process {rank}: {samples} samples in {end - start:.2f}s, last loss {loss:.4f}, "
              f"{threads} BLAS threads", file=out)
    elapsed = max(r[3] for r in reports) - min(r[2] for r in reports)
    speed = sum(r[1] for r in reports) / elapsed

    images, labels = datasets.load_digits()
    _, _, test_x, test_y = datasets.train_test_split(images, labels, seed=args.seed)
    with tensor.no_grad():
        predicted = model(tensor.from_numpy(test_x)).argmax(1)
    accuracy = (predicted == tensor.from_numpy(test_y)).float().mean().item()
    print(f"{speed:.0f} samples/s with {args.num_processes} processes", file=out)
    print(f"test accuracy: {accuracy:.1%}", file=out)
    return accuracy, speed


def main(argv=None) -> int:
    """Command-line entry point; returns the process exit code."""
    run(parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
