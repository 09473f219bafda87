"""Use weights trained in PyTorch: load a ``torch.save`` state dict into the same model here.

    python examples/torch_weights.py --weights digits_cnn.pt
    python examples/torch_weights.py --weights digits_cnn.pt --mmap --save-as digits_cnn.safetensors

The model below is, layer for layer and name for name, this PyTorch module::

    torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 10))

so ``torch.save(model.state_dict(), "digits_cnn.pt")`` after training it on the 8x8 digits
(pixels scaled to [0, 1], shaped (N, 1, 8, 8)) gives a file this script evaluates on the
bundled test split, printing ``test accuracy: NN.N%``. No torch is needed here: the file is
read by ``tensor.load``, whose unpickler allows only what ``torch.load(weights_only=True)``
allows. ``--save-as`` writes the weights back out (``.safetensors`` by suffix, otherwise
PyTorch's format); ``--predictions`` saves the test logits as a ``.npy`` file.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402

import numpy as np  # noqa: E402

import nn  # noqa: E402
import tensor  # noqa: E402

try:  # imported as ``examples.torch_weights``
    from . import datasets
except ImportError:  # run as a script: examples/ is sys.path[0]
    import datasets


def build_model() -> nn.Module:
    """The digits CNN, with the same layers (and so the same state-dict keys) as the torch one."""
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 4 * 4, 10),
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; exits with status 2 on bad values."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", required=True, help="a state dict written by torch.save")
    parser.add_argument("--mmap", action="store_true", help="map the file's storages instead of reading them")
    parser.add_argument("--seed", type=int, default=0, help="the train/test split's seed (as in training)")
    parser.add_argument("--save-as", help="write the weights again (.safetensors by suffix, else PyTorch's format)")
    parser.add_argument("--predictions", help="save the test logits to this .npy file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> float:
    """Load the weights, evaluate, optionally convert; print and return the test accuracy."""
    args = parse_args(argv)
    state = tensor.load(args.weights, map_location="cpu", mmap=args.mmap)
    model = build_model()
    model.load_state_dict(state)  # strict: every key must match, or it says which do not
    print(f"loaded {len(state)} tensors from {args.weights}")

    images, labels = datasets.load_digits()
    _, _, test_x, test_y = datasets.train_test_split(images, labels, seed=args.seed)
    model.eval()
    with tensor.no_grad():
        logits = model(tensor.from_numpy(test_x).reshape(-1, 1, 8, 8))
    accuracy = (logits.argmax(1).numpy() == test_y).mean()
    print(f"test accuracy: {accuracy:.1%}")

    if args.predictions:
        np.save(args.predictions, logits.numpy())
    if args.save_as:
        fmt = "safetensors" if args.save_as.endswith(".safetensors") else "torch"
        tensor.save(model.state_dict(), args.save_as, format=fmt)
        print(f"wrote {args.save_as} ({fmt} format)")
    return float(accuracy)


if __name__ == "__main__":
    main()
