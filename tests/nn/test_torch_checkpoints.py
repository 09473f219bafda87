"""Every nn module's state dict and an Adam state dict, through PyTorch's checkpoint format.

Both ways, with torch as the oracle: torch saves, we load into the same architecture; we save,
``torch.load(weights_only=True)`` reads it into torch's module. Values compare bit for bit.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import nn
import tensor


def _layer(lib):
    return lib.TransformerEncoderLayer(8, 2, 16, dropout=0.0)


# name -> how to build it in torch.nn or our nn (the same arguments in both)
MODULES = {
    "AdaptiveAvgPool1d": lambda lib: lib.AdaptiveAvgPool1d(2),
    "AdaptiveAvgPool2d": lambda lib: lib.AdaptiveAvgPool2d(2),
    "AlphaDropout": lambda lib: lib.AlphaDropout(),
    "AvgPool1d": lambda lib: lib.AvgPool1d(2),
    "AvgPool2d": lambda lib: lib.AvgPool2d(2),
    "BCELoss": lambda lib: lib.BCELoss(),
    "BCEWithLogitsLoss": lambda lib: lib.BCEWithLogitsLoss(),
    "BatchNorm1d": lambda lib: lib.BatchNorm1d(3),
    "BatchNorm2d": lambda lib: lib.BatchNorm2d(3),
    "BatchNorm3d": lambda lib: lib.BatchNorm3d(3),
    "Bilinear": lambda lib: lib.Bilinear(2, 3, 4),
    "Conv1d": lambda lib: lib.Conv1d(2, 4, 3),
    "Conv2d": lambda lib: lib.Conv2d(2, 4, 3, groups=2),
    "Conv3d": lambda lib: lib.Conv3d(2, 4, 2),
    "ConvTranspose1d": lambda lib: lib.ConvTranspose1d(2, 4, 3),
    "ConvTranspose2d": lambda lib: lib.ConvTranspose2d(2, 4, 3),
    "CrossEntropyLoss": lambda lib: lib.CrossEntropyLoss(),
    "Dropout": lambda lib: lib.Dropout(),
    "Dropout1d": lambda lib: lib.Dropout1d(),
    "Dropout2d": lambda lib: lib.Dropout2d(),
    "Dropout3d": lambda lib: lib.Dropout3d(),
    "ELU": lambda lib: lib.ELU(),
    "Embedding": lambda lib: lib.Embedding(5, 3, padding_idx=0),
    "Flatten": lambda lib: lib.Flatten(),
    "GELU": lambda lib: lib.GELU(),
    "GRU": lambda lib: lib.GRU(3, 4, num_layers=2, bidirectional=True),
    "GRUCell": lambda lib: lib.GRUCell(3, 4),
    "GroupNorm": lambda lib: lib.GroupNorm(2, 4),
    "Hardtanh": lambda lib: lib.Hardtanh(),
    "HuberLoss": lambda lib: lib.HuberLoss(),
    "Identity": lambda lib: lib.Identity(),
    "KLDivLoss": lambda lib: lib.KLDivLoss(),
    "L1Loss": lambda lib: lib.L1Loss(),
    "LSTM": lambda lib: lib.LSTM(3, 4, num_layers=2, proj_size=2),
    "LSTMCell": lambda lib: lib.LSTMCell(3, 4),
    "LayerNorm": lambda lib: lib.LayerNorm(4),
    "LeakyReLU": lambda lib: lib.LeakyReLU(),
    "Linear": lambda lib: lib.Linear(3, 4),
    "LogSigmoid": lambda lib: lib.LogSigmoid(),
    "LogSoftmax": lambda lib: lib.LogSoftmax(1),
    "MSELoss": lambda lib: lib.MSELoss(),
    "MaxPool1d": lambda lib: lib.MaxPool1d(2),
    "MaxPool2d": lambda lib: lib.MaxPool2d(2),
    "Mish": lambda lib: lib.Mish(),
    "ModuleDict": lambda lib: lib.ModuleDict({"a": lib.Linear(2, 2), "b": lib.BatchNorm1d(2)}),
    "ModuleList": lambda lib: lib.ModuleList([lib.Linear(2, 3), lib.LayerNorm(3)]),
    "MultiheadAttention": lambda lib: lib.MultiheadAttention(8, 2, kdim=4, vdim=6),
    "NLLLoss": lambda lib: lib.NLLLoss(),
    "NonDynamicallyQuantizableLinear": lambda lib: lib.Linear(3, 4),
    "ParameterDict": lambda lib: lib.ParameterDict({"p": lib.Parameter(lib_randn(lib, 2, 3))}),
    "ParameterList": lambda lib: lib.ParameterList([lib.Parameter(lib_randn(lib, 3))]),
    "RNN": lambda lib: lib.RNN(3, 4, nonlinearity="relu"),
    "RNNCell": lambda lib: lib.RNNCell(3, 4),
    "ReLU": lambda lib: lib.ReLU(),
    "ReLU6": lambda lib: lib.ReLU6(),
    "Sequential": lambda lib: lib.Sequential(lib.Conv2d(1, 2, 3), lib.BatchNorm2d(2), lib.ReLU()),
    "SiLU": lambda lib: lib.SiLU(),
    "Sigmoid": lambda lib: lib.Sigmoid(),
    "SmoothL1Loss": lambda lib: lib.SmoothL1Loss(),
    "Softmax": lambda lib: lib.Softmax(1),
    "Softplus": lambda lib: lib.Softplus(),
    "Softsign": lambda lib: lib.Softsign(),
    "Tanh": lambda lib: lib.Tanh(),
    "TransformerEncoder": lambda lib: lib.TransformerEncoder(_layer(lib), 2, enable_nested_tensor=False),
    "TransformerEncoderLayer": _layer,
    "Unflatten": lambda lib: lib.Unflatten(1, (2, 2)),
    "AdaptiveAvgPool3d": lambda lib: lib.AdaptiveAvgPool3d(2),
    "AdaptiveLogSoftmaxWithLoss": lambda lib: lib.AdaptiveLogSoftmaxWithLoss(8, 12, [4, 8], head_bias=True),
    "AdaptiveMaxPool1d": lambda lib: lib.AdaptiveMaxPool1d(2),
    "AdaptiveMaxPool2d": lambda lib: lib.AdaptiveMaxPool2d(2),
    "AdaptiveMaxPool3d": lambda lib: lib.AdaptiveMaxPool3d(2),
    "AvgPool3d": lambda lib: lib.AvgPool3d(2),
    "CELU": lambda lib: lib.CELU(),
    "CTCLoss": lambda lib: lib.CTCLoss(),
    "ChannelShuffle": lambda lib: lib.ChannelShuffle(2),
    "CircularPad1d": lambda lib: lib.CircularPad1d(1),
    "CircularPad2d": lambda lib: lib.CircularPad2d(1),
    "CircularPad3d": lambda lib: lib.CircularPad3d(1),
    "ConstantPad1d": lambda lib: lib.ConstantPad1d(1, 0.5),
    "ConstantPad2d": lambda lib: lib.ConstantPad2d(1, 0.5),
    "ConstantPad3d": lambda lib: lib.ConstantPad3d(1, 0.5),
    "Container": lambda lib: lib.Container(fc=lib.Linear(2, 3)),
    "ConvTranspose3d": lambda lib: lib.ConvTranspose3d(2, 4, 2),
    "CosineEmbeddingLoss": lambda lib: lib.CosineEmbeddingLoss(),
    "CosineSimilarity": lambda lib: lib.CosineSimilarity(),
    "CrossMapLRN2d": lambda lib: lib.CrossMapLRN2d(3),
    "DataParallel": lambda lib: lib.DataParallel(lib.Linear(2, 3)),
    "EmbeddingBag": lambda lib: lib.EmbeddingBag(5, 3, mode="sum"),
    "FeatureAlphaDropout": lambda lib: lib.FeatureAlphaDropout(),
    "Fold": lambda lib: lib.Fold((4, 4), 2),
    "FractionalMaxPool2d": lambda lib: lib.FractionalMaxPool2d(2, output_ratio=0.5),
    "FractionalMaxPool3d": lambda lib: lib.FractionalMaxPool3d(2, output_ratio=0.5),
    "GLU": lambda lib: lib.GLU(),
    "GaussianNLLLoss": lambda lib: lib.GaussianNLLLoss(),
    "Hardshrink": lambda lib: lib.Hardshrink(),
    "Hardsigmoid": lambda lib: lib.Hardsigmoid(),
    "Hardswish": lambda lib: lib.Hardswish(),
    "HingeEmbeddingLoss": lambda lib: lib.HingeEmbeddingLoss(),
    "InstanceNorm1d": lambda lib: lib.InstanceNorm1d(3, affine=True, track_running_stats=True),
    "InstanceNorm2d": lambda lib: lib.InstanceNorm2d(3),
    "InstanceNorm3d": lambda lib: lib.InstanceNorm3d(3, affine=True),
    "LPPool1d": lambda lib: lib.LPPool1d(2, 2),
    "LPPool2d": lambda lib: lib.LPPool2d(2, 2),
    "LPPool3d": lambda lib: lib.LPPool3d(2, 2),
    "LinearCrossEntropyLoss": lambda lib: lib.LinearCrossEntropyLoss(4, 3, bias=True),
    "LocalResponseNorm": lambda lib: lib.LocalResponseNorm(3),
    "MarginRankingLoss": lambda lib: lib.MarginRankingLoss(),
    "MaxPool3d": lambda lib: lib.MaxPool3d(2),
    "MaxUnpool1d": lambda lib: lib.MaxUnpool1d(2),
    "MaxUnpool2d": lambda lib: lib.MaxUnpool2d(2),
    "MaxUnpool3d": lambda lib: lib.MaxUnpool3d(2),
    "MultiLabelMarginLoss": lambda lib: lib.MultiLabelMarginLoss(),
    "MultiLabelSoftMarginLoss": lambda lib: lib.MultiLabelSoftMarginLoss(),
    "MultiMarginLoss": lambda lib: lib.MultiMarginLoss(),
    "NLLLoss2d": lambda lib: lib.NLLLoss2d(),
    "PReLU": lambda lib: lib.PReLU(3),
    "PairwiseDistance": lambda lib: lib.PairwiseDistance(),
    "PixelShuffle": lambda lib: lib.PixelShuffle(2),
    "PixelUnshuffle": lambda lib: lib.PixelUnshuffle(2),
    "PoissonNLLLoss": lambda lib: lib.PoissonNLLLoss(),
    "RMSNorm": lambda lib: lib.RMSNorm(4),
    "RReLU": lambda lib: lib.RReLU(),
    "ReflectionPad1d": lambda lib: lib.ReflectionPad1d(1),
    "ReflectionPad2d": lambda lib: lib.ReflectionPad2d(1),
    "ReflectionPad3d": lambda lib: lib.ReflectionPad3d(1),
    "ReplicationPad1d": lambda lib: lib.ReplicationPad1d(1),
    "ReplicationPad2d": lambda lib: lib.ReplicationPad2d(1),
    "ReplicationPad3d": lambda lib: lib.ReplicationPad3d(1),
    "SELU": lambda lib: lib.SELU(),
    "SoftMarginLoss": lambda lib: lib.SoftMarginLoss(),
    "Softmax2d": lambda lib: lib.Softmax2d(),
    "Softmin": lambda lib: lib.Softmin(1),
    "Softshrink": lambda lib: lib.Softshrink(),
    "SyncBatchNorm": lambda lib: lib.SyncBatchNorm(3),
    "Tanhshrink": lambda lib: lib.Tanhshrink(),
    "Threshold": lambda lib: lib.Threshold(0.1, 2.0),
    "Transformer": lambda lib: lib.Transformer(8, 2, 1, 1, dim_feedforward=16, dropout=0.0),
    "TransformerDecoder": lambda lib: lib.TransformerDecoder(
        lib.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2, norm=lib.LayerNorm(8)
    ),
    "TransformerDecoderLayer": lambda lib: lib.TransformerDecoderLayer(8, 2, 16, dropout=0.0),
    "TripletMarginLoss": lambda lib: lib.TripletMarginLoss(),
    "TripletMarginWithDistanceLoss": lambda lib: lib.TripletMarginWithDistanceLoss(),
    "Unfold": lambda lib: lib.Unfold(2),
    "Upsample": lambda lib: lib.Upsample(scale_factor=2),
    "UpsamplingBilinear2d": lambda lib: lib.UpsamplingBilinear2d(scale_factor=2),
    "UpsamplingNearest2d": lambda lib: lib.UpsamplingNearest2d(scale_factor=2),
    "ZeroPad1d": lambda lib: lib.ZeroPad1d(1),
    "ZeroPad2d": lambda lib: lib.ZeroPad2d(1),
    "ZeroPad3d": lambda lib: lib.ZeroPad3d(1),
}
ABSTRACT = {"Module", "RNNBase", "RNNCellBase", "LazyModuleMixin"}
# Lazy modules hold uninitialized parameters in torch until their first call (nothing to save)
LAZY = {name for name in vars(nn) if name.startswith("Lazy") and name != "LazyModuleMixin"}


def lib_randn(lib, *shape):
    return (tensor if lib is nn else __import__("torch")).randn(*shape)


def test_the_table_covers_every_nn_module():
    classes = {name for name, obj in vars(nn).items() if inspect.isclass(obj) and issubclass(obj, nn.Module)}
    assert classes - ABSTRACT - LAZY == set(MODULES)


def _bits(t) -> bytes:
    return np.ascontiguousarray(t.detach().numpy()).tobytes()


def _randomise(torch, module) -> None:
    # Non-default buffers too (running stats), so that a missed copy shows.
    with torch.no_grad():
        for value in module.state_dict().values():
            if value.is_floating_point():
                value.copy_(torch.randn(value.shape))
            else:
                value.fill_(7)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_state_dict_both_ways(tmp_path, torch, name):
    theirs = MODULES[name](torch.nn)
    _randomise(torch, theirs)
    torch.save(theirs.state_dict(), tmp_path / "torch.pt")
    ours = MODULES[name](nn)
    result = ours.load_state_dict(tensor.load(tmp_path / "torch.pt"))
    assert (result.missing_keys, result.unexpected_keys) == ([], [])
    expected = theirs.state_dict()
    assert list(ours.state_dict()) == list(expected)
    for key, value in ours.state_dict().items():
        assert _bits(value) == _bits(expected[key]), key

    tensor.save(ours.state_dict(), tmp_path / "ours.pt", format="torch")
    fresh = MODULES[name](torch.nn)
    fresh.load_state_dict(torch.load(tmp_path / "ours.pt", weights_only=True))
    for key, value in fresh.state_dict().items():
        assert _bits(value) == _bits(expected[key]), key


def _adam_step(lib, model) -> None:
    rng = np.random.default_rng(0)
    x = (tensor if lib is nn else __import__("torch")).from_numpy(rng.standard_normal((5, 3)).astype(np.float32))
    model(x).pow(2).sum().backward()


def test_adam_state_dict_both_ways(tmp_path, torch):
    theirs = torch.nn.Linear(3, 2)
    their_opt = torch.optim.Adam(theirs.parameters(), lr=0.01, betas=(0.8, 0.9))
    _adam_step(torch.nn, theirs)
    their_opt.step()
    torch.save(their_opt.state_dict(), tmp_path / "torch_adam.pt")

    ours = nn.Linear(3, 2)
    our_opt = nn.optim.Adam(ours.parameters(), lr=0.5)
    our_opt.load_state_dict(tensor.load(tmp_path / "torch_adam.pt"))
    assert our_opt.param_groups[0]["lr"] == 0.01 and our_opt.param_groups[0]["betas"] == (0.8, 0.9)
    expected = their_opt.state_dict()["state"]
    mine = our_opt.state_dict()["state"]
    for index, state in expected.items():
        for key in ("exp_avg", "exp_avg_sq"):
            assert _bits(mine[index][key]) == _bits(state[key])
        assert float(mine[index]["step"]) == float(state["step"]) == 1.0

    tensor.save(our_opt.state_dict(), tmp_path / "ours_adam.pt", format="torch")
    back = torch.optim.Adam(torch.nn.Linear(3, 2).parameters())
    back.load_state_dict(torch.load(tmp_path / "ours_adam.pt", weights_only=True))
    assert back.state_dict()["param_groups"][0]["lr"] == 0.01
    for index, state in expected.items():
        for key in ("exp_avg", "exp_avg_sq"):
            assert _bits(back.state_dict()["state"][index][key]) == _bits(state[key])
