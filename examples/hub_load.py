"""Load a model through ``nn.hub`` from the local hub repository ``examples/hub_local``.

    python examples/hub_load.py [--hidden 32] [--no-pretrained]

Prints the repository's entrypoints (``nn.hub.list``), the docstring of
``tiny_mlp`` (``nn.hub.help``), then loads it with ``nn.hub.load(...,
source="local")`` and runs a forward pass on a fresh batch, ending with
``accuracy: NN.N%`` on the task the pretrained weights were trained for
(about 33% without them). The pretrained weights are fetched from a ``file://``
URL into the hub cache (``nn.hub.get_dir()/checkpoints``; set ``DISTRIB_HUB_DIR``
to put it elsewhere).

The same repository pushed to GitHub would load with
``nn.hub.load("owner/repo", "tiny_mlp", pretrained=True)``.
"""

from __future__ import annotations

import argparse
import pathlib

import nn
import tensor

HUB_REPO = pathlib.Path(__file__).resolve().parent / "hub_local"


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=32, help="hidden width (pretrained needs 32)")
    parser.add_argument("--no-pretrained", dest="pretrained", action="store_false",
                        help="random initial weights instead of the pretrained ones")
    parser.add_argument("--batch-size", type=int, default=512)
    args = parser.parse_args(argv)

    print(f"hub cache: {nn.hub.get_dir()}")
    print(f"entrypoints in {HUB_REPO}: {nn.hub.list(str(HUB_REPO), source='local')}")
    print("help(tiny_mlp):")
    print(nn.hub.help(str(HUB_REPO), "tiny_mlp", source="local"))

    model = nn.hub.load(str(HUB_REPO), "tiny_mlp", source="local", pretrained=args.pretrained,
                        hidden=args.hidden)
    model.eval()
    print(model)
    print(f"parameters: {sum(p.numel() for p in model.parameters())}")

    generator = tensor.Generator().manual_seed(1234)
    x = tensor.randn(args.batch_size, 4, generator=generator)
    target = x[:, :3].argmax(1)
    with tensor.no_grad():
        logits = model(x)
    print(f"logits: shape {tuple(logits.shape)}, first row {[round(v, 3) for v in logits[0].tolist()]}")
    accuracy = float((logits.argmax(1) == target).float().mean().item()) * 100
    print(f"accuracy: {accuracy:.1f}%")
    return accuracy


if __name__ == "__main__":
    main()
