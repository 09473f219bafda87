"""What the nn training examples (``mlp_digits``, ``cnn_digits``, ``char_model``) share.

The checkpoint options of their command lines (``--checkpoint``, ``--resume``,
``--stop-after``) and their checks, resuming a run only with the settings it was
started with, and the evaluation of a classifier. Each example keeps its model
and its training loop in its own file.

    add_checkpoint_arguments(parser, every="after every epoch", unit="epoch")
    args = parser.parse_args(argv)
    check_common_arguments(parser, args)
    ...
    if args.resume:
        state = resume(args, RUN_SETTINGS, model, optimizer, scheduler)
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import nn
import nn.functional as F
import tensor

try:  # imported as ``examples._training``
    from .checkpoint import load_checkpoint
except ImportError:  # run as a script: examples/ is sys.path[0]
    from checkpoint import load_checkpoint

__all__ = ["add_checkpoint_arguments", "check_common_arguments", "run_config", "resume", "stopping_note",
           "evaluate_classifier"]


def add_checkpoint_arguments(parser: argparse.ArgumentParser, *, every: str, unit: str) -> None:
    """Add ``--checkpoint PATH`` (saved ``every``), ``--resume`` and ``--stop-after N`` (N counts ``unit``s)."""
    parser.add_argument("--checkpoint", metavar="PATH", help=f"save the training state here {every}")
    parser.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    parser.add_argument("--stop-after", type=int, metavar="N", help=f"stop after {unit} N (to --resume later)")


def check_common_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit with status 2 on a ``--dropout`` outside [0, 1) or a ``--resume`` with nothing to resume from."""
    if not 0.0 <= args.dropout < 1.0:
        parser.error(f"--dropout must be in [0, 1), got {args.dropout}")
    if args.resume and not args.checkpoint:
        parser.error("--resume needs --checkpoint PATH")
    if args.resume and not os.path.exists(args.checkpoint):
        parser.error(f"--resume: no checkpoint at {args.checkpoint}")


def run_config(args: argparse.Namespace, settings: tuple[str, ...]) -> dict[str, Any]:
    """The run's ``settings`` (names of ``args`` attributes) as a checkpoint stores them."""
    return {key: getattr(args, key) for key in settings}


def resume(args: argparse.Namespace, settings: tuple[str, ...], model, optimizer, scheduler) -> dict[str, Any]:
    """Load ``args.checkpoint`` into the training state (see ``load_checkpoint``) and return its counters.

    Exits with a message naming the differences if the checkpoint was made with
    other values of ``settings`` than ``args`` has.
    """
    state = load_checkpoint(args.checkpoint, model, optimizer, scheduler)
    config = run_config(args, settings)
    saved = {key: state["config"].get(key) for key in settings}
    if saved != config:
        diff = ", ".join(f"{k}={saved[k]!r} (now {config[k]!r})" for k in settings if saved[k] != config[k])
        sys.exit(f"--resume: {args.checkpoint} was made with different settings: {diff}")
    return state


def stopping_note(args: argparse.Namespace, unit: str, done: int, total: int) -> str:
    """The line printed when ``--stop-after`` ends a run after ``done`` of ``total`` ``unit``s."""
    return (f"stopping after {unit} {done} of {total}" +
            (f"; continue with --checkpoint {args.checkpoint} --resume" if args.checkpoint else ""))


def evaluate_classifier(model: nn.Module, x: tensor.Tensor, y: tensor.Tensor) -> tuple[float, float]:
    """``(mean cross-entropy, accuracy)`` of ``model`` on ``x``, ``y`` in eval mode."""
    was_training = model.training
    model.eval()
    with tensor.no_grad():
        logits = model(x)
        loss = F.cross_entropy(logits, y).item()
        accuracy = (logits.argmax(1) == y).float().mean().item()
    model.train(was_training)
    return loss, accuracy
