"""Train the ``tiny_mlp`` weights and save them as ``weights/tiny_mlp-<sha256 prefix>.pt``.

    python examples/hub_local/make_weights.py

Plain mini-batch SGD on the task of ``tiny_models.make_batch``, with a fixed
seed. The file name carries the first 8 hex digits of the file's SHA-256, the
convention ``nn.hub.load_state_dict_from_url(check_hash=True)`` checks.
"""

from __future__ import annotations

import hashlib
import pathlib

import tiny_models

import tensor

WEIGHTS_DIR = pathlib.Path(__file__).resolve().parent / "weights"


def train(steps: int = 1500, batch_size: int = 64, lr: float = 0.2) -> tiny_models.TinyMLP:
    tensor.manual_seed(0)
    model = tiny_models.TinyMLP()
    for _ in range(steps):
        x, y = tiny_models.make_batch(batch_size)
        log_probs = tensor.log_softmax(model(x), 1)
        loss = -log_probs.gather(1, y.unsqueeze(1)).mean()
        model.zero_grad()
        loss.backward()
        with tensor.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
    return model


def main() -> None:
    model = train()
    WEIGHTS_DIR.mkdir(exist_ok=True)
    for old in WEIGHTS_DIR.glob("tiny_mlp-*.pt"):
        old.unlink()
    tmp = WEIGHTS_DIR / "tiny_mlp.tmp"
    tensor.save(model.state_dict(), tmp)
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
    target = WEIGHTS_DIR / f"tiny_mlp-{digest[:8]}.pt"
    tmp.rename(target)
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
