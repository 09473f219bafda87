"""A character-level transformer language model on a bundled text (a tiny nanoGPT).

    python examples/char_model.py                      # 400 steps, ~20-30 s on 2 cores
    python examples/char_model.py --steps 2000 --d-model 128 --layers 4   # better, slower
    python examples/char_model.py --checkpoint char.ckpt            # save every --eval-every steps
    python examples/char_model.py --checkpoint char.ckpt --resume   # continue where it stopped

The text is ``examples/data/pydoc_topics.txt``: ~150 KB of the Python language
reference as shipped with Python in ``pydoc_data/topics.py`` (PSF license; see
``examples/data/README.md``). Characters are the tokens; the model is token and
position embeddings, a stack of pre-norm ``nn.TransformerEncoderLayer`` blocks
run with a causal mask (each position sees only earlier ones), a final
LayerNorm and a linear head to the vocabulary. Training uses AdamW with a
one-cycle LR schedule on random windows of the first 90% of the text.

A progress bar shows the training loss going down (plain lines when not on a
terminal); every ``--eval-every`` steps it adds the validation loss on the last
10%. The run ends by printing ``val loss: X.XXXX (Y.YYY bits per char)`` and a
short sample generated from a prompt.

Results are deterministic for a given seed and BLAS thread count (one by
default, see below; another thread count may change the last bits).
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
import math  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import nn  # noqa: E402
import nn.functional as F  # noqa: E402
import tensor  # noqa: E402

try:  # imported as ``examples.char_model``
    from . import _training as training
    from ._progress import Progress
    from .checkpoint import save_checkpoint
except ImportError:  # run as a script: examples/ is sys.path[0]
    import _training as training
    from _progress import Progress
    from checkpoint import save_checkpoint

TEXT_PATH = Path(__file__).resolve().parent / "data" / "pydoc_topics.txt"
# The run's settings; a checkpoint remembers them and --resume insists on the same ones.
RUN_SETTINGS = ("steps", "lr", "batch_size", "block_size", "d_model", "heads", "layers", "dropout", "seed")


# ----------------------------------------------------------------------------- configuration
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; exits with status 2 on bad values."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=400, help="optimizer steps (default 400)")
    parser.add_argument("--lr", type=float, default=2e-2, help="peak AdamW learning rate (default 2e-2)")
    parser.add_argument("--batch-size", type=int, default=32, help="windows per step (default 32)")
    parser.add_argument("--block-size", type=int, default=64, help="context length in characters (default 64)")
    parser.add_argument("--d-model", type=int, default=64, help="embedding width (default 64)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    parser.add_argument("--layers", type=int, default=2, help="transformer blocks (default 2)")
    parser.add_argument("--dropout", type=float, default=0.0,
                        help="dropout in the blocks (default 0: too few steps to overfit)")
    parser.add_argument("--seed", type=int, default=0, help="seed for init, batches, dropout and sampling")
    parser.add_argument("--eval-every", type=int, default=100, help="validate (and checkpoint) every N steps")
    parser.add_argument("--sample-length", type=int, default=200, help="characters to generate at the end")
    parser.add_argument("--prompt", default='The "', help="text the sample starts from")
    parser.add_argument("--temperature", type=float, default=0.8, help="sampling temperature (default 0.8)")
    training.add_checkpoint_arguments(parser, every="every --eval-every", unit="step")
    args = parser.parse_args(argv)
    positive = ("steps", "batch_size", "block_size", "d_model", "heads", "layers", "eval_every")
    bad = [f"--{name.replace('_', '-')}" for name in positive if getattr(args, name) < 1]
    if bad or args.lr <= 0 or args.temperature <= 0 or args.sample_length < 0:
        parser.error(f"{', '.join(bad) or 'sizes'} must be >= 1, --lr and --temperature > 0, "
                     "--sample-length >= 0")
    if args.d_model % args.heads:
        parser.error(f"--d-model ({args.d_model}) must be divisible by --heads ({args.heads})")
    training.check_common_arguments(parser, args)
    return args


# ----------------------------------------------------------------------------- model
class CharTransformer(nn.Module):
    """Embeddings, ``layers`` causal pre-norm transformer blocks, LayerNorm, linear head."""

    def __init__(self, vocab_size: int, block_size: int, d_model: int, heads: int, layers: int,
                 dropout: float) -> None:
        super().__init__()
        self.block_size = block_size
        self.token = nn.Embedding(vocab_size, d_model)
        self.position = nn.Embedding(block_size, d_model)
        self.drop = nn.Dropout(dropout)
        block = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=4 * d_model, dropout=dropout,
                                           activation="relu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        causal = np.triu(np.full((block_size, block_size), -np.inf, dtype=np.float32), k=1)
        self.register_buffer("causal_mask", tensor.from_numpy(causal), persistent=False)

    def forward(self, idx: tensor.Tensor) -> tensor.Tensor:
        """Logits (N, T, vocab) for the next character after each of ``idx`` (N, T)."""
        length = idx.shape[1]
        x = self.drop(self.token(idx) + self.position(tensor.arange(length)))
        x = self.blocks(x, mask=self.causal_mask[:length, :length], is_causal=True)
        return self.head(self.norm(x))

    @tensor.no_grad()
    def generate(self, idx: tensor.Tensor, length: int, temperature: float = 1.0) -> tensor.Tensor:
        """Extend ``idx`` (1, T) by ``length`` sampled characters (uses the default generator)."""
        for _ in range(length):
            logits = self(idx[:, -self.block_size:])[:, -1] / temperature
            nxt = tensor.multinomial(F.softmax(logits, dim=-1), 1)
            idx = tensor.cat([idx, nxt], dim=1)
        return idx


# ----------------------------------------------------------------------------- helpers
def get_batch(data: tensor.Tensor, batch_size: int, block_size: int) -> tuple[tensor.Tensor, tensor.Tensor]:
    """Random windows of ``data``: inputs (N, T) and the next-character targets (N, T)."""
    starts = tensor.randint(0, len(data) - block_size, (batch_size, 1))
    windows = data[starts + tensor.arange(block_size + 1)]
    return windows[:, :-1], windows[:, 1:]


def evaluate(model: nn.Module, data: tensor.Tensor, block_size: int, max_windows: int = 64) -> float:
    """Mean cross-entropy (nats per char) over consecutive non-overlapping windows of ``data``.

    Deterministic (no random windows, dropout off), so values from different runs compare.
    """
    n = min((len(data) - 1) // block_size, max_windows)
    windows = data[:n * block_size + 1]
    x = windows[:-1].reshape(n, block_size)
    y = windows[1:].reshape(n, block_size)
    was_training = model.training
    model.eval()
    with tensor.no_grad():
        loss = F.cross_entropy(model(x).reshape(-1, model.head.out_features), y.reshape(-1)).item()
    model.train(was_training)
    return loss


def main(argv: list[str] | None = None) -> float:
    """Train with the command-line settings; print and return the final validation loss (nats/char)."""
    args = parse_args(argv)
    tensor.manual_seed(args.seed)

    # ------------------------------------------------------------------------- data
    text = TEXT_PATH.read_text(encoding="ascii")
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    lookup = np.zeros(128, dtype=np.int64)  # ASCII code -> token id
    lookup[[ord(ch) for ch in chars]] = np.arange(len(chars))
    encoded = tensor.from_numpy(lookup[np.frombuffer(text.encode("ascii"), dtype=np.uint8)])
    split = int(0.9 * len(encoded))
    train_data, val_data = encoded[:split], encoded[split:]
    print(f"text: {TEXT_PATH.name}, {len(text)} characters, vocabulary of {len(chars)}; "
          f"{len(train_data)} train / {len(val_data)} validation")

    # ------------------------------------------------------------------------- model and optimizer
    model = CharTransformer(len(chars), args.block_size, args.d_model, args.heads, args.layers, args.dropout)
    optimizer = nn.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = nn.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=args.steps,
                                                 pct_start=0.1)
    print(f"parameters: {sum(p.numel() for p in model.parameters())} "
          f"({args.layers} blocks, d_model {args.d_model}, {args.heads} heads, context {args.block_size})")
    print(f"initial val loss: {evaluate(model, val_data, args.block_size):.4f} "
          f"(uniform guess: {math.log(len(chars)):.4f})")

    step = 0
    if args.resume:
        step = training.resume(args, RUN_SETTINGS, model, optimizer, scheduler)["step"]
        print(f"resumed from {args.checkpoint} at step {step}")

    # ------------------------------------------------------------------------- training loop
    model.train()
    last = min(args.steps, args.stop_after) if args.stop_after is not None else args.steps
    with Progress(args.steps, desc="train", lines=max(1, args.steps // args.eval_every)) as bar:
        bar.update(step)
        smoothed = None
        while step < last:
            x, y = get_batch(train_data, args.batch_size, args.block_size)
            loss = F.cross_entropy(model(x).reshape(-1, len(chars)), y.reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            smoothed = loss.item() if smoothed is None else 0.9 * smoothed + 0.1 * loss.item()
            if step % args.eval_every == 0 or step == last:
                bar.set_postfix(val_loss=f"{evaluate(model, val_data, args.block_size):.4f}")
                if args.checkpoint:
                    save_checkpoint(args.checkpoint, model, optimizer, scheduler, epoch=0, step=step,
                                    config=training.run_config(args, RUN_SETTINGS))
            bar.update(loss=smoothed)
    if step < args.steps:
        print(training.stopping_note(args, "step", step, args.steps))

    # ------------------------------------------------------------------------- evaluation and a sample
    val_loss = evaluate(model, val_data, args.block_size)
    print(f"val loss: {val_loss:.4f} ({val_loss / math.log(2):.3f} bits per char)")
    if args.sample_length:
        model.eval()
        prompt = tensor.tensor([[stoi[ch] for ch in args.prompt if ch in stoi] or [stoi["\n"]]])
        out = model.generate(prompt, args.sample_length, args.temperature)[0].tolist()
        print("sample:")
        print("".join(chars[i] for i in out))
    return val_loss


if __name__ == "__main__":
    main()
