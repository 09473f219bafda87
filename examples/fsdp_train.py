"""The char transformer (examples/char_model.py) trained with FSDP, activation checkpointing and
sharded, resumable checkpoints.

    python examples/fsdp_train.py                                   # one process
    distrib-launch --nproc 2 examples/fsdp_train.py --steps 200     # 2 ranks, each 1/2 of the state
    distrib-launch --nproc 2 examples/fsdp_train.py --resume        # continue from --out-dir

Each transformer block is a ``fully_shard`` unit whose activations are recomputed in backward
(``checkpoint_wrapper`` around the sharded block: the recompute gathers the block's parameters
again); the embeddings, final norm and head belong to the root unit. Each rank trains on its own
random windows (seeded by step and rank), so the global batch is ``--batch-size`` times the ranks.
Every ``--eval-every`` steps the model, the optimizer and the LR schedule go to ``--out-dir``
with ``distrib.checkpoint`` (a file per rank, committed atomically); ``--resume`` loads them on
any number of ranks.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # see examples/char_model.py
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import math  # noqa: E402

import numpy as np  # noqa: E402

import distrib as dist  # noqa: E402
import nn  # noqa: E402
import nn.functional as F  # noqa: E402
import tensor  # noqa: E402
from distrib import checkpoint as dcp  # noqa: E402
from distrib.fsdp import fully_shard  # noqa: E402
from nn.utils.checkpoint import checkpoint_wrapper  # noqa: E402

try:  # imported as ``examples.fsdp_train``
    from .char_model import TEXT_PATH, CharTransformer, evaluate, get_batch
except ImportError:  # run as a script: examples/ is sys.path[0]
    from char_model import TEXT_PATH, CharTransformer, evaluate, get_batch

RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; exits with status 2 on bad values."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="zmq", choices=["zmq", "mpi"], help="default zmq")
    parser.add_argument("--steps", type=int, default=300, help="optimizer steps (default 300)")
    parser.add_argument("--lr", type=float, default=2e-2, help="peak AdamW learning rate (default 2e-2)")
    parser.add_argument("--batch-size", type=int, default=16, help="windows per rank and step (default 16)")
    parser.add_argument("--block-size", type=int, default=64, help="context length (default 64)")
    parser.add_argument("--d-model", type=int, default=64, help="embedding width (default 64)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    parser.add_argument("--layers", type=int, default=2, help="transformer blocks (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed for init and batches")
    parser.add_argument("--eval-every", type=int, default=100, help="validate and checkpoint every N steps")
    parser.add_argument("--out-dir", default="fsdp_out", help="the checkpoint directory (default fsdp_out)")
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out-dir")
    parser.add_argument("--stop-after", type=int, metavar="STEP", help="stop at this step (to resume later)")
    args = parser.parse_args(argv)
    if min(args.steps, args.batch_size, args.block_size, args.d_model, args.layers, args.eval_every) < 1:
        parser.error("sizes and counts must be >= 1")
    if args.d_model % args.heads:
        parser.error(f"--d-model ({args.d_model}) must be divisible by --heads ({args.heads})")
    return args


def shard_model(model: CharTransformer) -> CharTransformer:
    """Each block a unit with recomputed activations, the rest the root unit."""
    layers = model.blocks.layers
    for i, block in enumerate(layers):
        layers[i] = checkpoint_wrapper(fully_shard(block))
    return fully_shard(model)


def main(argv: list[str] | None = None) -> float:
    """Train; print and return the final validation loss (nats/char)."""
    args = parse_args(argv)
    if any(os.environ.get(name) for name in RANK_VARS):
        dist.init_process_group(args.backend)
    else:  # one process: a group of one
        dist.init_process_group("zmq", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    rank, world = dist.get_rank(), dist.get_world_size()
    log = print if rank == 0 else (lambda *a, **k: None)

    text = TEXT_PATH.read_text(encoding="ascii")
    chars = sorted(set(text))
    lookup = np.zeros(128, dtype=np.int64)
    lookup[[ord(ch) for ch in chars]] = np.arange(len(chars))
    encoded = tensor.from_numpy(lookup[np.frombuffer(text.encode("ascii"), dtype=np.uint8)])
    split = int(0.9 * len(encoded))
    train_data, val_data = encoded[:split], encoded[split:]

    tensor.manual_seed(args.seed)  # the same initial model on every rank
    model = shard_model(CharTransformer(len(chars), args.block_size, args.d_model, args.heads, args.layers, 0.0))
    optimizer = nn.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = nn.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=args.steps, pct_start=0.1)
    log(f"{world} rank(s); this rank holds {sum(p.numel() for p in model.parameters())} parameter elements")

    step = 0
    if args.resume:
        state = checkpoint_state(model, optimizer, scheduler, step)
        dcp.load(state, checkpoint_id=args.out_dir)
        dcp.set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
        scheduler.load_state_dict(state["scheduler"])
        step = state["step"]
        log(f"resumed from {args.out_dir} at step {step}")

    model.train()
    last = args.steps if args.stop_after is None else min(args.steps, args.stop_after)
    while step < last:
        # Each rank its own windows, a function of the step: a resumed run sees the same batches.
        tensor.manual_seed(args.seed + 1 + step * world + rank)
        x, y = get_batch(train_data, args.batch_size, args.block_size)
        loss = F.cross_entropy(model(x).reshape(-1, len(chars)), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        step += 1
        if step % args.eval_every == 0 or step == last:
            log(f"step {step}: train loss {loss.item():.4f}, val loss {evaluate(model, val_data, args.block_size):.4f}")
            dcp.save(checkpoint_state(model, optimizer, scheduler, step), checkpoint_id=args.out_dir)
    val_loss = evaluate(model, val_data, args.block_size)
    log(f"val loss: {val_loss:.4f} ({val_loss / math.log(2):.3f} bits per char)")
    dist.destroy_process_group()
    return val_loss


def checkpoint_state(model, optimizer, scheduler, step: int) -> dict:
    """What a checkpoint holds: sharded model and optimizer state, the LR schedule, the step."""
    model_sd, optim_sd = dcp.get_state_dict(model, optimizer)
    return {"model": model_sd, "optim": optim_sd, "scheduler": scheduler.state_dict(), "step": step}


if __name__ == "__main__":
    main()
