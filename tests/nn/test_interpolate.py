"""F.interpolate / nn.Upsample (every mode, sizes and scale factors, align_corners), pixel and
channel shuffles, affine_grid and grid_sample against torch: values and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close
from tests.nn.fn_oracle import check_fn

RNG = np.random.default_rng(0)
X1, X2, X3 = RNG.standard_normal((2, 3, 7)), RNG.standard_normal((2, 3, 5, 7)), RNG.standard_normal((1, 2, 3, 4, 5))

CASES = [
    (X1, "nearest", None, {"size": 11}),
    (X1, "nearest-exact", None, {"scale_factor": 0.6}),
    (X1, "linear", False, {"size": 4}),
    (X1, "linear", True, {"scale_factor": 2.5}),
    (X1, "area", None, {"size": 3}),
    (X2, "nearest", None, {"scale_factor": (2, 0.5)}),
    (X2, "bilinear", False, {"size": (8, 4)}),
    (X2, "bilinear", True, {"scale_factor": 1.7}),
    (X2, "bicubic", False, {"size": (9, 6)}),
    (X2, "bicubic", True, {"scale_factor": (0.6, 1.5)}),
    (X2, "area", None, {"size": (2, 3)}),
    (X3, "nearest", None, {"size": (4, 2, 7)}),
    (X3, "trilinear", False, {"scale_factor": 1.5}),
    (X3, "trilinear", True, {"size": (2, 5, 3)}),
    (X3, "area", None, {"size": (1, 2, 3)}),
]


@pytest.mark.parametrize("x, mode, align, kwargs", CASES, ids=[f"{c[0].ndim}d-{c[1]}-{c[2]}-{c[3]}" for c in CASES])
def test_interpolate_matches_torch(x, mode, align, kwargs, torch):
    check_fn(
        lambda t: F.interpolate(t, mode=mode, align_corners=align, **kwargs),
        lambda t: torch.nn.functional.interpolate(t, mode=mode, align_corners=align, **kwargs),
        torch,
        x,
    )


@pytest.mark.parametrize(
    "layer, args",
    [
        ("Upsample", {"scale_factor": 2, "mode": "bilinear"}),
        ("Upsample", {"size": (3, 9), "mode": "bicubic"}),
        ("UpsamplingNearest2d", {"scale_factor": 3}),
        ("UpsamplingBilinear2d", {"size": (6, 8)}),
    ],
)
def test_upsample_layers_match_torch(layer, args, torch):
    check_fn(getattr(nn, layer)(**args), getattr(torch.nn, layer)(**args), torch, X2)


@pytest.mark.parametrize(
    "layer, arg, shape",
    [
        ("PixelShuffle", 2, (2, 8, 3, 4)),
        ("PixelShuffle", 3, (9, 2, 2)),
        ("PixelUnshuffle", 2, (2, 3, 4, 6)),
        ("ChannelShuffle", 3, (2, 6, 2, 2)),
    ],
)
def test_shuffles_match_torch(layer, arg, shape, torch):
    check_fn(getattr(nn, layer)(arg), getattr(torch.nn, layer)(arg), torch, RNG.standard_normal(shape))


@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_matches_torch(align, torch):
    check_fn(
        lambda t: F.affine_grid(t, (2, 3, 4, 6), align_corners=align),
        lambda t: torch.nn.functional.affine_grid(t, (2, 3, 4, 6), align_corners=align),
        torch,
        RNG.standard_normal((2, 2, 3)),
    )
    check_fn(
        lambda t: F.affine_grid(t, (1, 2, 3, 4, 5), align_corners=align),
        lambda t: torch.nn.functional.affine_grid(t, (1, 2, 3, 4, 5), align_corners=align),
        torch,
        RNG.standard_normal((1, 3, 4)),
    )


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_matches_torch(mode, padding_mode, align, torch):
    grid = RNG.uniform(-1.4, 1.4, (2, 4, 3, 2))
    check_fn(
        lambda x, g: F.grid_sample(x, g, mode, padding_mode, align),
        lambda x, g: torch.nn.functional.grid_sample(x, g, mode, padding_mode, align),
        torch,
        X2,
        grid,
        n_grad=1 if mode == "nearest" else 2,
    )


def test_errors():
    x = tensor.zeros(1, 1, 4, 4)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x, size=2, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, size=2, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 4D input, but linear mode needs 3D input"):
        F.interpolate(x, size=2, mode="linear")
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        F.pixel_shuffle(tensor.zeros(1, 3, 2, 2), 2)
    with pytest.raises(NotImplementedError, match="Unsupported interpolation mode 'foo'"):
        F.interpolate(x, size=3, mode="foo")


@pytest.mark.parametrize("shape, kwargs", [
    ((1, 1, 1), {"scale_factor": 0.7}),
    ((1, 1, 1), {"scale_factor": 0.5, "recompute_scale_factor": True}),
    ((1, 1, 2, 2), {"size": (3, 0), "mode": "bilinear"}),
    ((1, 1, 0), {"size": 2}),
])
def test_empty_spatial_sizes_are_refused_as_torch(shape, kwargs, torch):
    message = "Input and output sizes should be greater than 0"
    with pytest.raises(RuntimeError, match=message):
        torch.nn.functional.interpolate(torch.ones(shape), **kwargs)
    with pytest.raises(RuntimeError, match=message):
        F.interpolate(tensor.ones(*shape), **kwargs)
    assert F.interpolate(tensor.ones(1, 1, 1), size=0, mode="area").shape == (1, 1, 0)


@pytest.mark.parametrize("input_grad", [False, True])
def test_nearest_grid_sample_gives_the_grid_a_zero_gradient_as_torch(input_grad):
    grid = tensor.tensor([[[[0.2, -0.4], [-3.0, 0.5]]]], requires_grad=True)
    x = tensor.ones(1, 1, 2, 2, requires_grad=input_grad)
    F.grid_sample(x, grid, mode="nearest", align_corners=False).sum().backward()
    assert grid.grad is not None and grid.grad.tolist() == [[[[0.0, 0.0], [0.0, 0.0]]]]


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "reflection"])
def test_grid_sample_3d_matches_torch(mode, padding_mode, torch):
    grid = RNG.uniform(-1.3, 1.3, (1, 3, 2, 4, 3))
    check_fn(
        lambda x, g: F.grid_sample(x, g, mode, padding_mode, True),
        lambda x, g: torch.nn.functional.grid_sample(x, g, mode, padding_mode, True),
        torch,
        X3,
        grid,
        n_grad=2 if mode == "bilinear" else 1,
    )


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("kwargs", [{"size": (2, 3)}, {"size": (9, 4)}, {"scale_factor": 0.4}])
def test_antialias_matches_torch(mode, align, kwargs, torch):
    x = RNG.standard_normal((1, 2, 11, 13))
    check_fn(
        lambda t: F.interpolate(t, mode=mode, align_corners=align, antialias=True, **kwargs),
        lambda t: torch.nn.functional.interpolate(t, mode=mode, align_corners=align, antialias=True, **kwargs),
        torch,
        x,
    )


@pytest.mark.parametrize("mode, antialias, align", [
    ("nearest", False, None), ("bilinear", False, None), ("bilinear", True, None), ("bilinear", False, True),
    ("bicubic", False, None), ("bicubic", True, False),
])
@pytest.mark.parametrize("size", [(3, 9), (12, 13)])
def test_uint8_images_resize_as_torch(mode, antialias, align, size, torch):
    x = RNG.integers(0, 256, (2, 3, 6, 7)).astype("uint8")
    ours = F.interpolate(tensor.tensor(x), size=size, mode=mode, antialias=antialias, align_corners=align)
    theirs = torch.nn.functional.interpolate(
        torch.from_numpy(x), size=size, mode=mode, antialias=antialias, align_corners=align
    )
    assert ours.dtype is tensor.uint8
    # PyTorch's fixed-point weights may round the odd pixel the other way.
    assert np.abs(ours.numpy().astype(int) - theirs.numpy().astype(int)).max() <= 1


@pytest.mark.parametrize("dtype, mode, shape", [
    (tensor.uint8, "linear", (1, 2, 5)), (tensor.uint8, "area", (1, 1, 4, 4)), (tensor.int64, "nearest", (1, 1, 4, 4)),
])
def test_integer_inputs_torch_cannot_resize_are_refused(dtype, mode, shape):
    with pytest.raises(NotImplementedError, match="not implemented for"):
        F.interpolate(tensor.zeros(*shape, dtype=dtype), scale_factor=2, mode=mode)


@pytest.mark.parametrize("mode", ["nearest", "area"])
def test_antialias_with_another_mode_is_a_value_error(mode):
    with pytest.raises(ValueError, match="Anti-alias option is restricted"):
        F.interpolate(tensor.zeros(1, 1, 4, 4), size=3, mode=mode, antialias=True)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_with_nan_in_the_grid_matches_torch(mode, padding_mode, torch):
    x = RNG.standard_normal((1, 2, 3, 4))
    grid = RNG.uniform(-1.3, 1.3, (1, 2, 3, 2))
    grid[0, 0, 0, 0] = grid[0, 1, 1, 1] = np.nan
    grid[0, 1, 2] = np.nan
    ours = F.grid_sample(tensor.tensor(x), tensor.tensor(grid), mode, padding_mode, False)
    theirs = torch.nn.functional.grid_sample(torch.from_numpy(x), torch.from_numpy(grid), mode, padding_mode, False)
    assert_close(ours, theirs.numpy())


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_of_a_one_pixel_reflection_gets_a_zero_gradient(mode):
    x = tensor.tensor(RNG.standard_normal((1, 1, 1, 1)), requires_grad=True)
    grid = tensor.tensor([[[[0.3, -0.7]]]], dtype=tensor.float64, requires_grad=True)
    F.grid_sample(x, grid, mode, "reflection", True).sum().backward()
    assert_close(grid.grad, np.zeros((1, 1, 1, 2)))


@pytest.mark.parametrize("call, error, message", [
    (lambda: F.pixel_shuffle(tensor.zeros(1, 4, 2, 2), 0), RuntimeError, "positive upscale_factor"),
    (lambda: F.pixel_unshuffle(tensor.zeros(1, 4, 2, 2), 0), RuntimeError, "positive downscale_factor"),
    (lambda: F.affine_grid(tensor.zeros(1, 2, 3), [2, 1, 2, 2]), RuntimeError, "batch of 2"),
    (lambda: F.affine_grid(tensor.zeros(1, 2, 3), [1, 1, 2]), NotImplementedError, "only supports 4D and 5D"),
    (lambda: F.affine_grid(tensor.zeros(1, 2, 3, dtype=tensor.int64), [1, 1, 2, 2]), ValueError, "floating point"),
    (lambda: F.grid_sample(tensor.zeros(1, 1, 2, 2), tensor.zeros(1, 1, 1, 2, dtype=tensor.float64)), RuntimeError,
     "same dtype"),
])
def test_error_types_match_torch(call, error, message):
    with pytest.raises(error, match=message):
        call()
