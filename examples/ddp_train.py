"""Data-parallel training of a small CNN on the bundled 8x8 digits with DistributedDataParallel.

One script, three ways to run it:

    python examples/ddp_train.py                                  # one process
    distrib-launch --nproc 2 examples/ddp_train.py                # 2 processes, zmq backend
    mpirun -n 2 python examples/ddp_train.py --backend mpi        # 2 MPI ranks (or zmq bootstrapped by MPI)

It becomes distributed when it finds a rank in its environment (RANK from the launcher, or
MPI's variables), as nanoGPT does; only the master process (rank 0) prints, draws the
progress bar and writes files. Each rank reads its share of every epoch through a
``DistributedSampler`` and a DataLoader with worker processes; DDP averages the gradients,
so N ranks with ``--batch-size B`` train like one process with batch B.

Checkpoints: every ``--checkpoint-every`` steps rank 0 writes ``OUT/step_<N>.ckpt``
atomically (a temporary file renamed into place) holding the model, optimizer and scheduler
states, the loop position and every rank's random state. A restarted job
(``DISTRIB_RESTART_COUNT > 0``, set by ``distrib-launch --max-restarts``) or ``--resume``
continues from the latest one, mid-epoch if need be, and ends with exactly the parameters
of a run that never stopped; with several nodes, ``OUT`` must be on a filesystem that every
node sees (the ranks check that they resumed at the same step). ``--simulate-failure STEP``
makes the last rank SIGKILL itself at that step on the first attempt (to try the restart).

At the end: ``OUT/final_model.pt`` (the state dict), a training-curve plot
``OUT/training_curve.png`` when matplotlib is installed, else ``OUT/training_summary.txt``.
With tensorboardX installed (``pip install 'distrib[tensorboard]'``), rank 0 logs each step's
loss, accuracy, learning rate, samples/s and the share of the step spent waiting for
communication to ``OUT/tensorboard`` (``tensorboard --logdir OUT/tensorboard``).
"""

from __future__ import annotations

import os

# Several ranks per host, each with a multi-threaded BLAS, would oversubscribe the cores.
# distrib-launch sets OMP_NUM_THREADS=1 for its workers; mpirun does not, so do it here,
# before numpy loads its BLAS.
local_ranks = os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE") or os.environ.get("MPI_LOCALNRANKS") or "1"
if int(local_ranks) > 1 and not os.environ.get("OMP_NUM_THREADS"):
    os.environ["OMP_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import distrib as dist  # noqa: E402
import nn  # noqa: E402
import nn.functional as F  # noqa: E402
import tensor  # noqa: E402
from distrib.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402
from distrib.utils.tensorboard import SummaryWriter  # noqa: E402
from distrib.work import communication_wait_seconds  # noqa: E402

try:  # imported as ``examples.ddp_train``
    from . import datasets
    from ._progress import Progress
    from .checkpoint import load_checkpoint, save_checkpoint
except ImportError:  # run as a script: examples/ is sys.path[0]
    import datasets
    from _progress import Progress
    from checkpoint import load_checkpoint, save_checkpoint

try:  # optional: the training-curve plot
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    plt = None

RUN_SETTINGS = ("epochs", "lr", "batch_size", "seed", "channels", "dropout")
RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
CHECKPOINT = re.compile(r"step_(\d+)\.ckpt$")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="zmq", choices=["zmq", "mpi", "nccl"], help="default zmq")
    parser.add_argument("--epochs", type=int, default=12, help="passes over the training set (default 12)")
    parser.add_argument("--lr", type=float, default=0.01, help="peak Adam learning rate (default 0.01)")
    parser.add_argument("--batch-size", type=int, default=32, help="global batch, split over the ranks (default 32)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the split, init, shuffling and dropout")
    parser.add_argument("--channels", type=int, default=16, help="channels of the first conv (default 16)")
    parser.add_argument("--dropout", type=float, default=0.25, help="dropout before the classifier")
    parser.add_argument("--workers", type=int, default=1, help="DataLoader worker processes per rank (default 1)")
    parser.add_argument("--out-dir", default="ddp_out", help="checkpoints, final model and plot (default ddp_out)")
    parser.add_argument("--checkpoint-every", type=int, default=50, metavar="K", help="steps between checkpoints")
    parser.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out-dir")
    parser.add_argument("--simulate-failure", type=int, metavar="STEP",
                        help="the last rank SIGKILLs itself at this step on the first attempt")
    args = parser.parse_args(argv)
    if min(args.epochs, args.batch_size, args.channels, args.checkpoint_every) < 1 or args.workers < 0:
        parser.error("--epochs, --batch-size, --channels and --checkpoint-every must be >= 1, --workers >= 0")
    return args


def latest_checkpoint(out_dir: str) -> str | None:
    found = [(int(m.group(1)), name) for name in os.listdir(out_dir) if (m := CHECKPOINT.match(name))]
    return os.path.join(out_dir, max(found)[1]) if found else None


def evaluate(model: nn.Module, x: tensor.Tensor, y: tensor.Tensor) -> float:
    """Accuracy of ``model`` on ``x``, ``y`` (no communication: call it with the bare module)."""
    model.eval()
    with tensor.no_grad():
        accuracy = (model(x).argmax(1) == y).float().mean().item()
    model.train()
    return accuracy


def open_writer(out_dir: str) -> SummaryWriter | None:
    """TensorBoard logs in ``out_dir/tensorboard`` (rank 0 writes); None without tensorboardX."""
    try:
        return SummaryWriter(os.path.join(out_dir, "tensorboard"))
    except ImportError:
        return None


def log_step(writer: SummaryWriter, step: int, loss: float, accuracy: float, lr: float, samples: int,
             seconds: float, waited: float) -> None:
    """One training step's scalars; ``waited`` of its ``seconds`` went to waiting for communication."""
    writer.add_scalar("train/loss", loss, step)
    writer.add_scalar("train/accuracy", accuracy, step)
    writer.add_scalar("train/lr", lr, step)
    writer.add_scalar("perf/samples_per_s", samples / seconds, step)
    writer.add_scalar("perf/communication_wait_share", waited / seconds, step)


def write_curve(out_dir: str, history: list[dict]) -> str:
    if plt is not None:
        path = os.path.join(out_dir, "training_curve.png")
        epochs = [h["epoch"] for h in history]
        fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(9, 3.5))
        ax_loss.plot(epochs, [h["loss"] for h in history], marker="o")
        ax_loss.set(xlabel="epoch", ylabel="train loss", title="loss")
        ax_acc.plot(epochs, [h["train_acc"] for h in history], marker="o", label="train")
        ax_acc.plot(epochs, [h["test_acc"] for h in history], marker="o", label="test")
        ax_acc.set(xlabel="epoch", ylabel="accuracy", title="accuracy")
        ax_acc.legend()
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)
        return path
    path = os.path.join(out_dir, "training_summary.txt")
    with open(path, "w") as f:
        f.write("epoch  train_loss  train_acc  test_acc\n")
        for h in history:
            f.write(f"{h['epoch']:5d}  {h['loss']:10.4f}  {h['train_acc']:9.4f}  {h['test_acc']:8.4f}\n")
    return path


def main(argv=None) -> float:
    args = parse_args(argv)
    # ------------------------------------------------------------------------- distributed setup
    ddp = any(os.environ.get(name) for name in RANK_VARS)
    if ddp:
        dist.init_process_group(args.backend)
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    master_process = rank == 0  # logging, checkpoints and plots
    restart = int(os.environ.get("DISTRIB_RESTART_COUNT", "0"))
    if args.batch_size % world:
        sys.exit(f"--batch-size {args.batch_size} must be divisible by the {world} ranks")
    per_rank_batch = args.batch_size // world
    os.makedirs(args.out_dir, exist_ok=True)

    # ------------------------------------------------------------------------- data
    images, labels = datasets.load_digits()
    train_x, train_y, test_x, test_y = (tensor.from_numpy(a) for a in
                                        datasets.train_test_split(images, labels, seed=args.seed))
    train_x, test_x = train_x.reshape(-1, 1, 8, 8), test_x.reshape(-1, 1, 8, 8)
    train_set = TensorDataset(train_x, train_y)
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(train_set, batch_size=per_rank_batch, sampler=sampler, num_workers=args.workers,
                        persistent_workers=args.workers > 0,
                        generator=tensor.Generator().manual_seed(args.seed))  # leaves the default RNG alone
    steps_per_epoch = len(loader)
    total_steps = args.epochs * steps_per_epoch

    # ------------------------------------------------------------------------- model and optimizer
    tensor.manual_seed(args.seed)  # the same initial model everywhere (DDP also broadcasts rank 0's)
    c = args.channels
    model = nn.Sequential(
        nn.Conv2d(1, c, 3, padding=1), nn.ReLU(),
        nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(args.dropout),
        nn.Linear(2 * c * 16, 10),
    )
    raw_model = model
    if ddp:
        model = dist.DistributedDataParallel(model)
    tensor.manual_seed(args.seed + 1000 * rank)  # each rank its own dropout masks
    optimizer = nn.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = nn.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=total_steps)
    if master_process:
        print(f"digits: {len(train_y)} train / {len(test_y)} test images; {world} rank(s) x batch {per_rank_batch}, "
              f"{args.workers} loader worker(s) each, backend {args.backend if ddp else '-'}")
        print(f"parameters: {sum(p.numel() for p in raw_model.parameters())}, {steps_per_epoch} steps per epoch")

    # ------------------------------------------------------------------------- resume
    step, history = 0, []
    epoch_sums = [0.0, 0.0, 0.0]  # loss * samples, correct, samples of this rank in the current epoch
    path = latest_checkpoint(args.out_dir) if (args.resume or restart > 0) else None
    if path is not None:
        state = load_checkpoint(path, raw_model, optimizer, scheduler, restore_rng=False)
        extra, config = state["extra"], {key: getattr(args, key) for key in RUN_SETTINGS}
        if state["config"] != config or extra["world"] != world:
            sys.exit(f"{path} was made with other settings or world size: {state['config']}, world {extra['world']}")
        step, history = state["step"], extra["history"]
        tensor.set_rng_state(extra["rng_states"][rank])
        epoch_sums = list(extra["epoch_sums"][rank])
        if master_process:
            print(f"resumed from {path} at step {step} (restart {restart})")
    if ddp and (args.resume or restart > 0):  # a node that cannot see the checkpoint would start over
        steps = [None] * world
        dist.all_gather_object(steps, step)
        if len(set(steps)) > 1:
            sys.exit(f"the ranks resumed at different steps {steps}: every node must see --out-dir {args.out_dir} "
                     "(a shared filesystem)")

    def save(step: int) -> None:
        # every rank's random state and epoch sums: a collective, so every rank calls it
        everyone = [None] * world
        mine = (tensor.get_rng_state(), list(epoch_sums))
        if ddp:
            dist.all_gather_object(everyone, mine)
        else:
            everyone = [mine]
        if master_process:
            target = os.path.join(args.out_dir, f"step_{step:06d}.ckpt")
            save_checkpoint(target, raw_model, optimizer, scheduler, epoch=step // steps_per_epoch, step=step,
                            config={key: getattr(args, key) for key in RUN_SETTINGS}, world=world,
                            history=history, rng_states=[s for s, _ in everyone],
                            epoch_sums=[e for _, e in everyone])
            for name in sorted(os.listdir(args.out_dir)):  # keep the latest two
                m = CHECKPOINT.match(name)
                if m and int(m.group(1)) < step - args.checkpoint_every:
                    os.remove(os.path.join(args.out_dir, name))

    # ------------------------------------------------------------------------- training loop
    model.train()
    width = len(str(args.epochs))
    start = time.perf_counter()
    writer = open_writer(args.out_dir)
    step_end, waited = start, communication_wait_seconds()
    for epoch in range(step // steps_per_epoch, args.epochs):
        sampler.set_epoch(epoch)  # a fresh shuffle each epoch, the same on every rank
        skip = step - epoch * steps_per_epoch  # batches of this epoch done before a restart
        bar = Progress(steps_per_epoch, desc=f"epoch {epoch + 1:{width}d}/{args.epochs}", disable=not master_process)
        bar.update(skip)
        for i, (x, y) in enumerate(loader):
            if i < skip:
                continue
            if args.simulate_failure == step and restart == 0 and rank == world - 1:
                os.kill(os.getpid(), signal.SIGKILL)
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            step += 1
            loss_value, correct = loss.item(), (logits.argmax(1) == y).sum().item()
            epoch_sums[0] += loss_value * len(y)
            epoch_sums[1] += correct
            epoch_sums[2] += len(y)
            if writer is not None:  # the step's time runs from the end of the last one: data loading included
                now, waited_now = time.perf_counter(), communication_wait_seconds()
                log_step(writer, step, loss_value, correct / len(y), scheduler.get_last_lr()[0], len(y) * world,
                         now - step_end, waited_now - waited)
                step_end, waited = now, waited_now
            bar.update(loss=epoch_sums[0] / epoch_sums[2])
            if step % args.checkpoint_every == 0 and step < total_steps:
                save(step)
        totals = tensor.tensor(epoch_sums, dtype=tensor.float64)
        if ddp:
            dist.all_reduce(totals)
        loss_sum, correct, seen = totals.tolist()
        test_acc = evaluate(raw_model, test_x, test_y)
        history.append({"epoch": epoch + 1, "loss": loss_sum / seen, "train_acc": correct / seen,
                        "test_acc": test_acc})
        epoch_sums = [0.0, 0.0, 0.0]
        bar.set_postfix(test_acc=f"{test_acc:.1%}")
        if writer is not None:
            writer.add_scalar("test/accuracy", test_acc, step)
        bar.close()
        if master_process:
            print(f"epoch {epoch + 1:{width}d}/{args.epochs}: loss {loss_sum / seen:.4f}, train accuracy "
                  f"{correct / seen:.1%}, test accuracy {test_acc:.1%}, lr {scheduler.get_last_lr()[0]:.5f}, "
                  f"{time.perf_counter() - start:.1f} s", flush=True)

    # ------------------------------------------------------------------------- results
    test_acc = evaluate(raw_model, test_x, test_y)
    if writer is not None:
        writer.close()
    if master_process:
        tensor.save(raw_model.state_dict(), os.path.join(args.out_dir, "final_model.pt"))
        print(f"wrote {write_curve(args.out_dir, history)}")
        print(f"test accuracy: {test_acc:.1%}")
    if ddp:
        dist.destroy_process_group()
    return test_acc


if __name__ == "__main__":
    main()
