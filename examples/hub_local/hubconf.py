"""A tiny hub repository: ``nn.hub`` reads this file to find the models it publishes.

Every public callable here is an entrypoint (``nn.hub.list`` shows them, and
``nn.hub.help`` prints their docstrings); ``dependencies`` names the modules
that must be importable before an entrypoint runs. Helper modules are imported
as modules (``import tiny_models``), not as names, so that their classes do not
show up as entrypoints. The directory is on sys.path while this file is
imported and while an entrypoint runs.

The pretrained weights in ``weights/`` are a distrib checkpoint whose name
carries the first digits of its SHA-256 (``tiny_mlp-<sha256 prefix>.pt``), so
``load_state_dict_from_url(..., check_hash=True)`` verifies them. Here the URL is
a ``file://`` URL; a published repository would use an https URL.
"""

dependencies = ["numpy"]

import pathlib  # noqa: E402 - dependencies comes first, as in torch hubconfs

import tiny_models  # noqa: E402

import nn  # noqa: E402

_WEIGHTS_DIR = pathlib.Path(__file__).resolve().parent / "weights"


def tiny_mlp(pretrained: bool = False, hidden: int = 32, in_features: int = 4, out_features: int = 3):
    """A 2-layer perceptron ``in_features -> hidden -> ReLU -> out_features``.

    pretrained (bool): load weights trained to tell which of the first 3 of 4
        standard-normal features is largest (needs the default sizes).
    hidden (int): the width of the hidden layer.
    """
    model = tiny_models.TinyMLP(in_features, hidden, out_features)
    if pretrained:
        if (in_features, hidden, out_features) != (4, 32, 3):
            raise ValueError("pretrained weights exist only for in_features=4, hidden=32, out_features=3, "
                             f"got {in_features}, {hidden}, {out_features}")
        (weights,) = _WEIGHTS_DIR.glob("tiny_mlp-*.pt")
        state = nn.hub.load_state_dict_from_url(weights.as_uri(), check_hash=True, progress=False)
        model.load_state_dict(state)
    return model
