"""An MLP on the bundled 8x8 digits: nn.Sequential, SGD with momentum, a cosine LR schedule.

    python examples/mlp_digits.py                       # 30 epochs, a few seconds
    python examples/mlp_digits.py --epochs 10 --lr 0.05 --batch-size 64 --seed 1
    python examples/mlp_digits.py --checkpoint mlp.ckpt            # save after every epoch
    python examples/mlp_digits.py --checkpoint mlp.ckpt --resume   # continue where it stopped

One script, top to bottom: configuration, data, model, optimizer, training loop,
evaluation. Each epoch shows a progress bar (redrawn in place on a terminal,
one plain line otherwise) with the step count, speed, loss and ETA; the run
ends with ``test accuracy: NN.N%``.

A checkpoint (``--checkpoint``) holds the model, optimizer, scheduler, epoch and
RNG state; ``--resume`` continues from it bit-identically to a run that never
stopped (``--stop-after N`` ends a run early, as if it were interrupted).
"""

from __future__ import annotations

import os

# One BLAS thread: these models' matrices are small, so more threads gain little, while on a busy
# machine idle BLAS threads spin and fight for the cores (measured on 2 busy cores: the char model
# took 36 s with one thread, 6 min with two). Set OMP_NUM_THREADS / OPENBLAS_NUM_THREADS to
# override; they take effect only before numpy is first imported, hence this comes first.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402

import nn  # noqa: E402
import nn.functional as F  # noqa: E402
import tensor  # noqa: E402

try:  # imported as ``examples.mlp_digits``
    from . import _training as training
    from . import datasets
    from ._progress import Progress
    from .checkpoint import save_checkpoint
except ImportError:  # run as a script: examples/ is sys.path[0]
    import _training as training
    import datasets
    from _progress import Progress
    from checkpoint import save_checkpoint

# ----------------------------------------------------------------------------- configuration
# The run's settings; a checkpoint remembers them and --resume insists on the same ones.
RUN_SETTINGS = ("epochs", "lr", "batch_size", "seed", "hidden", "dropout")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; exits with status 2 on bad values."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=30, help="passes over the training set (default 30)")
    parser.add_argument("--lr", type=float, default=0.05, help="peak SGD learning rate (default 0.05)")
    parser.add_argument("--batch-size", type=int, default=32, help="samples per step (default 32)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the split, init, shuffling, dropout")
    parser.add_argument("--hidden", type=int, default=128, help="width of the two hidden layers (default 128)")
    parser.add_argument("--dropout", type=float, default=0.1, help="dropout after each hidden layer")
    training.add_checkpoint_arguments(parser, every="after every epoch", unit="epoch")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or args.hidden < 1 or args.lr <= 0:
        parser.error("--epochs, --batch-size and --hidden must be >= 1 and --lr > 0")
    training.check_common_arguments(parser, args)
    return args


def main(argv: list[str] | None = None) -> float:
    """Train with the command-line settings; print and return the test accuracy in [0, 1]."""
    args = parse_args(argv)
    tensor.manual_seed(args.seed)

    # ------------------------------------------------------------------------- data
    images, labels = datasets.load_digits()
    train_x, train_y, test_x, test_y = (tensor.from_numpy(a) for a in
                                        datasets.train_test_split(images, labels, seed=args.seed))
    n_train = len(train_y)
    steps_per_epoch = (n_train + args.batch_size - 1) // args.batch_size
    print(f"digits: {n_train} train / {len(test_y)} test samples of {train_x.shape[1]} pixels, 10 classes")

    # ------------------------------------------------------------------------- model and optimizer
    model = nn.Sequential(
        nn.Linear(64, args.hidden), nn.ReLU(), nn.Dropout(args.dropout),
        nn.Linear(args.hidden, args.hidden), nn.ReLU(), nn.Dropout(args.dropout),
        nn.Linear(args.hidden, 10),
    )
    optimizer = nn.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True, weight_decay=1e-4)
    scheduler = nn.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs * steps_per_epoch)
    print(model)
    print(f"parameters: {sum(p.numel() for p in model.parameters())}")

    start_epoch, step = 1, 0
    if args.resume:
        state = training.resume(args, RUN_SETTINGS, model, optimizer, scheduler)
        start_epoch, step = state["epoch"] + 1, state["step"]
        print(f"resumed from {args.checkpoint} after epoch {state['epoch']} (step {step})")

    # ------------------------------------------------------------------------- training loop
    model.train()
    for epoch in range(start_epoch, args.epochs + 1):
        order = tensor.randperm(n_train)  # a fresh shuffle each epoch, from the seeded default generator
        total_loss = 0.0
        with Progress(steps_per_epoch, desc=f"epoch {epoch:{len(str(args.epochs))}d}/{args.epochs}") as bar:
            for i in range(steps_per_epoch):
                batch = order[i * args.batch_size:(i + 1) * args.batch_size]
                loss = F.cross_entropy(model(train_x[batch]), train_y[batch])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                scheduler.step()
                step += 1
                total_loss += loss.item()
                bar.update(loss=total_loss / (i + 1))  # the epoch's mean loss so far
            _, test_acc = training.evaluate_classifier(model, test_x, test_y)
            bar.set_postfix(lr=f"{scheduler.get_last_lr()[0]:.4f}", test_acc=f"{test_acc:.1%}")
        if args.checkpoint:
            save_checkpoint(args.checkpoint, model, optimizer, scheduler, epoch=epoch, step=step,
                            config=training.run_config(args, RUN_SETTINGS))
        if args.stop_after is not None and epoch >= args.stop_after and epoch < args.epochs:
            print(training.stopping_note(args, "epoch", epoch, args.epochs))
            break

    # ------------------------------------------------------------------------- evaluation
    test_loss, test_acc = training.evaluate_classifier(model, test_x, test_y)
    print(f"test loss: {test_loss:.4f}")
    print(f"test accuracy: {test_acc:.1%}")
    return test_acc


if __name__ == "__main__":
    main()
