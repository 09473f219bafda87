"""Softmax regression on the 8x8 digits, written with ``tensor`` alone.

The model is ``logits = x @ W + b``; the loss is the mean negative log-likelihood
from ``tensor.log_softmax``; ``loss.backward()`` fills ``W.grad`` and ``b.grad``;
and mini-batch SGD updates the weights by hand under ``tensor.no_grad()``.

    python examples/logistic_regression.py --epochs 30 --lr 0.5 --batch-size 32 --seed 0

It prints one progress line per epoch (a bar redrawn in place on a terminal) and
ends with ``test accuracy: NN.N%``.
"""

from __future__ import annotations

import argparse
import sys

import tensor

try:  # imported as ``examples.logistic_regression``
    from . import datasets
    from ._progress import Progress
except ImportError:  # run as a script: examples/ is sys.path[0]
    import datasets
    from _progress import Progress

NUM_FEATURES = 64
NUM_CLASSES = 10


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=30, help="passes over the training set (default 30)")
    parser.add_argument("--lr", type=float, default=0.5, help="SGD learning rate (default 0.5)")
    parser.add_argument("--batch-size", type=int, default=32, help="samples per SGD step (default 32)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the split and shuffling (default 0)")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or args.lr <= 0:
        parser.error("--epochs and --batch-size must be >= 1 and --lr > 0")
    return args


def nll_loss(logits: tensor.Tensor, labels: tensor.Tensor) -> tensor.Tensor:
    """Mean negative log-likelihood of ``labels`` under ``softmax(logits)``."""
    log_probs = tensor.log_softmax(logits, dim=1)
    return -log_probs.gather(1, labels.unsqueeze(1)).mean()


def accuracy(logits: tensor.Tensor, labels: tensor.Tensor) -> float:
    """The fraction of rows whose largest logit is at the label."""
    return (logits.argmax(1) == labels).float().mean().item()


def train(args: argparse.Namespace, stream=None) -> float:
    """Train on the digits with ``args``; return the test accuracy in [0, 1]."""
    out = stream if stream is not None else sys.stdout
    images, labels = datasets.load_digits()
    train_x, train_y, test_x, test_y = datasets.train_test_split(images, labels, seed=args.seed)
    train_x, train_y = tensor.from_numpy(train_x), tensor.from_numpy(train_y)
    test_x, test_y = tensor.from_numpy(test_x), tensor.from_numpy(test_y)
    print(f"digits: {len(train_y)} train / {len(test_y)} test samples, {NUM_FEATURES} features, "
          f"{NUM_CLASSES} classes", file=out)

    generator = tensor.Generator().manual_seed(args.seed)
    weight = (tensor.randn(NUM_FEATURES, NUM_CLASSES, generator=generator) * 0.01).requires_grad_()
    bias = tensor.zeros(NUM_CLASSES, requires_grad=True)
    params = (weight, bias)

    n = len(train_y)
    steps = (n + args.batch_size - 1) // args.batch_size
    width = len(str(args.epochs))
    for epoch in range(1, args.epochs + 1):
        order = tensor.randperm(n, generator=generator)
        total_loss = 0.0
        with Progress(steps, desc=f"epoch {epoch:{width}d}/{args.epochs}", stream=out) as bar:
            for step in range(steps):
                batch = order[step * args.batch_size:(step + 1) * args.batch_size]
                loss = nll_loss(train_x[batch] @ weight + bias, train_y[batch])
                loss.backward()
                with tensor.no_grad():
                    for p in params:
                        p -= args.lr * p.grad
                        p.grad = None
                total_loss += loss.item() * len(batch)
                bar.update(loss=total_loss / min((step + 1) * args.batch_size, n))
            with tensor.no_grad():
                bar.set_postfix(train_acc=f"{accuracy(train_x @ weight + bias, train_y):.1%}")

    with tensor.no_grad():
        test_acc = accuracy(test_x @ weight + bias, test_y)
    print(f"test accuracy: {test_acc:.1%}", file=out)
    return test_acc


def main(argv=None) -> int:
    """Command-line entry point; returns the process exit code."""
    train(parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
